// Unary math: trigonometric, hyperbolic, exp/log, rounding, sign. One struct per op,
// run by the shared unary kernel (elementwise/unary.h).
#include <type_traits>

#include "elementwise/unary.h"

namespace kiln::ops {
namespace {

// Float-only op with a one-expression body; kFlops counts libm calls as a few flops.
#define KILN_FLOAT_UNARY(NAME, FLOPS, EXPR)                                   \
  struct NAME##Op {                                                           \
    static constexpr double kFlops = FLOPS;                                   \
    static constexpr bool kIntegers = false;                                  \
    template <typename T>                                                     \
    static T apply(T x, const ElemParams&) {                                 \
      return EXPR;                                                            \
    }                                                                         \
  };

KILN_FLOAT_UNARY(Acos, 8, std::acos(x))
KILN_FLOAT_UNARY(Acosh, 8, std::acosh(x))
KILN_FLOAT_UNARY(Asin, 8, std::asin(x))
KILN_FLOAT_UNARY(Asinh, 8, std::asinh(x))
KILN_FLOAT_UNARY(Atan, 8, std::atan(x))
KILN_FLOAT_UNARY(Atanh, 8, std::atanh(x))
KILN_FLOAT_UNARY(Ceil, 1, std::ceil(x))
KILN_FLOAT_UNARY(Cos, 8, std::cos(x))
KILN_FLOAT_UNARY(Cosh, 8, std::cosh(x))
KILN_FLOAT_UNARY(Erf, 8, std::erf(x))
KILN_FLOAT_UNARY(Exp, 4, std::exp(x))
KILN_FLOAT_UNARY(Floor, 1, std::floor(x))
KILN_FLOAT_UNARY(Log, 4, std::log(x))
KILN_FLOAT_UNARY(Reciprocal, 1, T(1) / x)
// Round half to even, as ONNX specifies (nearbyint under the default rounding mode).
KILN_FLOAT_UNARY(Round, 1, std::nearbyint(x))
KILN_FLOAT_UNARY(Sin, 8, std::sin(x))
KILN_FLOAT_UNARY(Sinh, 8, std::sinh(x))
KILN_FLOAT_UNARY(Sqrt, 4, std::sqrt(x))
KILN_FLOAT_UNARY(Tan, 8, std::tan(x))
KILN_FLOAT_UNARY(Tanh, 4, std::tanh(x))
#undef KILN_FLOAT_UNARY

// Negation and absolute value wrap on the most negative integer (two's complement), as
// hardware does, instead of the undefined behaviour of -INT_MIN in C++.
template <typename T>
T wrap_negate(T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(0) - static_cast<U>(x));
  } else {
    return -x;
  }
}

struct AbsOp {
  static constexpr double kFlops = 1;
  static constexpr bool kIntegers = true;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? wrap_negate(x) : x;
  }
};

struct NegOp {
  static constexpr double kFlops = 1;
  static constexpr bool kIntegers = true;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    return wrap_negate(x);
  }
};

struct SignOp {
  static constexpr double kFlops = 1;
  static constexpr bool kIntegers = true;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x)) return x;
    return x > T(0) ? T(1) : (x < T(0) ? static_cast<T>(-1) : T(0));
  }
};

// IsNaN / IsInf: float in, bool out.
template <typename T>
bool is_inf_dir(T v, bool neg, bool pos) {
  return std::isinf(v) && ((v < 0 && neg) || (v > 0 && pos));
}

void isnan_isinf_kernel(KernelContext& c) {
  const Tensor& x0 = c.input(0);
  Tensor x = (x0.dtype() == DType::f16 || x0.dtype() == DType::bf16) ? to_f32(x0) : x0;
  Tensor& y = c.alloc_output(0, DType::boolean, x.dims());
  bool* out = y.data<bool>();
  const bool is_nan = c.node().op == "IsNaN";
  const bool neg = c.node().attr_i("detect_negative", 1) != 0;
  const bool pos = c.node().attr_i("detect_positive", 1) != 0;
  KILN_DISPATCH_FLOAT(x.dtype(), c.node().describe(), {
    const T* in = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = is_nan ? std::isnan(in[i]) : is_inf_dir(in[i], neg, pos);
  });
}

void infer_float_to_bool(InferContext& c) {
  if (!dtype_is_float(c.in_dtype(0))) c.fail(str_cat("input must be a float tensor, got ", dtype_name(c.in_dtype(0))));
  c.set_output(0, DType::boolean, c.in_shape(0));
}

void not_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  if (x.dtype() != DType::boolean) c.fail(str_cat("input must be bool, got ", dtype_name(x.dtype())));
  Tensor& y = c.alloc_output(0, DType::boolean, x.dims());
  const bool* in = x.data<bool>();
  bool* out = y.data<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = !in[i];
}

void infer_bool_unary(InferContext& c) {
  if (c.in_dtype(0) != DType::boolean && c.in_dtype(0) != DType::undefined)
    c.fail(str_cat("input must be bool, got ", dtype_name(c.in_dtype(0))));
  c.set_output(0, DType::boolean, c.in_shape(0));
}

}  // namespace

OpDef def_Abs() { return unary_def<AbsOp>("Abs", 1, "y = |x|"); }
OpDef def_Acos() { return unary_def<AcosOp>("Acos", 7, "y = acos(x)"); }
OpDef def_Acosh() { return unary_def<AcoshOp>("Acosh", 9, "y = acosh(x)"); }
OpDef def_Asin() { return unary_def<AsinOp>("Asin", 7, "y = asin(x)"); }
OpDef def_Asinh() { return unary_def<AsinhOp>("Asinh", 9, "y = asinh(x)"); }
OpDef def_Atan() { return unary_def<AtanOp>("Atan", 7, "y = atan(x)"); }
OpDef def_Atanh() { return unary_def<AtanhOp>("Atanh", 9, "y = atanh(x)"); }
OpDef def_Ceil() { return unary_def<CeilOp>("Ceil", 1, "y = ceil(x)"); }
OpDef def_Cos() { return unary_def<CosOp>("Cos", 7, "y = cos(x)"); }
OpDef def_Cosh() { return unary_def<CoshOp>("Cosh", 9, "y = cosh(x)"); }
OpDef def_Erf() { return unary_def<ErfOp>("Erf", 9, "y = erf(x)"); }
OpDef def_Exp() { return unary_def<ExpOp>("Exp", 1, "y = e^x"); }
OpDef def_Floor() { return unary_def<FloorOp>("Floor", 1, "y = floor(x)"); }
OpDef def_Log() { return unary_def<LogOp>("Log", 1, "y = ln(x)"); }
OpDef def_Neg() { return unary_def<NegOp>("Neg", 1, "y = -x"); }
OpDef def_Reciprocal() { return unary_def<ReciprocalOp>("Reciprocal", 1, "y = 1/x"); }
OpDef def_Round() { return unary_def<RoundOp>("Round", 11, "y = x rounded to nearest, ties to even"); }
OpDef def_Sign() { return unary_def<SignOp>("Sign", 9, "y = -1, 0 or 1 by the sign of x"); }
OpDef def_Sin() { return unary_def<SinOp>("Sin", 7, "y = sin(x)"); }
OpDef def_Sinh() { return unary_def<SinhOp>("Sinh", 9, "y = sinh(x)"); }
OpDef def_Sqrt() { return unary_def<SqrtOp>("Sqrt", 1, "y = sqrt(x)"); }
OpDef def_Tan() { return unary_def<TanOp>("Tan", 7, "y = tan(x)"); }
OpDef def_Tanh() { return unary_def<TanhOp>("Tanh", 1, "y = tanh(x)"); }

OpDef def_IsNaN() {
  return {.name = "IsNaN", .since = 9, .min_inputs = 1, .max_inputs = 1, .infer = infer_float_to_bool,
          .kernel = isnan_isinf_kernel, .doc = "y = x is NaN"};
}
OpDef def_IsInf() {
  return {.name = "IsInf", .since = 10, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"detect_negative", AttrKind::Int}, {"detect_positive", AttrKind::Int}},
          .infer = infer_float_to_bool, .kernel = isnan_isinf_kernel, .doc = "y = x is +inf and/or -inf"};
}
OpDef def_Not() {
  return {.name = "Not", .since = 1, .min_inputs = 1, .max_inputs = 1, .infer = infer_bool_unary,
          .kernel = not_kernel, .doc = "y = logical not x"};
}

}  // namespace kiln::ops

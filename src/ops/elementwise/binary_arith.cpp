// Binary arithmetic: Add, Sub, Mul, Div, Mod, BitShift, Pow, PRelu.
#include <cmath>

#include "elementwise/binary.h"

namespace kiln::ops {

void infer_binary_same_dtype(InferContext& c) {
  if (c.in_dtype(0) != DType::undefined && c.in_dtype(1) != DType::undefined && c.in_dtype(0) != c.in_dtype(1))
    c.fail(str_cat("inputs must share a dtype, got ", dtype_name(c.in_dtype(0)), " and ", dtype_name(c.in_dtype(1))));
  infer_broadcast(c);
}

namespace {

struct AddOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    return add_wrapping(a, b);
  }
};

struct SubOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    if constexpr (std::is_integral_v<T>) return wrap_int(a, b, [](uint64_t x, uint64_t y) { return x - y; });
    else return a - b;
  }
};

struct MulOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    if constexpr (std::is_integral_v<T>) return wrap_int(a, b, [](uint64_t x, uint64_t y) { return x * y; });
    else return a * b;
  }
};

// Integer division by zero is undefined in C++: refuse it before the loop runs.
template <typename T>
void check_no_zero_divisor(const Tensor& b, const KernelContext& c) {
  if constexpr (std::is_integral_v<T>) {
    const T* d = b.data<T>();
    for (int64_t i = 0; i < b.numel(); ++i)
      if (d[i] == T(0)) c.fail("integer division by zero");
  }
}

// Integer division truncates toward zero (ONNX, C++); MIN / -1 wraps to MIN.
struct DivOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static void check(const Tensor& b, const KernelContext& c) {
    check_no_zero_divisor<T>(b, c);
  }
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      if (b == T(-1)) return wrap_int(a, T(0), [](uint64_t x, uint64_t) { return uint64_t{0} - x; });
    return a / b;
  }
};

// fmod = 1: C fmod (sign of the dividend). fmod = 0: Python % (sign of the divisor), integers only.
struct ModOp {
  static constexpr bool kFloats = true, kIntegers = true;
  static ElemParams params(const Node& n) {
    ElemParams p;
    p.mode = n.attr_i("fmod", 0);
    KILN_CHECK(p.mode == 0 || p.mode == 1, n.describe(), ": attribute fmod must be 0 or 1, got ", p.mode);
    return p;
  }
  template <typename T>
  static void check(const Tensor& b, const KernelContext& c) {
    if constexpr (std::is_floating_point_v<T>) {
      if (elem_params<ModOp>(c.node()).mode != 1) c.fail("fmod must be 1 for floating-point inputs");
    }
    check_no_zero_divisor<T>(b, c);
  }
  template <typename T>
  static T apply(T a, T b, const ElemParams& p) {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);  // MIN % -1 would trap
      T r = static_cast<T>(a % b);
      if constexpr (std::is_signed_v<T>)
        if (p.mode == 0 && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    }
  }
};

// BitShift on unsigned integers; shifting by the bit width or more gives 0.
struct BitShiftOp {
  static constexpr bool kFloats = false, kIntegers = true;
  static ElemParams params(const Node& n) {
    std::string d = n.attr_s("direction", "");
    KILN_CHECK(d == "LEFT" || d == "RIGHT", n.describe(), ": attribute direction must be \"LEFT\" or \"RIGHT\", got \"",
               d, "\"");
    ElemParams p;
    p.mode = d == "LEFT" ? 0 : 1;
    return p;
  }
  template <typename T>
  static void check(const Tensor&, const KernelContext& c) {
    if constexpr (std::is_signed_v<T>) c.fail("BitShift takes unsigned integers only");
  }
  template <typename T>
  static T apply(T a, T b, const ElemParams& p) {
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<uint64_t>(b) >= sizeof(T) * 8) return T(0);
      return p.mode == 0 ? static_cast<T>(a << b) : static_cast<T>(a >> b);
    } else {
      return a;  // unreachable: check() refuses signed types
    }
  }
};

// PRelu: y = x < 0 ? slope * x : x, slope broadcasting to x's shape (unidirectionally).
struct PReluOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T x, T s, const ElemParams&) {
    if constexpr (std::is_integral_v<T>)
      return x < T(0) ? wrap_int(x, s, [](uint64_t a, uint64_t b) { return a * b; }) : x;
    else return x < T(0) ? s * x : x;
  }
};

void prelu_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& s = c.input(1);
  if (broadcast_dims(x.dims(), s.dims(), c.node()) != x.dims())
    c.fail(str_cat("slope ", dims_str(s.dims()), " does not broadcast to X ", dims_str(x.dims())));
  binary_kernel<PReluOp>(c);
}

void infer_prelu(InferContext& c) {
  infer_binary_same_dtype(c);
  const Shape& xs = c.in_shape(0);
  if (xs.rank_known && c.in_shape(1).rank_known && c.in_shape(1).rank() > xs.rank())
    c.fail(str_cat("slope ", c.in_shape(1).str(), " has a higher rank than X ", xs.str()));
  c.set_output(0, c.in_dtype(0), xs);
}

// Pow: base and exponent may differ in dtype; the result has the base's dtype.
void pow_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  DType dt = a.dtype();
  if (dt == DType::f32 && b.dtype() == DType::f32) {
    BroadcastPlan plan = plan_broadcast({&a.dims(), &b.dims()}, c.node());
    Tensor& out = c.alloc_output(0, dt, plan.out_dims);
    // x^2 is common (decomposed LayerNorm); x*x is exactly what a correctly rounded pow gives.
    if (b.numel() == 1 && b.data<float>()[0] == 2.0f) {
      broadcast_binary(plan, a.data<float>(), b.data<float>(), out.data<float>(), c.threads(),
                       [](float x, float) { return x * x; });
    } else {
      broadcast_binary(plan, a.data<float>(), b.data<float>(), out.data<float>(), c.threads(),
                       [](float x, float y) { return std::pow(x, y); });
    }
    return;
  }
  if (!dtype_is_float(dt) && !dtype_is_integer(dt)) c.fail(str_cat("unsupported base dtype ", dtype_name(dt)));
  if (!dtype_is_float(b.dtype()) && !dtype_is_integer(b.dtype()))
    c.fail(str_cat("unsupported exponent dtype ", dtype_name(b.dtype())));
  // Mixed or other dtypes: compute in double, convert back to the base's dtype.
  Tensor ad = a.cast(DType::f64), bd = b.cast(DType::f64);
  BroadcastPlan plan = plan_broadcast({&ad.dims(), &bd.dims()}, c.node());
  Tensor out(DType::f64, plan.out_dims);
  broadcast_binary(plan, ad.data<double>(), bd.data<double>(), out.data<double>(), c.threads(),
                   [](double x, double y) { return std::pow(x, y); });
  c.set_output(0, dt == DType::f64 ? out : out.cast(dt));
}

void infer_pow(InferContext& c) { infer_broadcast(c); }

}  // namespace

OpDef def_Add() { return binary_def<AddOp>("Add", 1, "c = a + b (broadcasting)"); }
OpDef def_Sub() { return binary_def<SubOp>("Sub", 1, "c = a - b (broadcasting)"); }
OpDef def_Mul() { return binary_def<MulOp>("Mul", 1, "c = a * b (broadcasting)"); }
OpDef def_Div() { return binary_def<DivOp>("Div", 1, "c = a / b (broadcasting; integers truncate toward zero)"); }
OpDef def_Mod() {
  return binary_def<ModOp>("Mod", 10, "c = a mod b (fmod=0: sign of b, fmod=1: sign of a)", {{"fmod", AttrKind::Int}});
}
OpDef def_BitShift() {
  return binary_def<BitShiftOp>("BitShift", 11, "c = a << b or a >> b (unsigned integers)",
                                {{"direction", AttrKind::String, true}});
}
OpDef def_PRelu() {
  return {.name = "PRelu", .since = 1, .min_inputs = 2, .max_inputs = 2, .infer = infer_prelu,
          .cost = cost_elementwise, .kernel = prelu_kernel, .doc = "y = x < 0 ? slope x : x (slope broadcasts to x)"};
}
OpDef def_Pow() {
  return {.name = "Pow", .since = 1, .min_inputs = 2, .max_inputs = 2, .infer = infer_pow,
          .cost = [](const CostContext& c) {
            Cost k = cost_elementwise(c);
            k.flops *= 8;  // pow is exp(y log x): a few flops each
            return k;
          },
          .kernel = pow_kernel, .doc = "z = x^y (broadcasting; dtype of x)"};
}

}  // namespace kiln::ops

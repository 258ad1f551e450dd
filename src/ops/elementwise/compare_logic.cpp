// Comparisons (numeric or bool in, bool out; kiln/ops/compare.h) and logical And/Or/Xor (bool in,
// bool out).
#include "elementwise/binary.h"
#include "kiln/ops/compare.h"

namespace kiln::ops {
namespace {

struct AndOp {
  template <typename T>
  static bool apply(T a, T b) { return a && b; }
};
struct OrOp {
  template <typename T>
  static bool apply(T a, T b) { return a || b; }
};
struct XorOp {
  template <typename T>
  static bool apply(T a, T b) { return a != b; }
};

template <typename Op, typename T>
Tensor logic_typed(const Tensor& a, const Tensor& b, const KernelContext& c) {
  BroadcastPlan plan = plan_broadcast({&a.dims(), &b.dims()}, c.node());
  Tensor out(DType::boolean, plan.out_dims);
  broadcast_binary(plan, a.data<T>(), b.data<T>(), out.data<bool>(), c.threads(),
                   [](T x, T y) { return Op::template apply<T>(x, y); });
  return out;
}

template <Comparison kCmp>
void compare_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  check_same_dtype(c, a, b);
  const bool half = is_half(a.dtype());
  if (!half && !compare_takes(a.dtype())) c.fail(str_cat("unsupported dtype ", dtype_name(a.dtype())));
  const Tensor fa = half ? to_f32(a) : Tensor(), fb = half ? to_f32(b) : Tensor();
  const Tensor& x = half ? fa : a;
  const Tensor& y = half ? fb : b;
  const BroadcastPlan plan = plan_broadcast({&x.dims(), &y.dims()}, c.node());
  Tensor out(DType::boolean, plan.out_dims);
  compare(kCmp, plan, x.dtype(), x.raw(), y.raw(), out.data<bool>(), c.threads());
  c.set_output(0, std::move(out));
}

template <typename Op>
void logic_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  if (a.dtype() != DType::boolean || b.dtype() != DType::boolean)
    c.fail(str_cat("inputs must be bool, got ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype())));
  c.set_output(0, logic_typed<Op, bool>(a, b, c));
}

void infer_compare(InferContext& c) {
  if (c.in_dtype(0) != DType::undefined && c.in_dtype(1) != DType::undefined && c.in_dtype(0) != c.in_dtype(1))
    c.fail(str_cat("inputs must share a dtype, got ", dtype_name(c.in_dtype(0)), " and ", dtype_name(c.in_dtype(1))));
  infer_broadcast_bool(c);
}

void infer_logic(InferContext& c) {
  for (size_t i = 0; i < 2; ++i)
    if (c.in_dtype(i) != DType::boolean && c.in_dtype(i) != DType::undefined)
      c.fail(str_cat("input ", i, " must be bool, got ", dtype_name(c.in_dtype(i))));
  infer_broadcast_bool(c);
}

OpDef bool_binary_def(std::string_view name, int64_t since, InferFn infer, KernelFn kernel, std::string_view doc) {
  return {.name = name, .since = since, .min_inputs = 2, .max_inputs = 2, .infer = infer,
          .cost = cost_elementwise, .kernel = kernel, .doc = doc};
}

}  // namespace

std::optional<Comparison> comparison_of(std::string_view op) {
  if (op == "Equal") return Comparison::Equal;
  if (op == "Less") return Comparison::Less;
  if (op == "LessOrEqual") return Comparison::LessOrEqual;
  if (op == "Greater") return Comparison::Greater;
  if (op == "GreaterOrEqual") return Comparison::GreaterOrEqual;
  return std::nullopt;
}

bool compare_takes(DType dtype) {
  return dtype == DType::boolean || dtype == DType::f32 || dtype == DType::f64 || dtype_is_integer(dtype);
}

namespace {
template <typename T>
void compare_typed(Comparison cmp, const BroadcastPlan& p, const T* a, const T* b, bool* out, int threads) {
  switch (cmp) {
    case Comparison::Equal: return broadcast_binary(p, a, b, out, threads, [](T x, T y) { return x == y; });
    case Comparison::Less: return broadcast_binary(p, a, b, out, threads, [](T x, T y) { return x < y; });
    case Comparison::LessOrEqual: return broadcast_binary(p, a, b, out, threads, [](T x, T y) { return x <= y; });
    case Comparison::Greater: return broadcast_binary(p, a, b, out, threads, [](T x, T y) { return x > y; });
    case Comparison::GreaterOrEqual:
      return broadcast_binary(p, a, b, out, threads, [](T x, T y) { return x >= y; });
  }
}
}  // namespace

void compare(Comparison cmp, const BroadcastPlan& p, DType dtype, const void* a, const void* b, bool* out,
             int threads) {
  switch (dtype) {
#define KILN_COMPARE_CASE(DT, CT)                                                                          \
  case DType::DT:                                                                                          \
    return compare_typed<CT>(cmp, p, static_cast<const CT*>(a), static_cast<const CT*>(b), out, threads);
    KILN_COMPARE_CASE(boolean, bool)
    KILN_COMPARE_CASE(f32, float)
    KILN_COMPARE_CASE(f64, double)
    KILN_COMPARE_CASE(i8, int8_t)
    KILN_COMPARE_CASE(u8, uint8_t)
    KILN_COMPARE_CASE(i16, int16_t)
    KILN_COMPARE_CASE(u16, uint16_t)
    KILN_COMPARE_CASE(i32, int32_t)
    KILN_COMPARE_CASE(u32, uint32_t)
    KILN_COMPARE_CASE(i64, int64_t)
    KILN_COMPARE_CASE(u64, uint64_t)
#undef KILN_COMPARE_CASE
    default: throw Error(str_cat("compare: unsupported dtype ", dtype_name(dtype)));
  }
}

OpDef def_Equal() { return bool_binary_def("Equal", 1, infer_compare, compare_kernel<Comparison::Equal>, "c = a == b"); }
OpDef def_Greater() { return bool_binary_def("Greater", 1, infer_compare, compare_kernel<Comparison::Greater>, "c = a > b"); }
OpDef def_GreaterOrEqual() {
  return bool_binary_def("GreaterOrEqual", 12, infer_compare, compare_kernel<Comparison::GreaterOrEqual>, "c = a >= b");
}
OpDef def_Less() { return bool_binary_def("Less", 1, infer_compare, compare_kernel<Comparison::Less>, "c = a < b"); }
OpDef def_LessOrEqual() {
  return bool_binary_def("LessOrEqual", 12, infer_compare, compare_kernel<Comparison::LessOrEqual>, "c = a <= b");
}
OpDef def_And() { return bool_binary_def("And", 1, infer_logic, logic_kernel<AndOp>, "c = a and b"); }
OpDef def_Or() { return bool_binary_def("Or", 1, infer_logic, logic_kernel<OrOp>, "c = a or b"); }
OpDef def_Xor() { return bool_binary_def("Xor", 1, infer_logic, logic_kernel<XorOp>, "c = a xor b"); }

}  // namespace kiln::ops

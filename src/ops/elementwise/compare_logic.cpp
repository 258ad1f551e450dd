// Comparisons (numeric or bool in, bool out) and logical And/Or/Xor (bool in, bool out).
#include "elementwise/binary.h"

namespace kiln::ops {
namespace {

struct EqualOp {
  template <typename T>
  static bool apply(T a, T b) { return a == b; }
};
struct GreaterOp {
  template <typename T>
  static bool apply(T a, T b) { return a > b; }
};
struct GreaterOrEqualOp {
  template <typename T>
  static bool apply(T a, T b) { return a >= b; }
};
struct LessOp {
  template <typename T>
  static bool apply(T a, T b) { return a < b; }
};
struct LessOrEqualOp {
  template <typename T>
  static bool apply(T a, T b) { return a <= b; }
};
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
Tensor compare_typed(const Tensor& a, const Tensor& b, const KernelContext& c) {
  BroadcastPlan plan = plan_broadcast({&a.dims(), &b.dims()}, c.node());
  Tensor out(DType::boolean, plan.out_dims);
  broadcast_binary(plan, a.data<T>(), b.data<T>(), out.data<bool>(), c.threads(),
                   [](T x, T y) { return Op::template apply<T>(x, y); });
  return out;
}

template <typename Op>
void compare_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  check_same_dtype(c, a, b);
  if (a.dtype() == DType::boolean) {
    c.set_output(0, compare_typed<Op, bool>(a, b, c));
  } else if (is_half(a.dtype())) {
    c.set_output(0, compare_typed<Op, float>(to_f32(a), to_f32(b), c));
  } else {
    dispatch_elem<true, true>(a.dtype(), c, [&](auto tag) {
      c.set_output(0, compare_typed<Op, decltype(tag)>(a, b, c));
    });
  }
}

template <typename Op>
void logic_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  if (a.dtype() != DType::boolean || b.dtype() != DType::boolean)
    c.fail(str_cat("inputs must be bool, got ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype())));
  c.set_output(0, compare_typed<Op, bool>(a, b, c));
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

OpDef def_Equal() { return bool_binary_def("Equal", 1, infer_compare, compare_kernel<EqualOp>, "c = a == b"); }
OpDef def_Greater() { return bool_binary_def("Greater", 1, infer_compare, compare_kernel<GreaterOp>, "c = a > b"); }
OpDef def_GreaterOrEqual() {
  return bool_binary_def("GreaterOrEqual", 12, infer_compare, compare_kernel<GreaterOrEqualOp>, "c = a >= b");
}
OpDef def_Less() { return bool_binary_def("Less", 1, infer_compare, compare_kernel<LessOp>, "c = a < b"); }
OpDef def_LessOrEqual() {
  return bool_binary_def("LessOrEqual", 12, infer_compare, compare_kernel<LessOrEqualOp>, "c = a <= b");
}
OpDef def_And() { return bool_binary_def("And", 1, infer_logic, logic_kernel<AndOp>, "c = a and b"); }
OpDef def_Or() { return bool_binary_def("Or", 1, infer_logic, logic_kernel<OrOp>, "c = a or b"); }
OpDef def_Xor() { return bool_binary_def("Xor", 1, infer_logic, logic_kernel<XorOp>, "c = a xor b"); }

}  // namespace kiln::ops

// Variadic elementwise ops with broadcasting over all inputs: Sum, Mean, Max, Min.
// They fold pairwise: out = op(op(op(x0, x1), x2), ...).
#include <cmath>

#include "elementwise/binary.h"

namespace kiln::ops {
namespace {

struct SumOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    return add_wrapping(a, b);
  }
};

// Max/Min propagate NaN (as numpy and PyTorch do) rather than depending on argument order.
struct MaxOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(b)) return b;
    return a < b ? b : a;
  }
};

struct MinOp {
  static constexpr bool kFloats = true, kIntegers = true;
  template <typename T>
  static T apply(T a, T b, const ElemParams&) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(b)) return b;
    return b < a ? b : a;
  }
};

template <typename Op>
Tensor fold_inputs(KernelContext& c) {
  const Tensor& first = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) check_same_dtype(c, first, c.input(i));
  const bool half = is_half(first.dtype());
  Tensor acc = half ? to_f32(first) : first;
  if (c.num_inputs() == 1) {
    // validates the dtype as the op would, and yields a fresh tensor
    dispatch_elem<Op::kFloats, Op::kIntegers>(acc.dtype(), c, [](auto) {});
    acc = acc.clone();
  }
  for (size_t i = 1; i < c.num_inputs(); ++i)
    acc = binary_apply<Op>(acc, half ? to_f32(c.input(i)) : c.input(i), c, ElemParams{});
  return acc;
}

template <typename Op>
void variadic_kernel(KernelContext& c) {
  DType dt = c.input(0).dtype();
  Tensor acc = fold_inputs<Op>(c);
  c.set_output(0, is_half(dt) ? from_f32(acc, dt) : acc);
}

void mean_kernel(KernelContext& c) {
  DType dt = c.input(0).dtype();
  if (!dtype_is_float(dt)) c.fail(str_cat("Mean takes float inputs, got ", dtype_name(dt)));
  Tensor acc = fold_inputs<SumOp>(c);
  const double n = static_cast<double>(c.num_inputs());
  KILN_DISPATCH_FLOAT(acc.dtype(), c.node().describe(), {
    T* p = acc.data<T>();
    for (int64_t i = 0; i < acc.numel(); ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(n));
  });
  c.set_output(0, is_half(dt) ? from_f32(acc, dt) : acc);
}

void infer_variadic(InferContext& c) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.has_input(i) && c.in_dtype(i) != c.in_dtype(0) && c.in_dtype(i) != DType::undefined &&
        c.in_dtype(0) != DType::undefined)
      c.fail(str_cat("inputs must share a dtype, got ", dtype_name(c.in_dtype(0)), " and ",
                     dtype_name(c.in_dtype(i))));
  infer_broadcast(c);
}

// One flop per output element per extra input.
Cost cost_variadic(const CostContext& c) {
  Cost k = cost_elementwise(c);
  k.flops *= std::max<size_t>(1, c.in_dims.size() - 1);
  return k;
}

OpDef variadic_def(std::string_view name, KernelFn kernel, std::string_view doc) {
  return {.name = name, .since = 1, .min_inputs = 1, .max_inputs = -1, .infer = infer_variadic,
          .cost = cost_variadic, .kernel = kernel, .doc = doc};
}

}  // namespace

OpDef def_Sum() { return variadic_def("Sum", variadic_kernel<SumOp>, "y = x0 + x1 + ... (broadcasting)"); }
OpDef def_Mean() { return variadic_def("Mean", mean_kernel, "y = (x0 + x1 + ...) / n (broadcasting)"); }
OpDef def_Max() { return variadic_def("Max", variadic_kernel<MaxOp>, "y = elementwise max of all inputs"); }
OpDef def_Min() { return variadic_def("Min", variadic_kernel<MinOp>, "y = elementwise min of all inputs"); }

}  // namespace kiln::ops

// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D at `axis`
// (default 1): each row is everything from `axis` on. From opset 13 they work along the
// single dim `axis` (default -1). Both are the same loop over [outer, n, inner] rows:
// before 13, n = prod(dims[axis:]) and inner = 1.
#include <cmath>

#include "elementwise/broadcast.h"
#include "reduce/reduce_plan.h"

namespace kiln::ops {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

AxisSplit softmax_split(const Node& n, int64_t opset, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (opset >= 13) {
    if (rank == 0) return AxisSplit{};  // a scalar is a row of one
    return split_at_axis(dims, normalize_axis(n.attr_i("axis", -1), rank, n));
  }
  // Coerced to 2-D: [prod(dims[:axis]), prod(dims[axis:])]; axis may equal rank here.
  int64_t axis = n.attr_i("axis", 1);
  KILN_CHECK(axis >= -rank && axis <= rank, n.describe(), ": axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  AxisSplit s;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? s.outer : s.n) *= dims[i];
  return s;
}

template <Kind K, typename T>
void softmax_rows(const T* x, T* y, const AxisSplit& s, int threads) {
  const int64_t rows = s.outer * s.inner, n = s.n, st = s.inner;
  auto body = [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const int64_t base = (r / st) * n * st + r % st;
      const T* xr = x + base;
      T* yr = y + base;
      int64_t arg = 0;
      T m = xr[0];
      for (int64_t k = 1; k < n; ++k)
        if (xr[k * st] > m) m = xr[k * st], arg = k;
      if constexpr (K == Kind::Hardmax) {
        for (int64_t k = 0; k < n; ++k) yr[k * st] = k == arg ? T(1) : T(0);
      } else {
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          T e = std::exp(xr[k * st] - m);
          if constexpr (K == Kind::Softmax) yr[k * st] = e;
          sum += e;
        }
        if constexpr (K == Kind::Softmax) {
          const T inv = static_cast<T>(1.0 / sum);
          for (int64_t k = 0; k < n; ++k) yr[k * st] *= inv;
        } else {
          // (x - m) - log(sum): subtracting m first keeps precision for large x
          const T ls = static_cast<T>(std::log(sum));
          for (int64_t k = 0; k < n; ++k) yr[k * st] = (xr[k * st] - m) - ls;
        }
      }
    }
  };
  if (n == 0) return;
  if (rows * n >= kParallelElements && threads > 1 && rows > 1)
    kernels::parallel_for(rows, threads, body);
  else
    body(0, rows);
}

template <Kind K>
void softmax_kernel(KernelContext& c) {
  const Tensor& x0 = c.input(0);
  const bool half = x0.dtype() == DType::f16 || x0.dtype() == DType::bf16;
  const Tensor x = half ? to_f32(x0) : x0;
  AxisSplit s = softmax_split(c.node(), c.opset(), x.dims());
  Tensor y(x.dtype(), x.dims());
  KILN_DISPATCH_FLOAT(x.dtype(), c.node().describe(), softmax_rows<K, T>(x.data<T>(), y.data<T>(), s, c.threads()));
  c.set_output(0, half ? from_f32(y, x0.dtype()) : y);
}

void infer_softmax(InferContext& c) {
  if (c.in_dtype(0) != DType::undefined && !dtype_is_float(c.in_dtype(0)))
    c.fail(str_cat("input must be a float tensor, got ", dtype_name(c.in_dtype(0))));
  const Shape& s = c.in_shape(0);
  if (s.rank_known) {  // check the axis now rather than at run time
    int64_t rank = static_cast<int64_t>(s.rank());
    int64_t axis = c.node().attr_i("axis", c.opset() >= 13 ? -1 : 1);
    bool ok = c.opset() >= 13 ? (rank == 0 || (axis >= -rank && axis < rank)) : (axis >= -rank && axis <= rank);
    if (!ok) c.fail(str_cat("axis ", axis, " is out of range for rank ", rank));
  }
  infer_same_as_input0(c);
}

template <int kFlopsPerElement>
Cost cost_softmax(const CostContext& c) {
  Cost k = cost_elementwise(c);
  k.flops *= kFlopsPerElement;
  return k;
}

template <Kind K, int kFlops>
OpDef softmax_def(std::string_view name, std::string_view doc) {
  return {.name = name, .since = 1, .min_inputs = 1, .max_inputs = 1, .attrs = {{"axis", AttrKind::Int}},
          .infer = infer_softmax, .cost = cost_softmax<kFlops>, .kernel = softmax_kernel<K>, .doc = doc};
}

}  // namespace

// max, subtract, exp (~3), sum, scale: about 5 flops per element.
OpDef def_Softmax() { return softmax_def<Kind::Softmax, 5>("Softmax", "y = e^x / sum(e^x) along axis"); }
OpDef def_LogSoftmax() {
  return softmax_def<Kind::LogSoftmax, 5>("LogSoftmax", "y = x - log(sum(e^x)) along axis");
}
OpDef def_Hardmax() { return softmax_def<Kind::Hardmax, 1>("Hardmax", "y = 1 at the first max along axis, else 0"); }

}  // namespace kiln::ops

// CumSum: running sum along the axis given as a scalar input tensor; `exclusive` leaves
// out the current element, `reverse` sums from the end.
#include "elementwise/binary.h"
#include "reduce/reduce_plan.h"

namespace kiln::ops {
namespace {

int64_t cumsum_axis(const Node& n, const Tensor& a, int64_t rank) {
  KILN_CHECK(a.numel() == 1 && (a.dtype() == DType::i64 || a.dtype() == DType::i32), n.describe(),
             ": axis must be a scalar int32/int64 tensor, got ", dtype_name(a.dtype()), dims_str(a.dims()));
  return normalize_axis(a.as_int64(0), rank, n);
}

void cumsum_kernel(KernelContext& c) {
  const Tensor& x0 = c.input(0);
  const bool half = is_half(x0.dtype());
  const Tensor x = half ? to_f32(x0) : x0;
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) c.fail("input must have rank >= 1");
  AxisSplit s = split_at_axis(x.dims(), cumsum_axis(c.node(), c.input(1), rank));
  const bool exclusive = c.node().attr_i("exclusive", 0) != 0;
  const bool reverse = c.node().attr_i("reverse", 0) != 0;
  Tensor y(x.dtype(), x.dims());
  dispatch_elem<true, true>(x.dtype(), c, [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.n * s.inner + i;
        T acc = T(0);
        for (int64_t j = 0; j < s.n; ++j) {
          const int64_t k = base + (reverse ? s.n - 1 - j : j) * s.inner;
          if (exclusive) {
            out[k] = acc;
            acc = add_wrapping(acc, in[k]);
          } else {
            acc = add_wrapping(acc, in[k]);
            out[k] = acc;
          }
        }
      }
  });
  c.set_output(0, half ? from_f32(y, x0.dtype()) : y);
}

void infer_cumsum(InferContext& c) {
  if (const Tensor* a = c.in_const(1); a != nullptr && c.in_shape(0).rank_known)
    cumsum_axis(c.node(), *a, static_cast<int64_t>(c.in_shape(0).rank()));
  infer_same_as_input0(c);
}

}  // namespace

OpDef def_CumSum() {
  return {.name = "CumSum", .since = 11, .min_inputs = 2, .max_inputs = 2,
          .attrs = {{"exclusive", AttrKind::Int}, {"reverse", AttrKind::Int}}, .infer = infer_cumsum,
          .cost = cost_elementwise, .kernel = cumsum_kernel, .doc = "running sum along axis"};
}

}  // namespace kiln::ops

#include "reduce/reduce_plan.h"

#include <algorithm>

namespace kiln::ops {
namespace {

// Axes named by the node: from input 1 when present (ReduceSum, opset 13+), else the
// attribute. An axes input whose value is not given (nullptr) names none.
std::vector<int64_t> named_axes(const Node& n, const Tensor* axes_input, bool* from_input) {
  *from_input = n.input(1) != nullptr;
  if (*from_input) {
    if (axes_input == nullptr) return {};
    KILN_CHECK(axes_input->dtype() == DType::i64 || axes_input->dtype() == DType::i32, n.describe(),
               ": axes must be int64, got ", dtype_name(axes_input->dtype()));
    KILN_CHECK(axes_input->rank() <= 1, n.describe(), ": axes must be 1-D, got shape ", dims_str(axes_input->dims()));
    return axes_input->to_int64_vector();
  }
  return n.attr_ints("axes", {});
}

}  // namespace

ReduceAxes resolve_reduce_axes(const Node& n, int64_t rank, const Tensor* axes_input) {
  bool from_input = false;
  std::vector<int64_t> axes = named_axes(n, axes_input, &from_input);
  ReduceAxes r;
  r.mask.assign(static_cast<size_t>(rank), axes.empty());
  if (axes.empty()) {
    r.noop = n.attr_i("noop_with_empty_axes", 0) != 0;
    if (r.noop) std::fill(r.mask.begin(), r.mask.end(), false);
    return r;
  }
  for (int64_t a : axes) {
    int64_t k = normalize_axis(a, rank, n);
    KILN_CHECK(!r.mask[k], n.describe(), ": axis ", a, " is repeated in axes");
    r.mask[k] = true;
  }
  return r;
}

ReducePlan plan_reduce(const std::vector<int64_t>& in_dims, const std::vector<bool>& mask, bool keepdims) {
  ReducePlan p;
  p.in_numel = numel_of(in_dims);
  p.count = 1;
  std::vector<int64_t> kept;  // output dims of kept input dims, for strides
  std::vector<bool> kinds;
  for (size_t i = 0; i < in_dims.size(); ++i) {
    if (mask[i]) {
      p.count *= in_dims[i];
      if (keepdims) p.out_dims.push_back(1);
    } else {
      p.out_dims.push_back(in_dims[i]);
    }
    if (in_dims[i] == 1) continue;  // size-1 dims do not affect indexing
    if (!p.dims.empty() && kinds.back() == mask[i]) {
      p.dims.back() *= in_dims[i];
    } else {
      p.dims.push_back(in_dims[i]);
      kinds.push_back(mask[i]);
    }
  }
  p.out_numel = numel_of(p.out_dims);
  p.out_strides.assign(p.dims.size(), 0);
  int64_t s = 1;
  for (size_t d = p.dims.size(); d-- > 0;) {
    if (kinds[d]) continue;
    p.out_strides[d] = s;
    s *= p.dims[d];
  }
  return p;
}

void infer_reduce(InferContext& c) {
  const Shape& in = c.in_shape(0);
  const bool keepdims = c.node().attr_i("keepdims", 1) != 0;
  const bool axes_unknown = c.has_input(1) && c.in_const(1) == nullptr;
  if (!in.rank_known) {
    c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
    return;
  }
  if (axes_unknown) {
    // Which dims go is known only at run time: the rank survives only with keepdims.
    c.set_output(0, c.in_dtype(0),
                 keepdims ? Shape(std::vector<Dim>(in.rank(), Dim::unknown())) : Shape::unknown_rank());
    return;
  }
  ReduceAxes ax = resolve_reduce_axes(c.node(), static_cast<int64_t>(in.rank()), c.in_const(1));
  std::vector<Dim> out;
  for (size_t i = 0; i < in.rank(); ++i) {
    if (!ax.mask[i]) out.push_back(in.dims[i]);
    else if (keepdims) out.emplace_back(1);
  }
  c.set_output(0, c.in_dtype(0), Shape(out));
}

Cost cost_reduce(const CostContext& c) {
  Cost k;
  k.flops = c.in_dims.empty() ? 0 : static_cast<double>(numel_of(c.in_dims[0]));
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

AxisSplit split_at_axis(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i < axis) s.outer *= dims[i];
    else if (i == axis) s.n = dims[i];
    else s.inner *= dims[i];
  }
  return s;
}

}  // namespace kiln::ops

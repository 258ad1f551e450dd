// Concat, Split and Slice: copies of contiguous runs (memcpy per outer index).
#include <algorithm>
#include <climits>

#include "kiln/ops/views.h"
#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

// ---- Concat along axis: static sizes add up; other dims must agree.
void concat_infer(InferContext& c) {
  int64_t rank = -1;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i) && c.in_shape(i).rank_known) rank = static_cast<int64_t>(c.in_shape(i).rank());
  DType dt = c.in_dtype(0);
  if (rank < 0) return c.set_output(0, dt, Shape::unknown_rank());
  const int64_t axis = normalize_axis(c.node().attr_i("axis", 0), rank, c.node());
  Shape out = unknown_dims(rank);
  DimExpr sum;  // along the axis: static, or symbolic like past+seq
  bool sum_known = true;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    const Shape& s = c.in_shape(i);
    if (!s.rank_known) {
      sum_known = false;
      continue;
    }
    if (static_cast<int64_t>(s.rank()) != rank) c.fail(str_cat("input ", i, " has rank ", s.rank(), ", expected ", rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        auto e = DimExpr::of(s[d]);
        if (e) sum = sum + *e;
        else sum_known = false;
        continue;
      }
      if (out[d].is_unknown() || (out[d].is_symbolic() && s[d].is_static())) out[d] = s[d];
      else if (s[d].is_static() && out[d].is_static() && s[d].value != out[d].value)
        c.fail(str_cat("dim ", d, " differs between inputs: ", out[d].value, " vs ", s[d].value));
    }
  }
  if (sum_known) out[axis] = sum.to_dim();
  c.set_output(0, dt, out);
}

void concat_kernel(KernelContext& k) {
  const Tensor& first = k.input(0);
  std::vector<const std::vector<int64_t>*> dims;
  for (size_t i = 0; i < k.num_inputs(); ++i) {
    const Tensor& t = k.input(i);
    if (t.dtype() != first.dtype()) k.fail(str_cat("input ", i, " is ", dtype_name(t.dtype()), ", input 0 is ", dtype_name(first.dtype())));
    dims.push_back(&t.dims());
  }
  const ConcatLayout l = concat_layout(k.node(), dims);
  Tensor& y = k.alloc_output(0, first.dtype(), l.out_dims);
  for (size_t i = 0; i < k.num_inputs(); ++i) concat_copy(l, i, dtype_size(first.dtype()), k.input(i).raw(), y.raw());
}

// ---- Split: sizes from the 'split' attribute (< 13) or input 1 (>= 13), else equal parts.
std::optional<std::vector<int64_t>> split_sizes(const Node& n, int64_t opset, const Tensor* split_input) {
  if (opset < 13) {
    if (n.has_attr("split")) return n.attr_ints("split", {});
    return std::nullopt;
  }
  if (split_input && split_input->numel() > 0) return split_input->to_int64_vector();
  return std::nullopt;
}

// Concrete sizes for a dim of `len` split into `parts` outputs.
std::vector<int64_t> resolve_split(std::optional<std::vector<int64_t>> sizes, int64_t len, size_t parts,
                                   const std::function<void(std::string)>& fail) {
  if (sizes) {
    if (sizes->size() != parts) fail(str_cat("split has ", sizes->size(), " sizes for ", parts, " outputs"));
    int64_t sum = 0;
    for (int64_t s : *sizes) {
      if (s < 0) fail(str_cat("negative split size ", s));
      sum += s;
    }
    if (sum != len) fail(str_cat("split sizes ", dims_str(*sizes), " do not add up to dim ", len));
    return *sizes;
  }
  if (len % static_cast<int64_t>(parts) != 0)
    fail(str_cat("dim ", len, " cannot be split evenly into ", parts, " outputs"));
  return std::vector<int64_t>(parts, len / static_cast<int64_t>(parts));
}

void split_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  const size_t parts = c.num_outputs();
  DType dt = c.in_dtype(0);
  if (!s.rank_known) {
    for (size_t i = 0; i < parts; ++i) c.set_output(i, dt, Shape::unknown_rank());
    return;
  }
  const int64_t axis = normalize_axis(c.node().attr_i("axis", 0), static_cast<int64_t>(s.rank()), c.node());
  const bool input_given = c.opset() >= 13 && c.has_input(1);
  auto sizes = split_sizes(c.node(), c.opset(), c.in_const(1));
  auto fail = [&c](const std::string& m) { c.fail(m); };
  std::vector<Dim> dims(parts, Dim::unknown());
  if (input_given && !c.in_const(1)) {
    // sizes unknown until run time
  } else if (sizes || s[axis].is_static()) {
    if (s[axis].is_static()) {
      auto v = resolve_split(sizes, s[axis].value, parts, fail);
      for (size_t i = 0; i < parts; ++i) dims[i] = Dim(v[i]);
    } else {
      for (size_t i = 0; i < parts; ++i) dims[i] = Dim((*sizes)[i < sizes->size() ? i : 0]);
      if (sizes->size() != parts) fail(str_cat("split has ", sizes->size(), " sizes for ", parts, " outputs"));
    }
  } else if (parts == 1) {
    dims[0] = s[axis];
  }
  for (size_t i = 0; i < parts; ++i) {
    Shape o = s;
    o[axis] = dims[i];
    c.set_output(i, dt, o);
  }
}

void split_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const std::vector<StridedView> views =
      split_views(k.node(), k.opset(), x.dims(), k.has_input(1) ? &k.input(1) : nullptr, k.num_outputs());
  for (size_t i = 0; i < views.size(); ++i) copy_view(k, i, x, views[i].offset, views[i].strides, views[i].dims);
}

// ---- Slice: starts/ends/axes attributes (opset < 10) or inputs (>= 10, with steps).
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

// nullopt when (during inference) some parameter is not known yet.
std::optional<SliceParams> slice_params(const Node& n, int64_t opset, const std::function<const Tensor*(size_t)>& in,
                                        const std::function<bool(size_t)>& has) {
  SliceParams p;
  if (opset < 10) {
    p.starts = n.attr_ints("starts", {});
    p.ends = n.attr_ints("ends", {});
    p.axes = n.attr_ints("axes", {});
  } else {
    for (size_t i = 1; i <= 4; ++i)
      if (has(i) && !in(i)) return std::nullopt;
    p.starts = in(1)->to_int64_vector();
    p.ends = in(2)->to_int64_vector();
    if (has(3)) p.axes = in(3)->to_int64_vector();
    if (has(4)) p.steps = in(4)->to_int64_vector();
  }
  KILN_CHECK(p.starts.size() == p.ends.size(), n.describe(), ": starts and ends differ in length");
  if (p.axes.empty())
    for (size_t i = 0; i < p.starts.size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
  if (p.steps.empty()) p.steps.assign(p.starts.size(), 1);
  KILN_CHECK(p.axes.size() == p.starts.size() && p.steps.size() == p.starts.size(), n.describe(),
             ": starts, ends, axes and steps differ in length");
  return p;
}

struct AxisSlice {
  int64_t start, step, len;
};

// The spec's clamping: negative start/end count from the end, then clamp to [0, dim]
// (positive step) or [0, dim-1] / [-1, dim-1] (negative step).
AxisSlice slice_axis(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim == 0) return {0, step, 0};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp(start, int64_t{0}, dim);
    end = std::clamp(end, int64_t{0}, dim);
  } else {
    start = std::clamp(start, int64_t{0}, dim - 1);
    end = std::clamp(end, int64_t{-1}, dim - 1);
  }
  int64_t len = 0;
  if (step > 0 && end > start) len = (end - start + step - 1) / step;
  if (step < 0 && start > end) len = (start - end + (-step) - 1) / (-step);
  return {start, step, len};
}

// Normalized axes, checked for range and repeats; steps checked non-zero.
std::vector<int64_t> slice_axes(const SliceParams& p, int64_t rank, const Node& n) {
  std::vector<int64_t> axes = p.axes;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    axes[i] = normalize_axis(axes[i], rank, n);
    KILN_CHECK(!seen[axes[i]], n.describe(), ": axis ", axes[i], " repeats in axes");
    seen[axes[i]] = true;
    KILN_CHECK(p.steps[i] != 0, n.describe(), ": step must not be 0");
  }
  return axes;
}

void slice_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  DType dt = c.in_dtype(0);
  if (!s.rank_known) return c.set_output(0, dt, Shape::unknown_rank());
  auto p = slice_params(
      c.node(), c.opset(), [&c](size_t i) { return c.in_const(i); }, [&c](size_t i) { return c.has_input(i); });
  const int64_t rank = static_cast<int64_t>(s.rank());
  if (!p) {
    // Only the axes may be known: the other dims pass through.
    Shape out = s;
    auto axes = c.opset() >= 10 && c.has_input(3) ? const_ints(c, 3) : std::nullopt;
    if (!axes) return c.set_output(0, dt, unknown_dims(rank));
    for (int64_t a : *axes) out[normalize_axis(a, rank, c.node())] = Dim::unknown();
    return c.set_output(0, dt, out);
  }
  auto axes = slice_axes(*p, rank, c.node());
  Shape out = s;
  for (size_t i = 0; i < axes.size(); ++i) {
    const Dim& d = s[axes[i]];
    if (d.is_static()) {
      out[axes[i]] = Dim(slice_axis(p->starts[i], p->ends[i], p->steps[i], d.value).len);
    } else {
      // x[0:INT_MAX] of a symbolic dim is the whole dim
      bool whole = p->starts[i] == 0 && p->steps[i] == 1 && p->ends[i] >= INT32_MAX;
      out[axes[i]] = whole ? d : Dim::unknown();
    }
  }
  c.set_output(0, dt, out);
}

void slice_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  auto v = slice_view(
      k.node(), k.opset(), x.dims(), [&k](size_t i) { return &k.input(i); }, [&k](size_t i) { return k.has_input(i); });
  copy_view(k, 0, x, v->offset, v->strides, v->dims);
}

}  // namespace

std::vector<StridedView> split_views(const Node& n, int64_t opset, const std::vector<int64_t>& x,
                                     const Tensor* split_input, size_t outputs) {
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axis = normalize_axis(n.attr_i("axis", 0), rank, n);
  auto fail = [&n](const std::string& m) { throw Error(str_cat(n.describe(), ": ", m)); };
  const std::vector<int64_t> sizes = resolve_split(split_sizes(n, opset, split_input), x[axis], outputs, fail);
  const std::vector<int64_t> st = strides_of(x);
  std::vector<StridedView> views(sizes.size());
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    views[i].offset = start * st[axis];
    views[i].dims = x;
    views[i].dims[axis] = sizes[i];
    views[i].strides = st;
    start += sizes[i];
  }
  return views;
}

std::optional<StridedView> slice_view(const Node& n, int64_t opset, const std::vector<int64_t>& x,
                                      const std::function<const Tensor*(size_t)>& in,
                                      const std::function<bool(size_t)>& has) {
  auto p = slice_params(n, opset, in, has);
  if (!p) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  auto axes = slice_axes(*p, rank, n);
  StridedView v;
  const std::vector<int64_t> st = strides_of(x);
  v.dims = x;
  v.strides = st;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    AxisSlice s = slice_axis(p->starts[i], p->ends[i], p->steps[i], x[static_cast<size_t>(a)]);
    v.dims[a] = s.len;
    v.strides[a] = st[a] * s.step;
    if (s.len > 0) v.offset += s.start * st[a];
  }
  return v;
}

ConcatLayout concat_layout(const Node& n, const std::vector<const std::vector<int64_t>*>& ins) {
  KILN_CHECK(!ins.empty(), n.describe(), ": Concat needs at least one input");
  const std::vector<int64_t>& first = *ins[0];
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t axis = normalize_axis(n.attr_i("axis", 0), rank, n);
  ConcatLayout l;
  l.out_dims = first;
  l.out_dims[static_cast<size_t>(axis)] = 0;
  int64_t inner = 1;
  for (int64_t d = 0; d < axis; ++d) l.outer *= first[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= first[static_cast<size_t>(d)];
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::vector<int64_t>& t = *ins[i];
    KILN_CHECK(static_cast<int64_t>(t.size()) == rank, n.describe(), ": input ", i, " has rank ", t.size(),
               ", expected ", rank);
    for (int64_t d = 0; d < rank; ++d)
      KILN_CHECK(d == axis || t[static_cast<size_t>(d)] == first[static_cast<size_t>(d)], n.describe(), ": input ", i,
                 " ", dims_str(t), " does not match input 0 ", dims_str(first), " outside axis ", axis);
    l.offsets.push_back(l.row);
    l.runs.push_back(t[static_cast<size_t>(axis)] * inner);
    l.row += l.runs.back();
    l.out_dims[static_cast<size_t>(axis)] += t[static_cast<size_t>(axis)];
  }
  return l;
}

void concat_copy(const ConcatLayout& l, size_t i, size_t elem, const void* src, void* dst, int64_t o0, int64_t o1) {
  const size_t run = static_cast<size_t>(l.runs[i]) * elem, row = static_cast<size_t>(l.row) * elem;
  if (run == 0) return;
  const auto* s = static_cast<const char*>(src);
  auto* d = static_cast<char*>(dst) + static_cast<size_t>(l.offsets[i]) * elem;
  for (int64_t o = o0; o < (o1 < 0 ? l.outer : o1); ++o) std::memcpy(d + o * row, s + o * run, run);
}

OpDef def_Concat() {
  return {.name = "Concat", .since = 4, .min_inputs = 1, .max_inputs = -1, .attrs = {{"axis", AttrKind::Int, true}},
          .infer = concat_infer, .cost = cost_data_movement, .kernel = concat_kernel,
          .doc = "joins inputs along axis"};
}

OpDef def_Split() {
  return {.name = "Split", .since = 2, .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = -1,
          .attrs = {{"axis", AttrKind::Int}, {"split", AttrKind::Ints}}, .infer = split_infer,
          .cost = cost_data_movement, .kernel = split_kernel, .doc = "splits x along axis into parts"};
}

OpDef def_Slice() {
  return {.name = "Slice", .since = 1, .min_inputs = 1, .max_inputs = 5,
          .attrs = {{"starts", AttrKind::Ints}, {"ends", AttrKind::Ints}, {"axes", AttrKind::Ints}},
          .infer = slice_infer, .cost = cost_data_movement, .kernel = slice_kernel,
          .doc = "x[starts:ends:steps] along axes (ONNX clamping)"};
}

}  // namespace kiln::ops

// Ops that move elements by a fixed index map, all done as one strided_copy each:
// Expand, Tile, Transpose, DepthToSpace, SpaceToDepth.
#include <algorithm>

#include "kiln/ops/views.h"
#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

// ---- Expand: bidirectional (numpy) broadcast of x with `shape`.
void expand_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  if (auto target = const_ints(c, 1)) {
    auto b = broadcast_shapes(s, Shape::of(*target));
    if (!b) c.fail(str_cat("shape ", s.str(), " does not broadcast to ", dims_str(*target)));
    return c.set_output(0, c.in_dtype(0), *b);
  }
  auto len = static_length(c, 1);
  if (!len || !s.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  // Unknown target: a non-1 static input dim survives, the rest is unknown.
  const size_t r = std::max<size_t>(s.rank(), *len);
  Shape out = unknown_dims(r);
  for (size_t i = 0; i < s.rank(); ++i) {
    const Dim& d = s[i];
    if (d.is_static() && d.value != 1) out[r - s.rank() + i] = d;
  }
  c.set_output(0, c.in_dtype(0), out);
}

void expand_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const StridedView v = expand_view(k.node(), x.dims(), k.input(1).to_int64_vector());
  check_dims(v.dims, k);
  copy_view(k, 0, x, 0, v.strides, v.dims);
}

// ---- Tile: out dim d = x dim d * repeats[d]. The output viewed as [r0,d0,r1,d1,...] is a
// broadcast of x along the r axes, so one strided copy does it.
void tile_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  auto reps = const_ints(c, 1);
  if (!s.rank_known) {
    if (reps) return c.set_output(0, c.in_dtype(0), unknown_dims(reps->size()));
    return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  }
  if (!reps) return c.set_output(0, c.in_dtype(0), unknown_dims(s.rank()));
  if (reps->size() != s.rank()) c.fail(str_cat("repeats has ", reps->size(), " elements for input rank ", s.rank()));
  Shape out = s;
  for (size_t i = 0; i < s.rank(); ++i) {
    if ((*reps)[i] < 0 || (*reps)[i] > (int64_t{1} << 40)) c.fail(str_cat("invalid repeat ", (*reps)[i]));
    if (s[i].is_static()) out[i] = Dim(s[i].value * (*reps)[i]);
    else if ((*reps)[i] != 1) out[i] = Dim::unknown();
  }
  c.set_output(0, c.in_dtype(0), out);
}

void tile_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  std::vector<int64_t> reps = k.input(1).to_int64_vector();
  if (reps.size() != x.rank()) k.fail(str_cat("repeats has ", reps.size(), " elements for input rank ", x.rank()));
  std::vector<int64_t> st = strides_of(x.dims()), view_dims, view_strides, out_dims;
  for (size_t i = 0; i < x.rank(); ++i) {
    if (reps[i] < 0) k.fail(str_cat("negative repeat ", reps[i]));
    view_dims.insert(view_dims.end(), {reps[i], x.dim(i)});
    view_strides.insert(view_strides.end(), {0, st[i]});
  }
  check_dims(view_dims, k);
  for (size_t i = 0; i < x.rank(); ++i) out_dims.push_back(reps[i] * x.dim(i));
  copy_view(k, 0, x, 0, view_strides, view_dims);
  k.outputs()[0] = k.outputs()[0].reshaped(out_dims);
}

// ---- Transpose: perm defaults to reversing the dims.
std::vector<int64_t> transpose_perm(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.attr_ints("perm", {});
  if (!n.has_attr("perm")) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
    return perm;
  }
  KILN_CHECK(perm.size() == rank, n.describe(), ": perm has ", perm.size(), " entries for rank ", rank);
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = normalize_axis(p, static_cast<int64_t>(rank), n);
    KILN_CHECK(!seen[p], n.describe(), ": perm ", dims_str(n.attr_ints("perm", {})), " is not a permutation");
    seen[p] = true;
  }
  return perm;
}

void transpose_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  if (!s.rank_known) {
    if (c.node().has_attr("perm"))
      return c.set_output(0, c.in_dtype(0), unknown_dims(c.node().attr_ints("perm", {}).size()));
    return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  }
  auto perm = transpose_perm(c.node(), s.rank());
  std::vector<Dim> out;
  for (int64_t p : perm) out.push_back(s[p]);
  c.set_output(0, c.in_dtype(0), Shape(out));
}

void transpose_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const StridedView v = transpose_view(k.node(), x.dims());
  copy_view(k, 0, x, v.offset, v.strides, v.dims);
}

// ---- DepthToSpace / SpaceToDepth on NCHW: a 6-D reshape + transpose each.
int64_t blocksize_of(const Node& n) {
  int64_t b = n.attr_i("blocksize", 0);
  KILN_CHECK(b > 0, n.describe(), ": blocksize must be > 0, got ", b);
  return b;
}

// out dims of DepthToSpace (to_space) or SpaceToDepth; Dims so symbols of N pass through.
Shape space_depth_shape(const Shape& s, int64_t b, bool to_space, const std::function<void(std::string)>& fail) {
  if (!s.rank_known) return unknown_dims(4);
  if (s.rank() != 4) fail(str_cat("input must be 4-D NCHW, got ", s.str()));
  Shape out = unknown_dims(4);
  out[0] = s[0];
  auto scale = [&](size_t i, bool mul, int64_t f) {
    if (!s[i].is_static()) return;
    if (!mul && s[i].value % f != 0) fail(str_cat("dim ", i, " (", s[i].value, ") is not divisible by ", f));
    out[i] = Dim(mul ? s[i].value * f : s[i].value / f);
  };
  scale(1, !to_space, b * b);
  scale(2, to_space, b);
  scale(3, to_space, b);
  return out;
}

void depth_to_space_infer(InferContext& c) {
  auto fail = [&c](const std::string& m) { c.fail(m); };
  c.set_output(0, c.in_dtype(0), space_depth_shape(c.in_shape(0), blocksize_of(c.node()), true, fail));
}

void space_to_depth_infer(InferContext& c) {
  auto fail = [&c](const std::string& m) { c.fail(m); };
  c.set_output(0, c.in_dtype(0), space_depth_shape(c.in_shape(0), blocksize_of(c.node()), false, fail));
}

// Copies x viewed as `view` (6-D) permuted by perm, then reshapes the result to `out`.
void permute_6d(KernelContext& k, const Tensor& x, const std::vector<int64_t>& view, const std::vector<int64_t>& perm,
                const std::vector<int64_t>& out) {
  std::vector<int64_t> st = strides_of(view), dims, strides;
  for (int64_t p : perm) {
    dims.push_back(view[p]);
    strides.push_back(st[p]);
  }
  copy_view(k, 0, x, 0, strides, dims);
  k.outputs()[0] = k.outputs()[0].reshaped(out);
}

void depth_to_space_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const int64_t b = blocksize_of(k.node());
  auto fail = [&k](const std::string& m) { k.fail(m); };
  auto out = space_depth_shape(Shape::of(x.dims()), b, true, fail).static_dims();
  const int64_t n = x.dim(0), c = x.dim(1) / (b * b), h = x.dim(2), w = x.dim(3);
  std::string mode = k.node().attr_s("mode", "DCR");
  if (mode == "DCR") permute_6d(k, x, {n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2}, out);
  else if (mode == "CRD") permute_6d(k, x, {n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
  else k.fail(str_cat("unknown mode '", mode, "' (DCR or CRD)"));
}

void space_to_depth_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const int64_t b = blocksize_of(k.node());
  auto fail = [&k](const std::string& m) { k.fail(m); };
  auto out = space_depth_shape(Shape::of(x.dims()), b, false, fail).static_dims();
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / b, w = x.dim(3) / b;
  permute_6d(k, x, {n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4}, out);
}

}  // namespace

StridedView contiguous_view(const std::vector<int64_t>& dims) { return {0, dims, strides_of(dims)}; }

StridedView merged_view(const StridedView& v) {
  StridedView m;
  m.offset = v.offset;
  for (size_t i = 0; i < v.dims.size(); ++i) {
    const int64_t dim = v.dims[i], stride = v.strides[i];
    if (dim == 1) continue;  // moves nothing
    if (!m.dims.empty() && m.strides.back() == stride * dim) {
      m.dims.back() *= dim;  // the previous dim steps over this one whole: one dim
      m.strides.back() = stride;
      continue;
    }
    m.dims.push_back(dim);
    m.strides.push_back(stride);
  }
  return m;
}

StridedView transpose_view(const Node& n, const std::vector<int64_t>& x) {
  const std::vector<int64_t> perm = transpose_perm(n, x.size());
  const std::vector<int64_t> st = strides_of(x);
  StridedView v;
  for (int64_t p : perm) {
    v.dims.push_back(x[static_cast<size_t>(p)]);
    v.strides.push_back(st[static_cast<size_t>(p)]);
  }
  return v;
}

StridedView expand_view(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& shape) {
  StridedView v;
  v.dims = broadcast_dims(x, shape, n);
  // 0 along the dims x broadcasts over (its size-1 dims and the leading ones it lacks).
  const std::vector<int64_t> st = strides_of(x);
  v.strides.assign(v.dims.size(), 0);
  const size_t lead = v.dims.size() - x.size();
  for (size_t i = 0; i < x.size(); ++i) v.strides[lead + i] = x[i] == 1 ? 0 : st[i];
  return v;
}

OpDef def_Expand() {
  return {.name = "Expand", .since = 8, .min_inputs = 2, .max_inputs = 2, .infer = expand_infer,
          .cost = cost_data_movement, .kernel = expand_kernel, .doc = "broadcast x to (x broadcast with shape)"};
}

OpDef def_Tile() {
  return {.name = "Tile", .since = 6, .min_inputs = 2, .max_inputs = 2, .infer = tile_infer,
          .cost = cost_data_movement, .kernel = tile_kernel, .doc = "x repeated repeats[d] times along each dim"};
}

OpDef def_Transpose() {
  return {.name = "Transpose", .since = 1, .min_inputs = 1, .max_inputs = 1, .attrs = {{"perm", AttrKind::Ints}},
          .infer = transpose_infer, .cost = cost_data_movement, .kernel = transpose_kernel,
          .doc = "permutes dims (default: reverses them)"};
}

OpDef def_DepthToSpace() {
  return {.name = "DepthToSpace", .since = 1, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"blocksize", AttrKind::Int, true}, {"mode", AttrKind::String}}, .infer = depth_to_space_infer,
          .cost = cost_data_movement, .kernel = depth_to_space_kernel,
          .doc = "moves channel blocks into spatial blocks (DCR or CRD order)"};
}

OpDef def_SpaceToDepth() {
  return {.name = "SpaceToDepth", .since = 1, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"blocksize", AttrKind::Int, true}}, .infer = space_to_depth_infer, .cost = cost_data_movement,
          .kernel = space_to_depth_kernel, .doc = "moves spatial blocks into channels"};
}

}  // namespace kiln::ops

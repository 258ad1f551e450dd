// Index-driven reads: Gather, GatherElements, GatherND. Every index is bounds-checked
// (negative counts from the end) before any memory is touched.
#include "kiln/ops/gather.h"
#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

std::vector<int64_t> indices_of(const Tensor& t, const KernelContext& k) {
  if (t.dtype() != DType::i64 && t.dtype() != DType::i32)
    k.fail(str_cat("indices must be i32 or i64, got ", dtype_name(t.dtype())));
  return t.to_int64_vector();
}

// ---- Gather: out = data[:axis] + indices + data[axis+1:]
void gather_infer(InferContext& c) {
  const Shape &d = c.in_shape(0), &ind = c.in_shape(1);
  if (!d.rank_known || !ind.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  const int64_t axis = normalize_axis(c.node().attr_i("axis", 0), static_cast<int64_t>(d.rank()), c.node());
  std::vector<Dim> out(d.dims.begin(), d.dims.begin() + axis);
  out.insert(out.end(), ind.dims.begin(), ind.dims.end());
  out.insert(out.end(), d.dims.begin() + axis + 1, d.dims.end());
  c.set_output(0, c.in_dtype(0), Shape(out));
}

void gather_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const Tensor& ind = k.input(1);
  if (ind.dtype() != DType::i64 && ind.dtype() != DType::i32)
    k.fail(str_cat("indices must be i32 or i64, got ", dtype_name(ind.dtype())));
  const GatherLayout g = gather_layout(k.node(), x.dims(), ind.dims());
  check_dims(g.out_dims, k);
  Tensor& y = k.alloc_output(0, x.dtype(), g.out_dims);
  gather_copy(g, dtype_size(x.dtype()), x.raw(), ind.raw(), ind.dtype(), ind.numel(), y.raw(),
              str_cat(k.node().describe(), " (opset ", k.opset(), ")"));
}

// ---- GatherElements: out[i..] = data[i.. with i_axis replaced by indices[i..]]
void gather_elements_infer(InferContext& c) { c.set_output(0, c.in_dtype(0), c.in_shape(1)); }

// Walks every element of `ind` (same rank as data, each dim <= data's outside `axis`),
// calling fn(position in ind, offset in data) with the axis index bounds-checked.
template <typename Fn>
void for_each_element_index(const Tensor& data, const Tensor& ind, int64_t axis, const KernelContext& k,
                            const char* what, Fn fn) {
  const int64_t rank = static_cast<int64_t>(data.rank());
  if (static_cast<int64_t>(ind.rank()) != rank)
    k.fail(str_cat("indices rank ", ind.rank(), " differs from data rank ", rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && ind.dim(d) > data.dim(d))
      k.fail(str_cat("indices dims ", dims_str(ind.dims()), " exceed data dims ", dims_str(data.dims())));
  std::vector<int64_t> idx = indices_of(ind, k);
  std::vector<int64_t> st = strides_of(data.dims()), pos(rank, 0);
  const int64_t n = data.dim(axis);
  int64_t base = 0;  // data offset of pos with the axis coordinate zeroed
  for (size_t e = 0; e < idx.size(); ++e) {
    fn(static_cast<int64_t>(e), base + checked_index(idx[e], n, k, what) * st[axis]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < ind.dim(d)) {
        if (d != axis) base += st[d];
        break;
      }
      if (d != axis) base -= st[d] * (ind.dim(d) - 1);
      pos[d] = 0;
    }
  }
}

void gather_elements_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const Tensor& ind = k.input(1);
  const int64_t axis = normalize_axis(k.node().attr_i("axis", 0), static_cast<int64_t>(x.rank()), k.node());
  Tensor& y = k.alloc_output(0, x.dtype(), ind.dims());
  KILN_DISPATCH_BYTES(x.dtype(), k.node().describe(), {
    const T* src = static_cast<const T*>(x.raw());
    T* dst = static_cast<T*>(y.raw());
    for_each_element_index(x, ind, axis, k, "GatherElements", [&](int64_t e, int64_t off) { dst[e] = src[off]; });
  });
}

// ---- GatherND: out = indices.shape[:-1] + data.shape[batch_dims + k:]
void gather_nd_infer(InferContext& c) {
  const Shape &d = c.in_shape(0), &ind = c.in_shape(1);
  const int64_t b = c.node().attr_i("batch_dims", 0);
  if (!d.rank_known || !ind.rank_known || ind.rank() == 0 || !ind.dims.back().is_static())
    return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  const int64_t kk = ind.dims.back().value;
  if (b < 0 || b + kk > static_cast<int64_t>(d.rank()) || b >= static_cast<int64_t>(ind.rank()))
    c.fail(str_cat("indices ", ind.str(), " with batch_dims ", b, " do not fit data ", d.str()));
  std::vector<Dim> out(ind.dims.begin(), ind.dims.end() - 1);
  out.insert(out.end(), d.dims.begin() + b + kk, d.dims.end());
  c.set_output(0, c.in_dtype(0), Shape(out));
}

// Shared by GatherND and ScatterND: for each index tuple, the data offset (in elements)
// of the slice it selects; `slice` is that slice's element count.
struct NdIndex {
  std::vector<int64_t> offsets;
  int64_t slice = 1;
  std::vector<int64_t> out_dims;
};

NdIndex nd_offsets(const Tensor& x, const Tensor& ind, int64_t b, const KernelContext& k, const char* what) {
  const int64_t r = static_cast<int64_t>(x.rank()), q = static_cast<int64_t>(ind.rank());
  if (q < 1) k.fail("indices must have rank >= 1");
  const int64_t kk = ind.dim(q - 1);
  if (b < 0 || b >= q || b + kk > r)
    k.fail(str_cat("indices ", dims_str(ind.dims()), " with batch_dims ", b, " do not fit data ", dims_str(x.dims())));
  for (int64_t d = 0; d < b; ++d)
    if (ind.dim(d) != x.dim(d)) k.fail(str_cat("batch dim ", d, " differs between data and indices"));
  std::vector<int64_t> idx = indices_of(ind, k), st = strides_of(x.dims());
  NdIndex res;
  for (int64_t d = b + kk; d < r; ++d) res.slice *= x.dim(d);
  int64_t batch_size = 1;  // data elements per batch entry
  for (int64_t d = b; d < r; ++d) batch_size *= x.dim(d);
  int64_t per_batch = 1;   // index tuples per batch entry
  for (int64_t d = b; d < q - 1; ++d) per_batch *= ind.dim(d);
  const int64_t tuples = numel_of(std::vector<int64_t>(ind.dims().begin(), ind.dims().end() - 1));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (per_batch == 0 ? 0 : t / per_batch) * batch_size;
    for (int64_t j = 0; j < kk; ++j) off += checked_index(idx[t * kk + j], x.dim(b + j), k, what) * st[b + j];
    res.offsets.push_back(off);
  }
  res.out_dims.assign(ind.dims().begin(), ind.dims().end() - 1);
  res.out_dims.insert(res.out_dims.end(), x.dims().begin() + b + kk, x.dims().end());
  return res;
}

void gather_nd_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  NdIndex nd = nd_offsets(x, k.input(1), k.node().attr_i("batch_dims", 0), k, "GatherND");
  Tensor& y = k.alloc_output(0, x.dtype(), nd.out_dims);
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype())), run = nd.slice * es;
  const auto* src = static_cast<const char*>(x.raw());
  auto* dst = static_cast<char*>(y.raw());
  for (int64_t off : nd.offsets) {
    std::memcpy(dst, src + off * es, run);
    dst += run;
  }
}

}  // namespace

// Used by scatter.cpp.
namespace tensor_ops {
std::vector<int64_t> scatter_nd_offsets(const Tensor& x, const Tensor& ind, const KernelContext& k, int64_t* slice) {
  NdIndex nd = nd_offsets(x, ind, 0, k, "ScatterND");
  *slice = nd.slice;
  return nd.offsets;
}
void scatter_elements_walk(const Tensor& data, const Tensor& ind, int64_t axis, const KernelContext& k,
                           const std::function<void(int64_t, int64_t)>& fn) {
  for_each_element_index(data, ind, axis, k, "ScatterElements", fn);
}
}  // namespace tensor_ops

GatherLayout gather_layout(const Node& node, const std::vector<int64_t>& x, const std::vector<int64_t>& indices) {
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axis = normalize_axis(node.attr_i("axis", 0), rank, node);
  GatherLayout g;
  g.n = x[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) g.outer *= x[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) g.inner *= x[static_cast<size_t>(d)];
  g.out_dims.assign(x.begin(), x.begin() + axis);
  g.out_dims.insert(g.out_dims.end(), indices.begin(), indices.end());
  g.out_dims.insert(g.out_dims.end(), x.begin() + axis + 1, x.end());
  return g;
}

namespace {
template <typename I>
void gather_typed(const GatherLayout& g, size_t elem, const char* x, const I* idx, int64_t count, char* y,
                  const std::string& where) {
  for (int64_t j = 0; j < count; ++j) {  // all checked before the first write
    const int64_t i = static_cast<int64_t>(idx[j]);
    if (i < -g.n || i >= g.n)
      throw Error(str_cat(where, ": Gather index ", i, " is out of range for a dim of size ", g.n));
  }
  auto at = [&](int64_t j) { return idx[j] < 0 ? static_cast<int64_t>(idx[j]) + g.n : static_cast<int64_t>(idx[j]); };
  auto single = [&](auto tag) {  // gathering single elements: typed copies instead of tiny memcpys
    using T = decltype(tag);
    const T* src = reinterpret_cast<const T*>(x);
    T* dst = reinterpret_cast<T*>(y);
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t j = 0; j < count; ++j) *dst++ = src[o * g.n + at(j)];
  };
  if (g.inner == 1 && (elem == 1 || elem == 2 || elem == 4 || elem == 8)) {
    if (elem == 1) single(uint8_t{});
    else if (elem == 2) single(uint16_t{});
    else if (elem == 4) single(uint32_t{});
    else single(uint64_t{});
    return;
  }
  const int64_t run = g.inner * static_cast<int64_t>(elem);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      std::memcpy(y, x + (o * g.n + at(j)) * run, static_cast<size_t>(run));
      y += run;
    }
}
}  // namespace

void gather_copy(const GatherLayout& g, size_t elem, const void* x, const void* indices, DType index_dtype,
                 int64_t count, void* y, const std::string& where) {
  const char* src = static_cast<const char*>(x);
  char* dst = static_cast<char*>(y);
  if (index_dtype == DType::i64)
    gather_typed(g, elem, src, static_cast<const int64_t*>(indices), count, dst, where);
  else if (index_dtype == DType::i32)
    gather_typed(g, elem, src, static_cast<const int32_t*>(indices), count, dst, where);
  else
    throw Error(str_cat(where, ": indices must be i32 or i64, got ", dtype_name(index_dtype)));
}

OpDef def_Gather() {
  return {.name = "Gather", .since = 1, .min_inputs = 2, .max_inputs = 2, .attrs = {{"axis", AttrKind::Int}},
          .infer = gather_infer, .cost = cost_data_movement, .kernel = gather_kernel,
          .doc = "selects slices of data along axis by indices"};
}

OpDef def_GatherElements() {
  return {.name = "GatherElements", .since = 11, .min_inputs = 2, .max_inputs = 2,
          .attrs = {{"axis", AttrKind::Int}}, .infer = gather_elements_infer, .cost = cost_data_movement,
          .kernel = gather_elements_kernel, .doc = "per-element gather along axis (indices shape = output shape)"};
}

OpDef def_GatherND() {
  return {.name = "GatherND", .since = 11, .min_inputs = 2, .max_inputs = 2,
          .attrs = {{"batch_dims", AttrKind::Int}}, .infer = gather_nd_infer, .cost = cost_data_movement,
          .kernel = gather_nd_kernel, .doc = "gathers slices addressed by index tuples in the last indices dim"};
}

}  // namespace kiln::ops

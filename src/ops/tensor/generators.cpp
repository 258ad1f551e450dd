// Ops that build tensors from indices: EyeLike, Range, NonZero, Trilu, OneHot.
#include <algorithm>
#include <cmath>

#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

// Bytes of the value 1 in dtype dt (any dtype, via a cast).
Tensor one_of(DType dt) { return Tensor::scalar<float>(1.f).cast(dt); }

// ---- EyeLike: ones on the k-th diagonal of a 2-D tensor.
DType eye_dtype(const Node& n, DType in) {
  if (!n.has_attr("dtype")) return in;
  DType dt = dtype_from_onnx_code(n.attr_i("dtype", 0));
  KILN_CHECK(dt != DType::undefined, n.describe(), ": unsupported dtype code ", n.attr_i("dtype", 0));
  return dt;
}

void eye_like_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  if (s.rank_known && s.rank() != 2) c.fail(str_cat("input must be 2-D, got ", s.str()));
  c.set_output(0, eye_dtype(c.node(), c.in_dtype(0)), s.rank_known ? s : unknown_dims(2));
}

void eye_like_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  if (x.rank() != 2) k.fail(str_cat("input must be 2-D, got ", dims_str(x.dims())));
  DType dt = eye_dtype(k.node(), x.dtype());
  Tensor& y = k.alloc_output(0, dt, x.dims());
  Tensor one = one_of(dt);
  const int64_t rows = x.dim(0), cols = x.dim(1);
  // a diagonal beyond the matrix selects nothing; clamping keeps i + diag from overflowing
  const int64_t diag = std::clamp<int64_t>(k.node().attr_i("k", 0), -rows - 1, cols + 1);
  const size_t es = dtype_size(dt);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t j = i + diag;
    if (j >= 0 && j < cols) std::memcpy(static_cast<char*>(y.raw()) + (i * cols + j) * es, one.raw(), es);
  }
}

// ---- Range: start, start+delta, ... while < limit (> limit for negative delta).
int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta, const Node& n) {
  KILN_CHECK(start.numel() == 1 && limit.numel() == 1 && delta.numel() == 1, n.describe(),
             ": start, limit and delta must be scalars");
  if (dtype_is_integer(start.dtype())) {
    int64_t s = start.as_int64(0), l = limit.as_int64(0), d = delta.as_int64(0);
    KILN_CHECK(d != 0, n.describe(), ": delta must not be 0");
    // ceil((l - s) / d) in exact integer arithmetic
    int64_t diff = l - s;
    int64_t q = diff / d, r = diff % d;
    if (r != 0 && ((r > 0) == (d > 0))) ++q;
    return std::max<int64_t>(q, 0);
  }
  double s = start.as_double(0), l = limit.as_double(0), d = delta.as_double(0);
  KILN_CHECK(d != 0, n.describe(), ": delta must not be 0");
  double cnt = std::ceil((l - s) / d);
  KILN_CHECK(std::isfinite(cnt) && cnt < 1e12, n.describe(), ": range (", s, ", ", l, ", ", d, ") is not finite");
  return std::max<int64_t>(static_cast<int64_t>(cnt), 0);
}

void range_infer(InferContext& c) {
  const Tensor *s = c.in_const(0), *l = c.in_const(1), *d = c.in_const(2);
  if (s && l && d) return c.set_output(0, c.in_dtype(0), Shape({range_count(*s, *l, *d, c.node())}));
  c.set_output(0, c.in_dtype(0), unknown_dims(1));
}

void range_kernel(KernelContext& k) {
  const Tensor &s = k.input(0), &l = k.input(1), &d = k.input(2);
  if (s.dtype() != l.dtype() || s.dtype() != d.dtype()) k.fail("start, limit and delta must have one dtype");
  int64_t n = range_count(s, l, d, k.node());
  check_dims({n}, k);
  Tensor& y = k.alloc_output(0, s.dtype(), {n});
  KILN_DISPATCH_NUMERIC(s.dtype(), k.node().describe(), {
    T start = s.data<T>()[0], delta = d.data<T>()[0];
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  });
}

// ---- NonZero: [rank, nnz] coordinates of the non-zero elements (a scalar counts as rank 1).
std::vector<uint8_t> nonzero_flags(const Tensor& x, const Node& n) {
  std::vector<uint8_t> f(static_cast<size_t>(x.numel()));
  if (x.dtype() == DType::boolean) {
    const auto* p = static_cast<const uint8_t*>(x.raw());
    for (size_t i = 0; i < f.size(); ++i) f[i] = p[i] != 0;
  } else if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) {
    const auto* p = static_cast<const uint16_t*>(x.raw());
    for (size_t i = 0; i < f.size(); ++i) f[i] = (p[i] & 0x7fff) != 0;  // +0 and -0 are zero
  } else {
    KILN_DISPATCH_NUMERIC(x.dtype(), n.describe(), {
      const T* p = x.data<T>();
      for (size_t i = 0; i < f.size(); ++i) f[i] = p[i] != T(0);
    });
  }
  return f;
}

void nonzero_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  Dim rank = s.rank_known ? Dim(std::max<int64_t>(1, static_cast<int64_t>(s.rank()))) : Dim::unknown();
  c.set_output(0, DType::i64, Shape({rank, Dim::unknown()}));
}

void nonzero_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  std::vector<uint8_t> f = nonzero_flags(x, k.node());
  int64_t nnz = 0;
  for (uint8_t v : f) nnz += v;
  std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.dims();
  const int64_t r = static_cast<int64_t>(dims.size());
  Tensor& y = k.alloc_output(0, DType::i64, {r, nnz});
  int64_t* out = y.data<int64_t>();
  std::vector<int64_t> idx(r, 0);
  int64_t col = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i]) {
      for (int64_t d = 0; d < r; ++d) out[d * nnz + col] = idx[d];
      ++col;
    }
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

// ---- Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
void trilu_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  if (x.rank() < 2) k.fail(str_cat("input must have rank >= 2, got ", dims_str(x.dims())));
  int64_t diag = 0;
  if (k.has_input(1)) {
    if (k.input(1).numel() != 1) k.fail("k must be a scalar");
    diag = k.input(1).as_int64(0);
  }
  const bool upper = k.node().attr_i("upper", 1) != 0;
  Tensor& y = k.alloc_output(0, x.dtype(), x.dims());
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  diag = std::clamp<int64_t>(diag, -rows - 1, cols + 1);  // same triangle, no overflow in i + diag
  const int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const char*>(x.raw());
  auto* dst = static_cast<char*>(y.raw());
  for (int64_t m = 0; m < mats; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      // columns kept in this row: [lo, hi)
      int64_t lo = upper ? std::clamp(i + diag, int64_t{0}, cols) : 0;
      int64_t hi = upper ? cols : std::clamp(i + diag + 1, int64_t{0}, cols);
      if (hi <= lo) continue;
      int64_t off = (m * rows + i) * cols + lo;
      std::memcpy(dst + off * es, src + off * es, (hi - lo) * es);
    }
  }
}

// ---- OneHot: indices -> one-hot along `axis` (off/on from `values`).
int64_t onehot_depth(const Tensor& t, const Node& n) {
  KILN_CHECK(t.numel() == 1, n.describe(), ": depth must hold one element");
  double d = t.as_double(0);
  KILN_CHECK(d >= 1 && d < 1e12, n.describe(), ": depth must be >= 1, got ", d);
  return static_cast<int64_t>(d);
}

void onehot_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  DType dt = c.in_dtype(2);
  if (!s.rank_known) return c.set_output(0, dt, Shape::unknown_rank());
  const int64_t r = static_cast<int64_t>(s.rank()) + 1;
  int64_t axis = normalize_axis(c.node().attr_i("axis", -1), r, c.node());
  Dim depth = Dim::unknown();
  if (const Tensor* t = c.in_const(1)) depth = Dim(onehot_depth(*t, c.node()));
  std::vector<Dim> dims = s.dims;
  dims.insert(dims.begin() + axis, depth);
  c.set_output(0, dt, Shape(dims));
}

void onehot_kernel(KernelContext& k) {
  const Tensor& ind = k.input(0);
  const int64_t depth = onehot_depth(k.input(1), k.node());
  const Tensor& vals = k.input(2);
  if (vals.numel() != 2) k.fail(str_cat("values must hold [off, on], has ", vals.numel(), " elements"));
  const int64_t r = static_cast<int64_t>(ind.rank()) + 1;
  const int64_t axis = normalize_axis(k.node().attr_i("axis", -1), r, k.node());
  std::vector<int64_t> dims = ind.dims();
  dims.insert(dims.begin() + axis, depth);
  check_dims(dims, k);
  Tensor& y = k.alloc_output(0, vals.dtype(), dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ind.dim(d);
  for (size_t d = axis; d < ind.rank(); ++d) inner *= ind.dim(d);
  const size_t es = dtype_size(vals.dtype());
  const auto* off = static_cast<const char*>(vals.raw());
  const char* on = off + es;
  auto* dst = static_cast<char*>(y.raw());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(dst + i * es, off, es);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      int64_t v = static_cast<int64_t>(ind.as_double(o * inner + j));
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // out of range: all off values (spec)
      std::memcpy(dst + ((o * depth + v) * inner + j) * es, on, es);
    }
  }
}

}  // namespace

OpDef def_EyeLike() {
  return {.name = "EyeLike", .since = 9, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"dtype", AttrKind::Int}, {"k", AttrKind::Int}}, .infer = eye_like_infer,
          .cost = cost_data_movement, .kernel = eye_like_kernel, .doc = "2-D tensor with ones on the k-th diagonal"};
}

OpDef def_Range() {
  return {.name = "Range", .since = 11, .min_inputs = 3, .max_inputs = 3, .infer = range_infer,
          .cost = cost_elementwise, .kernel = range_kernel, .doc = "start + i*delta for i < ceil((limit-start)/delta)"};
}

OpDef def_NonZero() {
  return {.name = "NonZero", .since = 9, .min_inputs = 1, .max_inputs = 1, .infer = nonzero_infer,
          .cost = cost_data_movement, .kernel = nonzero_kernel, .doc = "[rank, nnz] i64 indices of non-zero elements"};
}

OpDef def_Trilu() {
  return {.name = "Trilu", .since = 14, .min_inputs = 1, .max_inputs = 2, .attrs = {{"upper", AttrKind::Int}},
          .infer = infer_same_as_input0, .cost = cost_data_movement, .kernel = trilu_kernel,
          .doc = "upper or lower triangle of the last two dims (others zero)"};
}

OpDef def_OneHot() {
  return {.name = "OneHot", .since = 9, .min_inputs = 3, .max_inputs = 3, .attrs = {{"axis", AttrKind::Int}},
          .infer = onehot_infer, .cost = cost_data_movement, .kernel = onehot_kernel,
          .doc = "one-hot encoding of indices with [off, on] values along axis"};
}

}  // namespace kiln::ops

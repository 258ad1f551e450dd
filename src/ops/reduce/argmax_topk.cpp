// Index selection: ArgMax, ArgMin (one index along an axis) and TopK (the k largest or
// smallest values and their indices). Ties go to the lower index, as ONNX Runtime does
// (ArgMax/ArgMin: unless select_last_index = 1).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reduce/reduce_plan.h"

namespace kiln::ops {
namespace {

// x before y in "largest first" order; NaN counts as larger than every number so the
// comparison stays a strict weak ordering.
template <typename T>
bool greater_nan_first(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

template <bool kMax>
void arg_kernel(KernelContext& c) {
  const Tensor& x0 = c.input(0);
  const Tensor x = (x0.dtype() == DType::f16 || x0.dtype() == DType::bf16) ? to_f32(x0) : x0;
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(c.node().attr_i("axis", 0), std::max<int64_t>(rank, 1), c.node());
  const bool keepdims = c.node().attr_i("keepdims", 1) != 0;
  const bool last = c.node().attr_i("select_last_index", 0) != 0;
  std::vector<int64_t> dims = x.dims();
  AxisSplit s = rank == 0 ? AxisSplit{} : split_at_axis(dims, axis);
  if (s.n == 0) c.fail(str_cat("cannot take an index along axis ", axis, " of size 0"));
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) out_dims.push_back(dims[i]);
    else if (keepdims) out_dims.push_back(1);
  Tensor& y = c.alloc_output(0, DType::i64, out_dims);
  int64_t* out = y.data<int64_t>();
  KILN_DISPATCH_NUMERIC(x.dtype(), c.node().describe(), {
    const T* in = x.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* row = in + o * s.n * s.inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < s.n; ++k) {
          T v = row[k * s.inner], b = row[best * s.inner];
          bool better = kMax ? greater_nan_first(v, b) : greater_nan_first(b, v);
          bool tie = !greater_nan_first(v, b) && !greater_nan_first(b, v);
          if (better || (last && tie)) best = k;
        }
        out[o * s.inner + i] = best;
      }
  });
}

void infer_arg(InferContext& c) {
  const Shape& in = c.in_shape(0);
  if (!in.rank_known) {
    c.set_output(0, DType::i64, Shape::unknown_rank());
    return;
  }
  const int64_t rank = static_cast<int64_t>(in.rank());
  const int64_t axis = normalize_axis(c.node().attr_i("axis", 0), std::max<int64_t>(rank, 1), c.node());
  const bool keepdims = c.node().attr_i("keepdims", 1) != 0;
  std::vector<Dim> out;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) out.push_back(in.dims[i]);
    else if (keepdims) out.emplace_back(1);
  c.set_output(0, DType::i64, Shape(out));
}

// K: input 1 (a one-element int64 tensor) from opset 10, attribute `k` before.
int64_t topk_k(const Node& n, int64_t opset, const Tensor* k_input) {
  if (opset < 10) {
    KILN_CHECK(n.has_attr("k"), n.describe(), ": attribute k is required before opset 10");
    return n.attr_i("k", 0);
  }
  KILN_CHECK(k_input != nullptr, n.describe(), ": input K is required from opset 10");
  KILN_CHECK(k_input->numel() == 1 && (k_input->dtype() == DType::i64 || k_input->dtype() == DType::i32),
             n.describe(), ": K must be a one-element int64 tensor, got ", dtype_name(k_input->dtype()),
             dims_str(k_input->dims()));
  return k_input->as_int64(0);
}

void topk_kernel(KernelContext& c) {
  const Tensor& x0 = c.input(0);
  const bool half = x0.dtype() == DType::f16 || x0.dtype() == DType::bf16;
  const Tensor x = half ? to_f32(x0) : x0;
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) c.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(c.node().attr_i("axis", -1), rank, c.node());
  const int64_t k = topk_k(c.node(), c.opset(), c.has_input(1) ? &c.input(1) : nullptr);
  const bool largest = c.node().attr_i("largest", 1) != 0;
  AxisSplit s = split_at_axis(x.dims(), axis);
  if (k < 0 || k > s.n) c.fail(str_cat("k = ", k, " is out of range for axis ", axis, " of size ", s.n));
  std::vector<int64_t> out_dims = x.dims();
  out_dims[axis] = k;
  Tensor vals(x.dtype(), out_dims);
  Tensor& idx = c.alloc_output(1, DType::i64, out_dims);
  int64_t* oi = idx.data<int64_t>();
  // Always sorted: a sorted result is a valid answer for sorted = 0 too.
  KILN_DISPATCH_NUMERIC(x.dtype(), c.node().describe(), {
    const T* in = x.data<T>();
    T* ov = vals.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* row = in + o * s.n * s.inner + i;
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
          T va = row[a * s.inner], vb = row[b * s.inner];
          if (largest ? greater_nan_first(va, vb) : greater_nan_first(vb, va)) return true;
          if (largest ? greater_nan_first(vb, va) : greater_nan_first(va, vb)) return false;
          return a < b;  // ties: lower index first
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * s.inner + i;
          ov[dst] = row[order[j] * s.inner];
          oi[dst] = order[j];
        }
      }
  });
  c.set_output(0, half ? from_f32(vals, x0.dtype()) : vals);
}

void infer_topk(InferContext& c) {
  const Shape& in = c.in_shape(0);
  if (!in.rank_known) {
    c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
    c.set_output(1, DType::i64, Shape::unknown_rank());
    return;
  }
  const int64_t rank = static_cast<int64_t>(in.rank());
  if (rank == 0) c.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(c.node().attr_i("axis", -1), rank, c.node());
  Shape out = in;
  const Tensor* kt = c.in_const(1);
  if (c.opset() < 10 || kt != nullptr) {
    int64_t k = topk_k(c.node(), c.opset(), kt);
    if (k < 0 || (in.dims[axis].is_static() && k > in.dims[axis].value))
      c.fail(str_cat("k = ", k, " is out of range for axis ", axis, " of size ", in.dims[axis].str()));
    out.dims[axis] = Dim(k);
  } else {
    out.dims[axis] = Dim::unknown();
  }
  c.set_output(0, c.in_dtype(0), out);
  c.set_output(1, DType::i64, out);
}

// About log2(n) comparisons per input element.
Cost cost_topk(const CostContext& c) {
  Cost k = cost_data_movement(c);
  if (c.in_dims.empty()) return k;
  double n = static_cast<double>(numel_of(c.in_dims[0]));
  k.flops = n * std::max(1.0, std::log2(std::max(2.0, n)));
  return k;
}

}  // namespace

OpDef def_ArgMax() {
  return {.name = "ArgMax", .since = 1, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"axis", AttrKind::Int}, {"keepdims", AttrKind::Int}, {"select_last_index", AttrKind::Int}},
          .infer = infer_arg, .cost = cost_reduce, .kernel = arg_kernel<true>,
          .doc = "index of the max along axis (int64)"};
}
OpDef def_ArgMin() {
  return {.name = "ArgMin", .since = 1, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"axis", AttrKind::Int}, {"keepdims", AttrKind::Int}, {"select_last_index", AttrKind::Int}},
          .infer = infer_arg, .cost = cost_reduce, .kernel = arg_kernel<false>,
          .doc = "index of the min along axis (int64)"};
}
OpDef def_TopK() {
  return {.name = "TopK", .since = 1, .min_inputs = 1, .max_inputs = 2, .min_outputs = 2, .max_outputs = 2,
          .attrs = {{"axis", AttrKind::Int}, {"k", AttrKind::Int}, {"largest", AttrKind::Int},
                    {"sorted", AttrKind::Int}},
          .infer = infer_topk, .cost = cost_topk, .kernel = topk_kernel,
          .doc = "the k largest (or smallest) values along axis and their indices"};
}

}  // namespace kiln::ops

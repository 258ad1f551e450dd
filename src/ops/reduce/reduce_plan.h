// Shared machinery of the reductions: resolving `axes` (attribute, or input from opset 13
// for ReduceSum), the output shape (keepdims), and a loop that visits every input element
// with the index of the output element it reduces into.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/kernels/parallel.h"
#include "op_helpers.h"

namespace kiln::ops {

struct ReducePlan {
  std::vector<int64_t> out_dims;  // with keepdims applied
  int64_t in_numel = 0, out_numel = 0;
  int64_t count = 0;              // input elements per output element
  // Input dims with size-1 dims dropped and neighbours of the same kind merged.
  std::vector<int64_t> dims;
  std::vector<int64_t> out_strides;  // 0 for a reduced dim
};

// Which dims a reduction node reduces. No axes means every dim, unless
// noop_with_empty_axes is set, which makes the node an identity.
struct ReduceAxes {
  std::vector<bool> mask;  // per input dim: reduced?
  bool noop = false;       // noop_with_empty_axes with no axes: output = input
};
// Resolves axes at run time (axes input, if any, must be given in `axes_input`).
ReduceAxes resolve_reduce_axes(const Node& n, int64_t rank, const Tensor* axes_input);

ReducePlan plan_reduce(const std::vector<int64_t>& in_dims, const std::vector<bool>& mask, bool keepdims);

// Calls f(out_index, in_index) for every input element, in input order, restricted to
// indices [first_begin, first_end) of the outermost (collapsed) dim; first_end < 0 = all.
// A sub-range needs at least two collapsed dims (the innermost is walked whole).
template <typename F>
void for_each_reduce(const ReducePlan& p, F&& f, int64_t first_begin = 0, int64_t first_end = -1) {
  const size_t r = p.dims.size();
  if (p.in_numel == 0) return;
  if (r == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  if (first_end < 0) first_end = p.dims[0];
  const int64_t block = p.in_numel / p.dims[0];  // input elements per index of dim 0
  const int64_t inner = p.dims[r - 1];
  const int64_t os = p.out_strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  idx[0] = first_begin;
  int64_t o = first_begin * p.out_strides[0];
  const int64_t end = first_end * block;
  for (int64_t i = first_begin * block; i < end; i += inner) {
    if (os == 0) {
      for (int64_t j = 0; j < inner; ++j) f(o, i + j);
    } else {
      for (int64_t j = 0; j < inner; ++j) f(o + j * os, i + j);
    }
    for (size_t d = r - 1; d-- > 0;) {
      o += p.out_strides[d];
      if (++idx[d] < p.dims[d] || d == 0) break;
      o -= p.out_strides[d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// Runs for_each_reduce(p, f), split over threads along the outermost dim when that dim is
// kept (so chunks write disjoint outputs) and the input is large enough to pay.
template <typename F>
void for_each_reduce_parallel(const ReducePlan& p, int threads, F&& f) {
  constexpr int64_t kParallelReduce = 1 << 16;
  if (threads > 1 && p.in_numel >= kParallelReduce && p.dims.size() >= 2 && p.out_strides[0] != 0)
    kernels::parallel_for(p.dims[0], threads, [&](int64_t b, int64_t e) { for_each_reduce(p, f, b, e); });
  else
    for_each_reduce(p, f);
}

// Shape inference shared by the Reduce* ops.
void infer_reduce(InferContext& c);
// One flop per input element, plus io bytes.
Cost cost_reduce(const CostContext& c);

// A single axis split as [outer, n, inner] (for ArgMax, Softmax, TopK, CumSum).
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at_axis(const std::vector<int64_t>& dims, int64_t axis);

}  // namespace kiln::ops

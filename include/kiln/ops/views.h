// Transpose, Slice, Split and Expand as strided views of their input: the element at output index (i0..ik) is
// input element offset + sum i_d * strides[d]. Their reference kernels copy the view, and the
// compiled runtime works the view out once per input shape and copies it on every run
// (src/runtime/fast_strided.cpp), so both read the op's semantics from here.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::ops {

struct StridedView {
  int64_t offset = 0;
  std::vector<int64_t> dims, strides;  // the output's dims, and each one's stride in the input
};

// A contiguous tensor of dims `dims` as a view of itself (row-major strides, offset 0).
StridedView contiguous_view(const std::vector<int64_t>& dims);
// The same elements in the same order with size-1 dims dropped and neighbours that step
// contiguously merged (the longest runs for a copy; more reshapes expressible as views).
StridedView merged_view(const StridedView& v);

// Transpose of an input of dims x: perm (default: reversed), checked (throws naming the node).
StridedView transpose_view(const Node& n, const std::vector<int64_t>& x);

// Pad (constant / reflect / edge; negative pads crop) of an input of dims x: the output dims, per
// output dim each position's source index (-1: the fill value), and the fill as one element's
// bytes. pads_input / value_input: inputs 1 and 2 (opset >= 11; the attributes before). Throws
// naming the node on bad pads or an unknown mode. pad_copy writes the padded tensor row by row.
constexpr int64_t kMaxPadRank = 8;
struct PadPlan {
  std::vector<int64_t> x, dims;
  std::vector<std::vector<int64_t>> map;
  std::vector<unsigned char> fill;
  size_t elem = 0;
};
PadPlan pad_plan(const Node& n, int64_t opset, const std::vector<int64_t>& x, DType dtype, const Tensor* pads_input,
                 const Tensor* value_input);
void pad_copy(const PadPlan& p, const void* x, void* y);

// What Shape returns for an input of dims x: x[start:end] (opset 15's range, clamped like Slice;
// the whole of x before). Not a view, but read the same way by the reference and fast kernels.
std::vector<int64_t> shape_op_dims(const Node& n, const std::vector<int64_t>& x);

// Expand of an input of dims x to (x broadcast with `shape`): stride 0 along the broadcast dims;
// throws naming the node when they do not broadcast.
StridedView expand_view(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& shape);

// Split of an input of dims x into `outputs` views: sizes from the attribute (opset < 13) or
// split_input (nullptr: none), else equal parts; throws naming the node on bad sizes.
std::vector<StridedView> split_views(const Node& n, int64_t opset, const std::vector<int64_t>& x,
                                     const Tensor* split_input, size_t outputs);

// Concat (Split's inverse) of inputs of dims `ins` along the node's axis: input i's `outer`
// rows of runs[i] elements land at element offsets[i] of the output's rows of `row` elements.
// Throws naming the node when the ranks differ or dims disagree outside the axis.
struct ConcatLayout {
  int64_t outer = 1, row = 0;
  std::vector<int64_t> runs, offsets, out_dims;
};
ConcatLayout concat_layout(const Node& n, const std::vector<const std::vector<int64_t>*>& ins);
// Copies rows [o0, o1) of input i (contiguous, `elem` bytes an element; o1 < 0: to the last row)
// into its columns of the output.
void concat_copy(const ConcatLayout& l, size_t i, size_t elem, const void* src, void* dst, int64_t o0 = 0,
                 int64_t o1 = -1);

// Slice of an input of dims x: starts/ends/axes from the attributes (opset < 10) or from inputs
// 1-4 (`in(i)`, `has(i)`: whether the node has input i). nullopt when an input it has is not
// known (in(i) == nullptr); throws naming the node on bad parameters.
std::optional<StridedView> slice_view(const Node& n, int64_t opset, const std::vector<int64_t>& x,
                                      const std::function<const Tensor*(size_t)>& in,
                                      const std::function<bool(size_t)>& has);

}  // namespace kiln::ops

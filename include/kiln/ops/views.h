// Transpose, Slice and Split as strided views of their input: the element at output index (i0..ik) is
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

// Transpose of an input of dims x: perm (default: reversed), checked (throws naming the node).
StridedView transpose_view(const Node& n, const std::vector<int64_t>& x);

// Split of an input of dims x into `outputs` views: sizes from the attribute (opset < 13) or
// split_input (nullptr: none), else equal parts; throws naming the node on bad sizes.
std::vector<StridedView> split_views(const Node& n, int64_t opset, const std::vector<int64_t>& x,
                                     const Tensor* split_input, size_t outputs);

// Slice of an input of dims x: starts/ends/axes from the attributes (opset < 10) or from inputs
// 1-4 (`in(i)`, `has(i)`: whether the node has input i). nullopt when an input it has is not
// known (in(i) == nullptr); throws naming the node on bad parameters.
std::optional<StridedView> slice_view(const Node& n, int64_t opset, const std::vector<int64_t>& x,
                                      const std::function<const Tensor*(size_t)>& in,
                                      const std::function<bool(size_t)>& has);

}  // namespace kiln::ops

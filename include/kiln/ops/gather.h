// Gather along one axis (ONNX Gather), shared by its reference kernel (src/ops/tensor/gather.cpp)
// and the compiled runtime's (src/runtime/fast_gather.cpp), which works the layout out once per
// shape and copies on every run without allocating.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::ops {

struct GatherLayout {
  int64_t outer = 1;  // the product of x's dims before the axis
  int64_t n = 0;      // x's dim along the axis: indices lie in [-n, n)
  int64_t inner = 1;  // elements after the axis: one gathered run
  std::vector<int64_t> out_dims;
};

// Layout of Gather(x, indices) for x and indices of these dims; throws naming the node on a bad
// axis.
GatherLayout gather_layout(const Node& node, const std::vector<int64_t>& x, const std::vector<int64_t>& indices);

// y[o, j, :] = x[o, indices[j], :] for the `count` indices (i32 or i64, `index_dtype`; others
// throw). Every index is checked against [-n, n) before anything is written; a bad one throws
// `where`: "Gather index I is out of range for a dim of size N". `elem`: bytes per element.
void gather_copy(const GatherLayout& g, size_t elem, const void* x, const void* indices, DType index_dtype,
                 int64_t count, void* y, const std::string& where);

}  // namespace kiln::ops

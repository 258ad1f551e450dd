// Numpy-style broadcasting as a loop plan, made once per set of operand dims: the reference
// elementwise kernels (src/ops/elementwise/broadcast.h iterates it) and the compiled runtime's
// fast comparisons (src/runtime/fast_compare.cpp) read the same plan.
//
// The plan drops size-1 output dims and merges neighbouring dims that every operand walks
// contiguously (or broadcasts over together), so e.g. [N,S,768] + [768] becomes a 2-D loop
// [N*S, 768] with strides a=(768,1), b=(0,1). The kernels then only see an innermost run with
// strides 0 or 1, which compilers vectorise.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::ops {

struct BroadcastPlan {
  static constexpr int kMaxOperands = 3;
  int operands = 0;
  std::vector<int64_t> out_dims;               // full (uncollapsed) output dims
  std::vector<int64_t> dims;                   // collapsed loop dims (at least one)
  std::vector<int64_t> strides[kMaxOperands];  // per operand, per collapsed dim; 0 = broadcast
  int64_t numel = 0;
  int64_t inner() const { return dims.back(); }
};

// Plans out = broadcast(in[0], in[1], ...). Throws naming the node when shapes do not broadcast.
BroadcastPlan plan_broadcast(const std::vector<const std::vector<int64_t>*>& ins, const Node& node);

}  // namespace kiln::ops

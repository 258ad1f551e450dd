// Recognises the activation applied to a value, in the forms exporters write it: single ops
// (Relu, LeakyRelu, Clip with constant bounds, Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu) and
// decompositions (x·Sigmoid(x) = SiLU, x·HardSigmoid(x; 1/6, 1/2) = HardSwish, the erf GELU
// x·0.5·(1 + erf(x/√2)) and the tanh GELU x·0.5·(1 + tanh(√(2/π)(x + 0.044715x³))) with their
// factors in any order). Used by fuse-epilogue to fold the activation into FusedConv/FusedMatMul.
#pragma once
#include <optional>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/kiln_ops.h"

namespace kiln::passes::fuse {

struct ActivationMatch {
  ops::Activation act = ops::Activation::None;
  float alpha = 0, beta = 0;  // act_alpha / act_beta
  Value* out = nullptr;       // the activation's result
  std::vector<Node*> nodes;   // the nodes computing it
};

// The activation of x when every reader of x belongs to it (so x need not be kept).
std::optional<ActivationMatch> match_activation(Value* x, int64_t opset);

}  // namespace kiln::passes::fuse

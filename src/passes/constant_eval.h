// Evaluating a node whose inputs are all constants with the op table's reference kernel:
// shared by fold-constants (any size up to a cap) and simplify-shapes (shape-sized results).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/passes/rewrite.h"

namespace kiln::passes {

// Whether n can be folded at all: every present input a constant, a reference kernel, no
// subgraph, no randomness, and not a DequantizeLinear of weights (quantized models keep
// their int8 weights; lowering consumes the pair).
Decision can_fold(const Node& n);

// Runs n's kernel on its constant inputs. Throws kiln::Error if the kernel does.
std::vector<Tensor> evaluate_node(const Node& n, int64_t opset);

// Folds n when can_fold and its outputs total at most max_bytes: every output becomes an
// initializer of the same name, and n is erased. Returns the reason when it does not.
Decision fold_node(Node& n, Rewriter& rw, int64_t max_bytes);

}  // namespace kiln::passes

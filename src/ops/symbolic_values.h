// Symbolic values of small integer tensors during shape inference.
//
// Exported models compute shapes at run time: Reshape(x, Concat(Gather(Shape(x), 0), 128, 768)).
// When x has a symbolic batch dim N, those shape tensors are not constants, yet their
// elements are known as dims: [N, 128, 768]. This tracks such 0-D/1-D int tensors as lists
// of Dims through the ops that shape computations use, and refines the output shape of the
// ops that consume shapes (Reshape, Expand, ConstantOfShape) where their own inference
// could not (it only sees true constants).
#pragma once
#include <map>
#include <optional>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::ops {

struct SymbolicValue {
  std::vector<Dim> elems;
  bool scalar = false;  // 0-D (one element)
};
using SymbolicValues = std::map<const Value*, SymbolicValue>;

// Records the symbolic value of n's output(s) when n is a shape computation over known
// inputs. `known` holds constant tensors (initializers are read from the values).
void propagate_symbolic(const Node& n, const std::map<const Value*, Tensor>& known, SymbolicValues& sv);

// Refines the output shape of shape-consuming ops from symbolic inputs; only fills what
// the op's own inference left unknown.
void refine_with_symbolic(const Node& n, const std::map<const Value*, Tensor>& known, const SymbolicValues& sv);

}  // namespace kiln::ops

// How the perf model reads a graph: which nodes launch kernels, which run on matrix units,
// which are views or folded constants, and the bytes of a tensor at a target precision.
// Shared by the perf model and its diagnosis of measured times.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "kiln/analysis/chip.h"
#include "kiln/ir/graph.h"

namespace kiln::analysis::perf_graph {

// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (inference): no data moves.
bool is_view(const Node& n);
// Conv, MatMul, Gemm, Einsum, recurrent ops and their quantized/fused forms.
bool is_matrix(const Node& n);
// Transpose: data moves only to change layout.
bool is_layout(const Node& n);
// Elementwise: one output whose shape is the broadcast of the inputs' static shapes, and not
// an op known to mix positions (Softmax, normalisations, pooling, gathers, ...).
bool is_elementwise(const Node& n);

// Values known at compile time once shapes are static: initializers, Shape/Size of static
// shapes, and every output of a node whose inputs are all known (the compiler folds these).
std::set<const Value*> constant_values(const Graph& g);

// Bytes of v at `p` (float tensors re-sized to p's width; others unchanged); 0 if not static.
double value_bytes(const Value& v, Precision p);
// Bytes of v as stored in the model; 0 if not static.
double model_bytes(const Value& v);

struct NodeRef {
  const Node* node;
  std::string path;
  size_t top_index;  // index of the main-graph node it belongs to
};
// Every node, subgraphs after their parent, like `kiln graph`; not the bodies of kiln ops
// (kiln.FusedElementwise), which are part of their node's kernel and cost.
std::vector<NodeRef> all_nodes(const Graph& g);

}  // namespace kiln::analysis::perf_graph

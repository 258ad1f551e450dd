// `kiln graph`: what a model is made of — every node (subgraphs included) with its
// tensors, FLOPs and bytes, totals and an op histogram — as a table, Graphviz, SVG or JSON.
// Costs come from kiln::ops::node_cost; a node whose shapes are not all static has no
// cost ('?' / null) and is counted in `unknown_cost` instead of the sums.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/op.h"

namespace kiln::analysis {

enum class GraphFormat { text, dot, svg, json };
// "text", "dot", "svg", "json"; throws kiln::Error naming the choices otherwise.
GraphFormat graph_format_from_name(std::string_view name);

struct NodeSummary {
  const Node* node = nullptr;
  std::string path;  // node name; inside a subgraph "parent/attr/name", e.g. "loop/body/Add"
  int depth = 0;     // 0 in the main graph, +1 per subgraph level
  std::optional<ops::Cost> cost;
};

struct GraphSummary {
  std::vector<NodeSummary> nodes;   // main graph in order, each subgraph after its parent node
  int64_t params = 0;               // elements of all initializers (subgraphs included)
  int64_t param_bytes = 0;
  double flops = 0;                 // sums over the nodes with a known cost
  double bytes = 0;                 // bytes read + written
  int64_t unknown_cost = 0;         // nodes left out of flops/bytes
  DimBindings assumed;              // symbolic input dims taken as 1 for the costs
  std::vector<std::pair<std::string, int64_t>> histogram;  // op -> count, most frequent first
};

GraphSummary summarize_graph(const Model& m);

// svg runs Graphviz `dot -Tsvg`; throws kiln::Error when it is not installed.
std::string render_graph(const Model& m, GraphFormat fmt);

}  // namespace kiln::analysis

// Which original (ONNX) nodes each node of an optimized graph covers.
//
// The passes keep the name of every value that survives (a fused node takes over its group's
// output value, names and all), so the covered nodes can be read off the two graphs without the
// passes recording anything: walking the original graph backwards from a compiled node's outputs,
// through values that no longer exist in the compiled graph (the intermediates fusion removed or
// folding replaced), every original node met is one it covers. The walk stops at values the
// compiled graph still has (computed by another kernel, or its inputs), at weights and at graph
// inputs. A compiled node whose outputs are all new (a transpose the layout pass inserted) covers
// nothing.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::analysis {

struct SourceNode {
  std::string name, op;
  double flops = 0, bytes = 0;  // the op table's cost in the original graph (0 when shapes are unknown)
};

// Compiled node name -> the original nodes it covers, in original order.
using SourceMap = std::map<std::string, std::vector<SourceNode>>;

SourceMap map_sources(const Graph& original, const Graph& compiled);

}  // namespace kiln::analysis

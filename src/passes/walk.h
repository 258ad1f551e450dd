// Visiting every graph of a model: the main graph, then the subgraphs of its nodes (If
// branches, Loop/Scan bodies), depth first. Passes that work graph by graph use it.
#pragma once
#include "kiln/ir/graph.h"
#include "kiln/passes/rewrite.h"  // node_list

namespace kiln::passes {

template <typename F>
void for_each_graph(Graph& g, F&& f) {
  f(g);
  std::vector<Graph*> subs;
  for (const auto& n : g.nodes())
    for (Graph* sg : n->subgraphs()) subs.push_back(sg);
  for (Graph* sg : subs) for_each_graph(*sg, f);
}

}  // namespace kiln::passes

// Visiting every graph of a model: the main graph, then the subgraphs of its nodes (If
// branches, Loop/Scan bodies), depth first. Passes that work graph by graph use it.
#pragma once
#include "kiln/ir/graph.h"

namespace kiln::passes {

template <typename F>
void for_each_graph(Graph& g, F&& f) {
  f(g);
  std::vector<Graph*> subs;
  for (const auto& n : g.nodes())
    for (Graph* sg : n->subgraphs()) subs.push_back(sg);
  for (Graph* sg : subs) for_each_graph(*sg, f);
}

// Snapshot of a graph's nodes, safe to iterate while a Rewriter erases some (check was_erased).
inline std::vector<Node*> node_list(const Graph& g) {
  std::vector<Node*> out;
  out.reserve(g.nodes().size());
  for (const auto& n : g.nodes()) out.push_back(n.get());
  return out;
}

}  // namespace kiln::passes

// Visiting every graph of a model: the main graph, then the subgraphs of its nodes (If
// branches, Loop/Scan bodies), depth first. Passes that work graph by graph use it.
#pragma once
#include "kiln/ir/graph.h"
#include "kiln/ops/op.h"  // compiled_branches
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

// The main graph, then depth first the If branches the compiled runtime runs as planned graphs
// (ops::compiled_branches). Loop and Scan bodies, which run on the reference kernels, and the
// bodies of kiln's own ops are not visited: the fusion passes use this.
template <typename F>
void for_each_compiled_graph(Graph& g, F&& f) {
  f(g);
  std::vector<Graph*> subs;
  for (const auto& n : g.nodes())
    for (Graph* sg : ops::compiled_branches(*n)) subs.push_back(sg);
  for (Graph* sg : subs) for_each_compiled_graph(*sg, f);
}

}  // namespace kiln::passes

// dce: removes nodes none of whose outputs is used (repeatedly, so whole dead chains go),
// in the main graph and in every subgraph, then initializers nothing reads.
//
// Deliberately does not: remove graph inputs (the signature is the user's), initializers that
// are also graph inputs (defaults the caller may override), nodes without outputs, or outputs
// of a live multi-output node (an unused optional output stays; lowering ignores it).
#include <unordered_map>

#include "builtin_passes.h"
#include "walk.h"

namespace kiln::passes {
namespace {

using UseCounts = std::unordered_map<const Value*, int>;

// Every read of a value by n, its subgraphs included (subgraph outputs read values too).
template <typename F>
void for_each_read(const Node& n, F&& f) {
  for (const Value* v : n.inputs)
    if (v) f(v);
  for (const Graph* sg : n.subgraphs()) {
    for (const auto& sn : sg->nodes()) for_each_read(*sn, f);
    for (const Value* v : sg->outputs) f(v);
  }
}

size_t sweep_graph(Graph& g) {
  UseCounts uses;
  for (const auto& n : g.nodes()) for_each_read(*n, [&](const Value* v) { ++uses[v]; });
  for (const Value* v : g.outputs) ++uses[v];
  size_t removed = 0;
  auto& nodes = g.mutable_nodes();
  // Backwards: a node's readers come after it, so they are already gone when it is looked at.
  for (size_t i = nodes.size(); i-- > 0;) {
    Node* n = nodes[i].get();
    bool dead = !n->outputs.empty();
    for (const Value* o : n->outputs)
      if (o && uses[o] > 0) dead = false;
    if (!dead) continue;
    for_each_read(*n, [&](const Value* v) { --uses[v]; });
    g.remove_node(n);
    ++removed;
  }
  std::vector<Value*> unused;
  for (Value* v : g.initializers)
    if (uses[v] == 0 && std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end()) unused.push_back(v);
  for (Value* v : unused) g.remove_value(v);
  return removed + unused.size();
}

class DeadCodeElimination : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  std::string_view summary() const override {
    return "remove nodes whose outputs are unused (also in subgraphs) and unused initializers";
  }
  bool run(Model& m, PassContext&) override {
    // Subgraphs first: what they stop reading may make outer values dead.
    std::vector<Graph*> graphs;
    for_each_graph(*m.graph, [&](Graph& g) { graphs.push_back(&g); });
    size_t removed = 0;
    for (size_t i = graphs.size(); i-- > 0;) removed += sweep_graph(*graphs[i]);
    return removed > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce() { return std::make_unique<DeadCodeElimination>(); }

}  // namespace kiln::passes

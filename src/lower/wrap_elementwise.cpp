// Lone elementwise ops -> one-op kiln.FusedElementwise, so codegen gives them a vectorised loop.
//
// fuse-elementwise leaves groups of one alone (in the graph they gain nothing), but in the
// compiled runtime a plain Mul or Add runs the reference kernel: scalar broadcasting loops into
// a freshly allocated tensor, then a copy into the arena. As a generated kernel the same op is
// one vector loop writing its planned output (the per-channel excitation Mul of
// efficientnet_b0 and the residual Adds of bert_base are the cases that matter).
//
// Taken: ops the memory planner knows as elementwise by index (plan::memory_effect InPlace),
// f32 output of known rank, in the main graph. Not taken: Identity (a view already), integer or
// boolean results (shape arithmetic stays visible), nodes in subgraphs.
#include <map>

#include "kiln/ops/kiln_ops.h"
#include "kiln/plan/plan.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

bool lone_elementwise(const Node& n) {
  if (!n.domain.empty() || n.op == "Identity" || !n.subgraphs().empty()) return false;
  if (plan::memory_effect(n.domain, n.op) != plan::MemoryEffect::InPlace) return false;
  if (n.outputs.size() != 1 || !n.outputs[0] || n.outputs[0]->dtype != DType::f32) return false;
  if (!n.outputs[0]->shape.rank_known) return false;
  for (const Value* v : n.inputs)
    if (!v || !v->shape.rank_known || v->dtype == DType::undefined) return false;
  return true;
}

// A body name no enclosing value has (so nothing is shadowed).
std::string fresh(const Graph& outer, const Graph& body, const std::string& base) {
  std::string name = base;
  for (int i = 1; outer.find(name) || body.find_local(name); ++i) name = str_cat(base, "_", i);
  return name;
}

}  // namespace

int wrap_lone_elementwise(Graph& g) {
  int wrapped = 0;
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (!lone_elementwise(n)) continue;
    auto body = std::make_shared<Graph>();
    body->name = "fused";
    body->parent = &g;
    // Each distinct outer value becomes one body input (Mul(x, x) reads one).
    std::vector<Value*> outer_inputs, ins;
    std::map<const Value*, Value*> inner;
    for (Value* v : n.inputs) {
      if (!inner.count(v)) {
        inner[v] = body->add_input(fresh(g, *body, str_cat("in", outer_inputs.size())), v->dtype, v->shape);
        outer_inputs.push_back(v);
      }
      ins.push_back(inner[v]);
    }
    Node* copy = body->add_node(n.op, ins, {fresh(g, *body, "out0")}, n.attrs, n.name, n.domain);
    copy->outputs[0]->dtype = n.outputs[0]->dtype;
    copy->outputs[0]->shape = n.outputs[0]->shape;
    body->outputs = {copy->outputs[0]};
    n.op = "FusedElementwise";
    n.domain = std::string(ops::kKilnDomain);
    n.inputs = outer_inputs;
    n.attrs.clear();
    n.attrs["body"] = body;
    ++wrapped;
  }
  return wrapped;
}

}  // namespace kiln::lower

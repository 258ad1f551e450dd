// fuse-elementwise: groups of connected elementwise ops -> one kiln.FusedElementwise whose
// `body` subgraph holds them, so codegen can run the group as one loop nest over its output.
//
// A group grows backwards from a sink node: a producer joins when it is elementwise, has the
// group's output shape and every reader of its output is already in the group (so only the
// sink's result leaves the group and the group is convex: no path leaves it and comes back).
// Elementwise here: the unary math and activation ops, binary arithmetic/comparison with
// broadcasting, variadic Sum/Mean/Max/Min, Where, Clip, Cast, PRelu — producing f32/f16/bf16
// (integer shape arithmetic stays visible to shape inference). Not Softmax, reductions or
// data movement. Single-op groups are left alone.
//
// Inputs of the group that are constants with at most kInlineElements elements (scalars, short
// vectors) are copied into the body as initializers; larger constants and all other values
// become inputs of the fused node. The body's own input/output names are fresh (in0.., out0).
#include <algorithm>
#include <set>

#include "fuse_match.h"
#include "fuse_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/passes/rewrite.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr std::string_view kName = "fuse-elementwise";
constexpr int64_t kInlineElements = 64;

bool candidate(const Node& n) {
  if (!fuse::is_elementwise(n) || n.outputs.size() != 1 || !n.outputs[0]) return false;
  const Value* o = n.outputs[0];
  return fuse::is_fusable_float(o->dtype) && fuse::fully_known(o->shape);
}

class FuseElementwise : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "connected elementwise ops with one output shape -> kiln.FusedElementwise (body subgraph)";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_compiled_graph(*m.graph, [&](Graph& g) { changed |= run_graph(m, g, ctx); });
    return changed;
  }

  static bool run_graph(Model& m, Graph& g, PassContext& ctx) {
    const std::vector<Node*> order = node_list(g);
    std::set<const Node*> grouped, removed;
    bool changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* sink = *it;
      if (removed.count(sink) || grouped.count(sink) || !candidate(*sink)) continue;
      std::vector<Node*> group = grow(*sink);
      for (Node* n : group) grouped.insert(n);
      if (group.size() < 2) continue;
      fuse::import_kiln_domain(m);
      for (const Node* n : build(g, group, ctx)) removed.insert(n);
      changed = true;
    }
    return changed;
  }

  static std::vector<Node*> grow(Node& sink) {
    const Shape& shape = sink.outputs[0]->shape;
    std::set<const Node*> members = {&sink};
    std::vector<Node*> group = {&sink};
    // Repeat until stable: a producer read by two members joins once both are in.
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t i = 0; i < group.size(); ++i)
        for (Value* v : group[i]->inputs) {
          Node* p = v ? v->producer : nullptr;
          if (!p || members.count(p) || p->owner != sink.owner || !candidate(*p)) continue;
          if (p->outputs[0]->shape != shape || !fuse::used_only_by(v, members)) continue;
          members.insert(p);
          group.push_back(p);
          grew = true;
        }
    }
    return group;
  }

  // A name for a body value that no enclosing value keeps (so nothing is shadowed); names of
  // `leaving` (the group's intermediates, removed from the outer graph) may be reused.
  static std::string fresh(const Graph& outer, Graph& body, const std::string& base,
                           const std::set<std::string>& leaving = {}) {
    std::string name = base;
    for (int i = 1; (outer.find(name) && !leaving.count(name)) || body.find_local(name); ++i)
      name = str_cat(base, "_", i);
    return name;
  }

  static std::vector<const Node*> build(Graph& g, const std::vector<Node*>& group, PassContext& ctx) {
    // Members in graph order; the sink is the last.
    std::set<const Node*> members(group.begin(), group.end());
    std::vector<Node*> ordered;
    for (const auto& n : g.nodes())
      if (members.count(n.get())) ordered.push_back(n.get());
    Node* sink = ordered.back();
    std::set<std::string> leaving;
    for (const Node* n : ordered)
      if (n != sink) leaving.insert(n->outputs[0]->name);
    auto body = std::make_shared<Graph>();
    body->name = "fused";
    std::map<const Value*, Value*> inner;  // outer value -> body value
    std::vector<Value*> node_inputs;
    int consts = 0;
    for (Node* n : ordered)
      for (Value* v : n->inputs) {
        if (!v || inner.count(v) || (v->producer && members.count(v->producer))) continue;
        const Tensor* c = fuse::constant_value(v);
        if (c && c->numel() <= kInlineElements) {
          inner[v] = body->add_initializer(fresh(g, *body, str_cat("c", consts++)), *c);
        } else {
          inner[v] = body->add_input(fresh(g, *body, str_cat("in", node_inputs.size())), v->dtype, v->shape);
          node_inputs.push_back(v);
        }
      }
    for (Node* n : ordered) {
      std::vector<Value*> ins;
      for (Value* v : n->inputs) ins.push_back(v ? inner.at(v) : nullptr);
      std::string out = n == sink ? fresh(g, *body, "out0") : fresh(g, *body, n->outputs[0]->name, leaving);
      Node* copy = body->add_node(n->op, ins, {out}, n->attrs, n->name, n->domain);
      copy->outputs[0]->dtype = n->outputs[0]->dtype;
      copy->outputs[0]->shape = n->outputs[0]->shape;
      inner[n->outputs[0]] = copy->outputs[0];
    }
    body->outputs = {inner.at(sink->outputs[0])};
    std::string ops_list;
    for (const Node* n : ordered) ops_list += (ops_list.empty() ? "" : ",") + n->op;
    std::vector<const Node*> gone;
    Node* fused = fuse::replace_group(g, ordered, sink->outputs[0], "FusedElementwise", node_inputs, {{"body", body}},
                                      std::string(ops::kKilnDomain), *sink, &gone);
    ctx.applied(kName, *fused, str_cat(ordered.size(), " nodes (", ops_list, ") -> FusedElementwise"));
    return gone;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_elementwise() { return std::make_unique<FuseElementwise>(); }

}  // namespace kiln::passes

// Rewriter and PatternPass: the local-rewrite machinery behind rewrite.h.
#include "kiln/passes/rewrite.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "kiln/ops/op.h"

namespace kiln::passes {

const Tensor* constant_of(const Value* v) {
  if (!v || !v->initializer) return nullptr;
  // A graph input with a default initializer can be overridden at run time: not a constant.
  const Graph* g = v->owner;
  if (g && std::find(g->inputs.begin(), g->inputs.end(), v) != g->inputs.end()) return nullptr;
  return &*v->initializer;
}

bool is_graph_output(const Value* v) {
  if (!v || !v->owner) return false;
  const auto& outs = v->owner->outputs;
  return std::find(outs.begin(), outs.end(), v) != outs.end();
}

std::vector<Node*> users_of(const Value* v) {
  if (!v || !v->owner) return {};
  return v->owner->users(v);
}

bool has_single_use(const Value* v) {
  if (!v || is_graph_output(v)) return false;
  std::vector<Node*> u = users_of(v);
  if (u.size() != 1) return false;
  return std::count(u[0]->inputs.begin(), u[0]->inputs.end(), v) == 1;
}

bool can_replace_without_copy(const Value* from, const Value* to) {
  if (!is_graph_output(from)) return true;
  return to && to->producer && to->owner == from->owner && !is_graph_output(to);
}

Rewriter::Rewriter(Model& model, Graph& graph, Node* insertion_point)
    : model_(&model), graph_(&graph), before_(insertion_point) {}

void Rewriter::insert_before_point(Node* n) {
  auto& nodes = graph_->mutable_nodes();
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& p) { return p.get() == before_; });
  if (it != nodes.end()) std::rotate(it, nodes.end() - 1, nodes.end());
  (void)n;
}

void Rewriter::infer(Node& n) {
  const ops::OpDef* def = ops::find_op(n.domain, n.op);
  if (!def || !def->infer) return;
  ops::InferContext c(n, model_->opset(""));
  def->infer(c);
}

Node* Rewriter::create(const std::string& op, const std::vector<Value*>& inputs, std::map<std::string, Attribute> attrs,
                       size_t num_outputs, const std::string& domain) {
  std::string node_name = graph_->unique_name(op);
  std::vector<std::string> outs;
  for (size_t i = 0; i < num_outputs; ++i) {
    std::string base = num_outputs == 1 ? node_name + "_out" : str_cat(node_name, "_out", i);
    outs.push_back(graph_->unique_name(base));  // distinct bases: no two outputs get one name
  }
  Node* n = graph_->add_node(op, inputs, outs, std::move(attrs), node_name, domain);
  insert_before_point(n);
  ++created_;
  infer(*n);
  return n;
}

Value* Rewriter::constant(const std::string& base, Tensor t) {
  return graph_->add_initializer(graph_->unique_name(base), std::move(t));
}

void Rewriter::make_constant(Value* v, Tensor t) {
  KILN_CHECK(v && v->producer && v->owner == graph_, "make_constant: '", v ? v->name : "?",
             "' is not a node output of this graph");
  for (auto& o : v->producer->outputs)
    if (o == v) o = nullptr;
  v->producer = nullptr;
  v->dtype = t.dtype();
  v->shape = Shape::of(t.dims());
  v->initializer = std::move(t);
  graph_->initializers.push_back(v);
}

// `from` keeps its name and graph-output position; the node that made `to` now makes `from`.
void Rewriter::take_over_name(Value* from, Value* to) {
  Graph& g = *from->owner;
  KILN_CHECK(std::find(g.inputs.begin(), g.inputs.end(), from) == g.inputs.end(), "replace: graph input '",
             from->name, "' cannot be replaced");
  g.replace_all_uses(to, from);
  Node* maker = to->producer;
  for (auto& o : maker->outputs)
    if (o == to) o = from;
  if (from->producer)
    for (auto& o : from->producer->outputs)
      if (o == from) o = nullptr;
  if (from->initializer) {
    from->initializer.reset();
    g.initializers.erase(std::remove(g.initializers.begin(), g.initializers.end(), from), g.initializers.end());
  }
  from->producer = maker;
  // Keep what is known about `from` where the new maker's output is not inferred (an op
  // outside the op table, e.g. one a plugin adds).
  if (to->dtype != DType::undefined) from->dtype = to->dtype;
  if (to->shape.rank_known) from->shape = to->shape;
  to->producer = nullptr;
  g.remove_value(to);
}

void Rewriter::replace(Value* from, Value* to) {
  KILN_CHECK(from && to, "replace: null value");
  if (from == to) return;
  if (!is_graph_output(from)) {
    from->owner->replace_all_uses(from, to);
    return;
  }
  if (can_replace_without_copy(from, to)) {
    take_over_name(from, to);
    return;
  }
  // `to` cannot take the name (a graph input, a constant, another output): copy it.
  Graph* saved = graph_;
  graph_ = from->owner;
  Node* copy = create("Identity", {to});
  graph_ = saved;
  take_over_name(from, copy->outputs[0]);
}

void Rewriter::erase(Node* n) {
  KILN_CHECK(n != nullptr, "erase: null node");
  n->owner->remove_node(n);
  ++erased_;
  erased_nodes_.insert(n);
}

size_t Rewriter::erase_if_dead(Node* root) {
  size_t count = 0;
  std::vector<Node*> work = {root};
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (erased_nodes_.count(n)) continue;
    bool dead = true;
    for (const Value* o : n->outputs)
      if (o && (is_graph_output(o) || !users_of(o).empty())) dead = false;
    if (!dead) continue;
    std::vector<Node*> producers;
    for (const Value* in : n->inputs)
      if (in && in->producer && in->owner == n->owner) producers.push_back(in->producer);
    erase(n);
    ++count;
    for (Node* p : producers) work.push_back(p);
  }
  return count;
}

bool PatternPass::run(Model& m, PassContext& ctx) { return run_graph(m, *m.graph, ctx); }

bool PatternPass::run_graph(Model& m, Graph& g, PassContext& ctx) {
  bool changed_any = false;
  for (const auto& n : g.nodes())
    for (Graph* sg : n->subgraphs()) changed_any |= run_graph(m, *sg, ctx);

  std::map<std::pair<std::string, std::string>, std::vector<const RewritePattern*>> by_root;
  for (const auto& p : patterns_)
    for (const auto& op : p->root_ops()) by_root[{p->root_domain(), op}].push_back(p.get());

  for (int round = 0; round < max_rounds_; ++round) {
    const std::vector<Node*> snapshot = node_list(g);
    Rewriter rw(m, g, nullptr);
    std::vector<Remark> declined_remarks;
    bool changed = false;
    for (Node* n : snapshot) {
      if (rw.was_erased(n)) continue;
      auto it = by_root.find({n->domain == "ai.onnx" ? "" : n->domain, n->op});
      if (it == by_root.end()) continue;
      for (const RewritePattern* p : it->second) {
        Decision d = p->match(*n, m);
        if (!d) {
          declined_remarks.push_back(Remark{name_, n->describe(), false, p->name() + ": " + d.reason()});
          continue;
        }
        ctx.applied(name_, *n, p->describe_apply(*n));
        rw.set_insertion_point(n);
        p->apply(*n, rw);
        rw.erase_if_dead(n);
        changed = true;
        break;  // the root may be gone; later patterns see it next round
      }
    }
    changed_any |= changed;
    // Declines are reported once, from the round that found nothing more to do.
    if (!changed || round + 1 == max_rounds_) {
      if (ctx.explain)
        for (auto& r : declined_remarks) ctx.remarks.push_back(std::move(r));
      break;
    }
  }
  return changed_any;
}

}  // namespace kiln::passes

#include "fuse_match.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "kiln/ops/kiln_ops.h"

namespace kiln::passes::fuse {

const Tensor* constant_value(const Value* v) {
  if (v == nullptr) return nullptr;
  if (v->initializer) return &*v->initializer;
  const Node* p = v->producer;
  if (p && p->op == "Constant" && p->domain.empty()) {
    const Attribute* a = p->find_attr("value");
    if (a && a->kind() == AttrKind::Tensor) return &a->t();
  }
  return nullptr;
}

bool is_constant(const Value* v) { return constant_value(v) != nullptr; }

std::optional<double> scalar_constant(const Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->numel() != 1 || t->dtype() == DType::boolean) return std::nullopt;
  return t->as_double(0);
}

bool is_scalar(const Value* v, double want, double rtol) {
  auto s = scalar_constant(v);
  return s && std::abs(*s - want) <= rtol * std::max(1.0, std::abs(want));
}

bool is_graph_output(const Value* v) {
  const Graph* g = v->owner;
  return g && std::find(g->outputs.begin(), g->outputs.end(), v) != g->outputs.end();
}

std::vector<Node*> users(const Value* v) { return v->owner ? v->owner->users(v) : std::vector<Node*>{}; }

bool used_only_by(const Value* v, const std::set<const Node*>& allowed) {
  if (is_graph_output(v)) return false;
  for (const Node* u : users(v))
    if (!allowed.count(u)) return false;
  return true;
}

Node* single_user(const Value* v) {
  if (v == nullptr || is_graph_output(v)) return nullptr;
  std::vector<Node*> u = users(v);
  return u.size() == 1 ? u[0] : nullptr;
}

bool is_onnx(const Node& n, std::string_view op) {
  return n.op == op && (n.domain.empty() || n.domain == "ai.onnx");
}

Node* produced_by(const Value* v, std::string_view op) {
  return v && v->producer && is_onnx(*v->producer, op) ? v->producer : nullptr;
}

Value* other_operand(const Node& n, const Value* v) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
  if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
  return nullptr;
}

std::optional<std::pair<Value*, Value*>> split_constant(const Node& n) {
  if (n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1]) return std::nullopt;
  bool c0 = is_constant(n.inputs[0]), c1 = is_constant(n.inputs[1]);
  if (c0 == c1) return std::nullopt;
  return c0 ? std::make_pair(n.inputs[0], n.inputs[1]) : std::make_pair(n.inputs[1], n.inputs[0]);
}

bool is_elementwise(const Node& n) {
  static const std::set<std::string> ops = {
      // unary
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Erf", "Exp", "Floor", "Log",
      "Neg", "Reciprocal", "Round", "Sign", "Sin", "Sinh", "Sqrt", "Tan", "Tanh", "Identity",
      // activations
      "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Elu", "Celu", "Selu", "Softplus", "Softsign",
      "ThresholdedRelu", "Mish", "Gelu", "PRelu",
      // binary and variadic with broadcasting
      "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean",
      // selection, bounds, conversion
      "Where", "Clip", "Cast"};
  return (n.domain.empty() || n.domain == "ai.onnx") && ops.count(n.op) && n.subgraphs().empty();
}

bool is_fusable_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

bool fully_known(const Shape& s) {
  return s.rank_known && std::none_of(s.dims.begin(), s.dims.end(), [](const Dim& d) { return d.is_unknown(); });
}

Node* insert_before(Graph& g, Node* anchor, const std::string& op, const std::vector<Value*>& inputs,
                    const std::vector<std::string>& output_names, std::map<std::string, Attribute> attrs,
                    const std::string& name, const std::string& domain) {
  Node* n = g.add_node(op, inputs, output_names, std::move(attrs), name, domain);
  auto& nodes = g.mutable_nodes();
  auto at = std::find_if(nodes.begin(), nodes.end(), [&](const auto& p) { return p.get() == anchor; });
  KILN_CHECK(at != nodes.end(), "insert_before: ", anchor->describe(), " is not in graph '", g.name, "'");
  std::unique_ptr<Node> owned = std::move(nodes.back());
  nodes.pop_back();
  at = std::find_if(nodes.begin(), nodes.end(), [&](const auto& p) { return p.get() == anchor; });
  nodes.insert(at, std::move(owned));
  return n;
}

void take_over(Node* n, size_t i, Value* v) {
  Graph& g = *n->owner;
  Value* placeholder = n->outputs.at(i);
  if (Node* old = v->producer) {
    for (Value*& o : old->outputs)
      if (o == v) {
        o = placeholder;
        placeholder->producer = old;
      }
  }
  n->outputs[i] = v;
  v->producer = n;
  KILN_CHECK(v->owner == &g, "take_over: '", v->name, "' belongs to another graph");
}

std::vector<const Node*> remove_dead(Graph& g, const std::vector<Node*>& candidates) {
  std::set<Node*> pending(candidates.begin(), candidates.end());
  std::vector<const Node*> removed;
  for (bool progress = true; progress;) {
    progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      Node* n = *it;
      bool dead = std::all_of(n->outputs.begin(), n->outputs.end(),
                              [](const Value* o) { return !o || (users(o).empty() && !is_graph_output(o)); });
      if (!dead) {
        ++it;
        continue;
      }
      std::vector<Value*> ins = n->inputs;
      g.remove_node(n);
      it = pending.erase(it);
      removed.push_back(n);
      progress = true;
      // A Constant node that fed only the removed node dies with it.
      for (Value* in : ins)
        if (in && in->producer && is_onnx(*in->producer, "Constant") && in->owner == &g) pending.insert(in->producer);
    }
  }
  return removed;
}

Node* replace_group(Graph& g, const std::vector<Node*>& group, Value* out, const std::string& op,
                    const std::vector<Value*>& inputs, std::map<std::string, Attribute> attrs,
                    const std::string& domain, const Node& name_from, std::vector<const Node*>* removed) {
  std::string name = name_from.name;
  Node* n = insert_before(g, last_in_order(g, group), op, inputs, {g.unique_name(out->name + ".fused")},
                          std::move(attrs), "", domain);
  take_over(n, 0, out);
  std::vector<const Node*> gone = remove_dead(g, group);
  n->name = name;  // name_from may be gone: the new node carries its name
  if (removed) removed->insert(removed->end(), gone.begin(), gone.end());
  return n;
}

Node* last_in_order(const Graph& g, const std::vector<Node*>& nodes) {
  std::set<const Node*> wanted(nodes.begin(), nodes.end());
  Node* last = nullptr;
  for (const auto& n : g.nodes())
    if (wanted.count(n.get())) last = n.get();
  KILN_CHECK(last != nullptr, "last_in_order: none of the nodes is in graph '", g.name, "'");
  return last;
}

void topo_sort(Graph& g) {
  auto& nodes = g.mutable_nodes();
  std::map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].get()] = i;
  // Producers (in this graph) each node waits for, also through values its subgraphs read.
  std::vector<std::vector<size_t>> waits_for(nodes.size());
  std::function<void(const Node&, size_t)> collect = [&](const Node& n, size_t who) {
    for (const Value* v : n.inputs)
      if (v && v->producer && index.count(v->producer) && v->producer != nodes[who].get())
        waits_for[who].push_back(index[v->producer]);
    for (const Graph* sg : n.subgraphs()) {
      for (const auto& sn : sg->nodes()) collect(*sn, who);
      for (const Value* v : sg->outputs)
        if (v && v->producer && index.count(v->producer)) waits_for[who].push_back(index[v->producer]);
    }
  };
  for (size_t i = 0; i < nodes.size(); ++i) collect(*nodes[i], i);
  std::vector<std::unique_ptr<Node>> sorted;
  std::vector<bool> placed(nodes.size(), false);
  // Repeatedly take the first node (in current order) whose producers are all placed.
  while (sorted.size() < nodes.size()) {
    bool progress = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (placed[i]) continue;
      bool ready = std::all_of(waits_for[i].begin(), waits_for[i].end(), [&](size_t p) { return placed[p]; });
      if (!ready) continue;
      placed[i] = true;
      sorted.push_back(std::move(nodes[i]));
      progress = true;
    }
    KILN_CHECK(progress, "graph '", g.name, "': a rewrite created a cycle");
  }
  nodes = std::move(sorted);
}

void import_kiln_domain(Model& m) { m.opsets[std::string(ops::kKilnDomain)] = ops::kKilnOpsetVersion; }

Value* add_f32_constant(Graph& g, const std::string& base, std::vector<int64_t> dims, const std::vector<float>& v) {
  return g.add_initializer(g.unique_name(base), Tensor::from_vector<float>(std::move(dims), v));
}

}  // namespace kiln::passes::fuse

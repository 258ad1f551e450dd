#include "kiln/ir/graph.h"

#include <algorithm>
#include <set>

namespace kiln {

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Tensor: return "tensor";
    case AttrKind::Graph: return "graph";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
    case AttrKind::Strings: return "strings";
  }
  return "?";
}

int64_t Node::attr_i(const std::string& k, int64_t dflt) const {
  const Attribute* a = find_attr(k);
  if (!a) return dflt;
  KILN_CHECK(a->kind() == AttrKind::Int, describe(), ": attribute '", k, "' must be an int, got ",
             attr_kind_name(a->kind()));
  return a->i();
}

float Node::attr_f(const std::string& k, float dflt) const {
  const Attribute* a = find_attr(k);
  if (!a) return dflt;
  if (a->kind() == AttrKind::Int) return static_cast<float>(a->i());
  KILN_CHECK(a->kind() == AttrKind::Float, describe(), ": attribute '", k, "' must be a float, got ",
             attr_kind_name(a->kind()));
  return a->f();
}

std::string Node::attr_s(const std::string& k, const std::string& dflt) const {
  const Attribute* a = find_attr(k);
  if (!a) return dflt;
  KILN_CHECK(a->kind() == AttrKind::String, describe(), ": attribute '", k, "' must be a string, got ",
             attr_kind_name(a->kind()));
  return a->s();
}

std::vector<int64_t> Node::attr_ints(const std::string& k, const std::vector<int64_t>& dflt) const {
  const Attribute* a = find_attr(k);
  if (!a) return dflt;
  KILN_CHECK(a->kind() == AttrKind::Ints, describe(), ": attribute '", k, "' must be ints, got ",
             attr_kind_name(a->kind()));
  return a->ints();
}

std::vector<float> Node::attr_floats(const std::string& k, const std::vector<float>& dflt) const {
  const Attribute* a = find_attr(k);
  if (!a) return dflt;
  KILN_CHECK(a->kind() == AttrKind::Floats, describe(), ": attribute '", k, "' must be floats, got ",
             attr_kind_name(a->kind()));
  return a->floats();
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [k, a] : attrs)
    if (a.kind() == AttrKind::Graph && a.g()) out.push_back(a.g().get());
  return out;
}

std::string Node::describe() const { return str_cat(op, " node '", name, "'"); }

Value* Graph::add_value(const std::string& name, DType dtype, Shape shape) {
  KILN_CHECK(!name.empty(), "graph '", this->name, "': empty value name");
  KILN_CHECK(by_name_.count(name) == 0, "graph '", this->name, "': value '", name, "' is defined twice");
  auto v = std::make_unique<Value>();
  v->name = name;
  v->dtype = dtype;
  v->shape = std::move(shape);
  v->owner = this;
  Value* p = v.get();
  values_.push_back(std::move(v));
  by_name_[name] = p;
  return p;
}

Value* Graph::add_input(const std::string& name, DType dtype, Shape shape) {
  Value* v = add_value(name, dtype, std::move(shape));
  inputs.push_back(v);
  return v;
}

Value* Graph::add_initializer(const std::string& name, Tensor t) {
  Shape s = Shape::of(t.dims());
  Value* v = add_value(name, t.dtype(), std::move(s));
  v->initializer = std::move(t);
  initializers.push_back(v);
  return v;
}

Node* Graph::add_node(const std::string& op, const std::vector<Value*>& ins,
                      const std::vector<std::string>& output_names, std::map<std::string, Attribute> attrs,
                      const std::string& name, const std::string& domain) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->domain = domain;
  n->name = name.empty() ? unique_name(op) : name;
  n->inputs = ins;
  n->attrs = std::move(attrs);
  n->owner = this;
  for (const auto& on : output_names) {
    if (on.empty()) {
      n->outputs.push_back(nullptr);
      continue;
    }
    Value* v = add_value(on);
    v->producer = n.get();
    n->outputs.push_back(v);
  }
  for (auto& [k, a] : n->attrs)
    if (a.kind() == AttrKind::Graph && a.g()) a.g()->parent = this;
  Node* p = n.get();
  nodes_.push_back(std::move(n));
  return p;
}

Value* Graph::find_local(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::find(const std::string& name) const {
  for (const Graph* g = this; g != nullptr; g = g->parent)
    if (Value* v = g->find_local(name)) return v;
  return nullptr;
}

void Graph::remove_node(Node* n) {
  for (Value* o : n->outputs) {
    if (!o) continue;
    KILN_CHECK(users(o).empty(), "cannot remove ", n->describe(), ": output '", o->name, "' is still used");
    KILN_CHECK(std::find(outputs.begin(), outputs.end(), o) == outputs.end(), "cannot remove ", n->describe(),
               ": output '", o->name, "' is a graph output");
  }
  for (Value* o : n->outputs) {
    if (!o) continue;
    by_name_.erase(o->name);
    values_.erase(std::remove_if(values_.begin(), values_.end(), [&](const auto& v) { return v.get() == o; }),
                  values_.end());
  }
  nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(), [&](const auto& x) { return x.get() == n; }),
               nodes_.end());
}

void Graph::remove_value(Value* v) {
  KILN_CHECK(v && v->owner == this, "graph '", name, "': cannot remove a value it does not own");
  KILN_CHECK(v->producer == nullptr, "cannot remove value '", v->name, "': ", v->producer->describe(),
             " still produces it");
  KILN_CHECK(users(v).empty(), "cannot remove value '", v->name, "': it is still used");
  KILN_CHECK(std::find(outputs.begin(), outputs.end(), v) == outputs.end(), "cannot remove value '", v->name,
             "': it is a graph output");
  KILN_CHECK(std::find(inputs.begin(), inputs.end(), v) == inputs.end(), "cannot remove value '", v->name,
             "': it is a graph input");
  initializers.erase(std::remove(initializers.begin(), initializers.end(), v), initializers.end());
  by_name_.erase(v->name);
  values_.erase(std::remove_if(values_.begin(), values_.end(), [&](const auto& x) { return x.get() == v; }),
                values_.end());
}

std::vector<Node*> Graph::users(const Value* v) const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    bool uses = std::find(n->inputs.begin(), n->inputs.end(), v) != n->inputs.end();
    if (!uses) {
      for (Graph* sg : n->subgraphs()) {
        if (!sg->users(v).empty() ||
            std::find(sg->outputs.begin(), sg->outputs.end(), v) != sg->outputs.end()) {
          uses = true;
          break;
        }
      }
    }
    if (uses) out.push_back(n.get());
  }
  return out;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_) {
    for (auto& in : n->inputs)
      if (in == from) in = to;
    for (Graph* sg : n->subgraphs()) sg->replace_all_uses(from, to);
  }
  for (auto& o : outputs)
    if (o == from) o = to;
}

std::string Graph::unique_name(const std::string& base) {
  std::string b = base.empty() ? "v" : base;
  if (!find(b)) {
    // Reserve nothing: callers create the value right away.
    bool used = false;
    for (const auto& n : nodes_) used |= n->name == b;
    if (!used) return b;
  }
  for (;;) {
    std::string cand = str_cat(b, "_", ++name_counter_);
    if (find(cand)) continue;
    bool used = false;
    for (const auto& n : nodes_) used |= n->name == cand;
    if (!used) return cand;
  }
}

namespace {
void verify_graph(const Graph& g, std::set<const Value*>& visible) {
  std::set<const Value*> local;
  auto define = [&](const Value* v, const char* what) {
    KILN_CHECK(v != nullptr, "graph '", g.name, "': null ", what);
    KILN_CHECK(local.insert(v).second, "graph '", g.name, "': value '", v->name, "' is defined twice");
    visible.insert(v);
  };
  for (const Value* v : g.inputs) define(v, "input");
  for (const Value* v : g.initializers) {
    KILN_CHECK(v->initializer.has_value(), "graph '", g.name, "': initializer '", v->name, "' has no data");
    if (!local.count(v)) define(v, "initializer");  // an input may also have a default initializer
  }
  std::set<std::string> node_names;
  for (const auto& n : g.nodes()) {
    KILN_CHECK(n->owner == &g, n->describe(), ": node is not owned by graph '", g.name, "'");
    KILN_CHECK(node_names.insert(n->name).second, "graph '", g.name, "': two nodes are named '", n->name, "'");
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      if (in == nullptr) continue;
      KILN_CHECK(visible.count(in), n->describe(), ": input ", i, " '", in->name,
                 "' is used before it is defined (or is not in scope)");
    }
    std::set<const Value*> inner = visible;
    for (const Graph* sg : n->subgraphs()) {
      KILN_CHECK(sg->parent == &g, n->describe(), ": subgraph '", sg->name, "' does not point back to its parent");
      std::set<const Value*> scope = visible;
      verify_graph(*sg, scope);
    }
    for (const Value* o : n->outputs) {
      if (o == nullptr) continue;
      KILN_CHECK(o->producer == n.get(), n->describe(), ": output '", o->name, "' does not point back to it");
      define(o, "output");
    }
  }
  for (const Value* o : g.outputs) {
    KILN_CHECK(o != nullptr, "graph '", g.name, "': null graph output");
    KILN_CHECK(visible.count(o), "graph '", g.name, "': output '", o->name, "' is never produced");
  }
}
}  // namespace

void verify_structure(const Graph& g) {
  std::set<const Value*> visible;
  // Values of enclosing graphs are in scope for a subgraph verified on its own.
  for (const Graph* p = g.parent; p != nullptr; p = p->parent)
    for (const auto& v : p->values()) visible.insert(v.get());
  verify_graph(g, visible);
}

}  // namespace kiln

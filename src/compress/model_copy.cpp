// copy_model: the main graph rebuilt value by value (initializer storage shared).
#include "kiln/compress/model_copy.h"

#include <unordered_map>

namespace kiln::compress {

bool copyable(const Model& m) {
  for (const auto& n : m.graph->nodes())
    if (!n->subgraphs().empty()) return false;
  return true;
}

Model copy_model(const Model& m) {
  KILN_CHECK(copyable(m), "copy_model: the model has control-flow subgraphs");
  const Graph& src = *m.graph;
  Model out;
  out.opsets = m.opsets;
  out.ir_version = m.ir_version;
  out.producer_name = m.producer_name;
  out.producer_version = m.producer_version;
  out.source_path = m.source_path;
  Graph& g = *out.graph;
  g.name = src.name;
  std::unordered_map<const Value*, Value*> map;
  for (const Value* in : src.inputs) {
    Value* v = g.add_input(in->name, in->dtype, in->shape);
    v->initializer = in->initializer;
    map[in] = v;
  }
  for (const Value* c : src.initializers) {
    if (map.count(c)) {  // a graph input with a default
      g.initializers.push_back(map[c]);
      continue;
    }
    Value* v = g.add_initializer(c->name, *c->initializer);
    v->shape = c->shape;
    map[c] = v;
  }
  for (const auto& up : src.nodes()) {
    const Node& n = *up;
    std::vector<Value*> ins;
    for (const Value* i : n.inputs) {
      if (!i) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = map.find(i);
      KILN_CHECK(it != map.end(), "copy_model: ", n.describe(), " reads ", i->name, ", defined nowhere before it");
      ins.push_back(it->second);
    }
    std::vector<std::string> names;
    for (const Value* o : n.outputs) names.push_back(o ? o->name : "");
    Node* c = g.add_node(n.op, ins, names, n.attrs, n.name, n.domain);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (const Value* o = n.outputs[k]) {
        c->outputs[k]->dtype = o->dtype;
        c->outputs[k]->shape = o->shape;
        map[o] = c->outputs[k];
      }
  }
  for (const Value* o : src.outputs) g.outputs.push_back(map.at(o));
  return out;
}

}  // namespace kiln::compress

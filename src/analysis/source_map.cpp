// map_sources: original nodes covered by each optimized node, from value names (source_map.h).
#include "kiln/analysis/source_map.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ops/op.h"

namespace kiln::analysis {

SourceMap map_sources(const Graph& original, const Graph& compiled) {
  std::unordered_set<std::string> kept;  // value names the compiled graph still has
  for (const auto& v : compiled.values()) kept.insert(v->name);
  std::unordered_map<std::string, const Node*> producer;
  std::unordered_map<const Node*, size_t> order;
  for (size_t i = 0; i < original.nodes().size(); ++i) {
    const Node* n = original.nodes()[i].get();
    order[n] = i;
    for (const Value* o : n->outputs)
      if (o) producer[o->name] = n;
  }
  SourceMap out;
  for (const auto& cn : compiled.nodes()) {
    std::set<size_t> covered;  // by original order
    std::vector<std::string> pending;
    for (const Value* o : cn->outputs)
      if (o) pending.push_back(o->name);
    while (!pending.empty()) {
      std::string name = pending.back();
      pending.pop_back();
      auto it = producer.find(name);
      if (it == producer.end() || !covered.insert(order[it->second]).second) continue;
      for (const Value* in : it->second->inputs) {
        if (!in || in->initializer || in->producer == nullptr || kept.count(in->name)) continue;
        pending.push_back(in->name);
      }
    }
    std::vector<SourceNode> nodes;
    for (size_t i : covered) {
      const Node& n = *original.nodes()[i];
      SourceNode s{n.name, n.domain.empty() ? n.op : n.domain + "." + n.op};
      if (auto c = ops::node_cost(n)) {
        s.flops = c->flops;
        s.bytes = c->bytes_read + c->bytes_written;
      }
      nodes.push_back(std::move(s));
    }
    if (!nodes.empty()) out[cn->name] = std::move(nodes);
  }
  // The steps of If branches (the compiled runtime times them too) map within their branches.
  std::unordered_map<std::string, const Node*> by_name;
  for (const auto& n : original.nodes()) by_name.emplace(n->name, n.get());
  for (const auto& cn : compiled.nodes()) {
    const std::vector<Graph*> cb = ops::compiled_branches(*cn);
    const auto it = by_name.find(cn->name);
    if (cb.empty() || it == by_name.end()) continue;
    const std::vector<Graph*> ob = ops::compiled_branches(*it->second);
    for (size_t b = 0; b < cb.size() && b < ob.size(); ++b) out.merge(map_sources(*ob[b], *cb[b]));
  }
  return out;
}

}  // namespace kiln::analysis

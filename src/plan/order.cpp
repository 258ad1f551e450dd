// Execution orders: the graph's own (already topological) and a memory-aware greedy one.
#include <numeric>
#include <unordered_set>

#include "plan_internal.h"

namespace kiln::plan {

void collect_reads(const Node& n, std::vector<const Value*>& out) {
  for (const Value* v : n.inputs)
    if (v) out.push_back(v);
  for (const Graph* sg : n.subgraphs()) {
    for (const auto& sn : sg->nodes()) collect_reads(*sn, out);
    for (const Value* v : sg->outputs) out.push_back(v);
  }
}

std::vector<int> graph_order(const Graph& g) {
  std::vector<int> order(g.nodes().size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<int> memory_aware_order(const Graph& g, const std::unordered_map<const Value*, int64_t>& bytes_of) {
  const auto& nodes = g.nodes();
  const int n = static_cast<int>(nodes.size());
  std::unordered_map<const Node*, int> index;
  for (int i = 0; i < n; ++i) index[nodes[i].get()] = i;

  // Per node: the distinct values of this graph it reads, and the nodes that must run first.
  std::vector<std::vector<const Value*>> reads(n);
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> consumers(n);
  std::unordered_map<const Value*, int> readers_left;
  for (int i = 0; i < n; ++i) {
    std::vector<const Value*> all;
    collect_reads(*nodes[i], all);
    std::unordered_set<const Value*> seen;
    std::unordered_set<int> deps;
    for (const Value* v : all) {
      if (!seen.insert(v).second) continue;
      reads[i].push_back(v);
      ++readers_left[v];
      if (v->producer && v->owner == &g) {
        auto it = index.find(v->producer);
        if (it != index.end() && it->second != i && deps.insert(it->second).second) consumers[it->second].push_back(i);
      }
    }
    waiting[i] = static_cast<int>(deps.size());
  }
  std::unordered_set<const Value*> outputs(g.outputs.begin(), g.outputs.end());
  auto bytes = [&](const Value* v) {
    auto it = bytes_of.find(v);
    return it == bytes_of.end() ? int64_t{0} : it->second;
  };

  std::vector<int> order;
  std::vector<bool> ready(n, false), done(n, false);
  for (int i = 0; i < n; ++i) ready[i] = waiting[i] == 0;
  while (static_cast<int>(order.size()) < n) {
    int best = -1;
    int64_t best_net = 0;
    for (int i = 0; i < n; ++i) {
      if (!ready[i] || done[i]) continue;
      int64_t net = 0;
      for (const Value* o : nodes[i]->outputs)
        if (o) net += bytes(o);
      for (const Value* v : reads[i])
        if (readers_left[v] == 1 && v->producer && !outputs.count(v)) net -= bytes(v);
      if (best < 0 || net < best_net) {
        best = i;
        best_net = net;
      }
    }
    KILN_CHECK(best >= 0, "graph '", g.name, "': nodes form a cycle");
    done[best] = true;
    order.push_back(best);
    for (const Value* v : reads[best]) --readers_left[v];
    for (int c : consumers[best])
      if (--waiting[c] == 0) ready[c] = true;
  }
  return order;
}

}  // namespace kiln::plan

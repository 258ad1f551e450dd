// `kiln profile --vs ort` (profile_peer.h).
#include "kiln/analysis/profile_peer.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace kiln::analysis {
namespace {

// The key of `names` that `s` starts with, followed in `s` by '_' (or by nothing when
// `whole_ok`), the longest if several; nullptr when none.
const Node* longest_prefix(const std::map<std::string, const Node*>& names, const std::string& s, bool whole_ok) {
  const Node* best = nullptr;
  size_t best_len = 0;
  for (const auto& [k, node] : names) {
    if (k.empty() || k.size() <= best_len || k.size() > s.size() || s.compare(0, k.size(), k) != 0) continue;
    const bool whole = k.size() == s.size();
    if ((whole && whole_ok) || (!whole && s[k.size()] == '_')) best = node, best_len = k.size();
  }
  return best;
}

// The original graph's node and tensor names, for peer_source_node's rules.
struct SourceNames {
  std::map<std::string, const Node*> by_node, by_tensor;  // tensor: its producer
  explicit SourceNames(const Graph& g) {
    for (const auto& n : g.nodes()) {
      if (!n->name.empty()) by_node[n->name] = n.get();
      for (const Value* v : n->outputs)
        if (v && !v->name.empty()) by_tensor[v->name] = n.get();
    }
  }
  const Node* find(const std::string& peer_name) const {
    std::string name = peer_name;
    if (name.rfind("fused ", 0) == 0) name = name.substr(6);
    if (name.empty()) return nullptr;
    if (auto it = by_node.find(name); it != by_node.end()) return it->second;
    if (const Node* n = longest_prefix(by_tensor, name, true)) return n;
    return longest_prefix(by_node, name, false);
  }
};

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

const Node* peer_source_node(const Graph& source, const std::string& peer_name) {
  return SourceNames(source).find(peer_name);
}

PeerComparison compare_with_peer(const Profile& p, const Graph& source, const std::vector<PeerNode>& peer,
                                 double peer_run_ms) {
  PeerComparison c;
  c.kiln_plain_ms = p.plain_ms, c.peer_run_ms = peer_run_ms, c.kiln_kernel_ms = p.kernel_ms;
  std::map<std::string, size_t> kernel_of;  // original node name -> index into c.kernels
  for (const KernelProfile& k : p.kernels) {
    PeerKernel pk;
    pk.name = k.name, pk.op = k.op, pk.tactic = k.tactic, pk.kiln_ms = k.ms;
    for (const std::string& n : k.nodes) kernel_of.emplace(n, c.kernels.size());
    c.kernels.push_back(std::move(pk));
  }
  const SourceNames names(source);
  for (const PeerNode& pn : peer) {
    c.peer_node_ms += pn.ms;
    const Node* src = names.find(pn.name);
    auto it = src ? kernel_of.find(src->name) : kernel_of.end();
    if (it == kernel_of.end()) {
      c.unmatched.push_back(pn);
      continue;
    }
    c.kernels[it->second].peer_ms += pn.ms;
    c.kernels[it->second].peer_nodes.push_back(pn.name);
  }
  return c;
}

std::string peer_to_text(const PeerComparison& c, size_t top) {
  std::ostringstream o;
  char buf[512];
  double unmatched_ms = 0;
  for (const PeerNode& n : c.unmatched) unmatched_ms += n.ms;
  std::snprintf(buf, sizeof buf,
                "\nagainst %s (same inputs and threads, each side's own profiler; %s's runs are traced ones): a plain "
                "run %.3f ms, %s's %.3f (%.2fx); kernels %.3f ms summed, %s's nodes %.3f (%.2fx)\n",
                c.peer.c_str(), c.peer.c_str(), c.kiln_plain_ms, c.peer.c_str(), c.peer_run_ms,
                ratio(c.kiln_plain_ms, c.peer_run_ms),
                c.kiln_kernel_ms, c.peer.c_str(), c.peer_node_ms, ratio(c.kiln_kernel_ms, c.peer_node_ms));
  o << buf;
  std::snprintf(buf, sizeof buf, "  kernels by time over %s's nodes for the same original nodes:\n", c.peer.c_str());
  o << buf;
  std::snprintf(buf, sizeof buf, "  %-40s %-10s %9s %9s %7s  %s nodes\n", "kernel", "tactic", "kiln ms",
                (c.peer + " ms").c_str(), "ratio", c.peer.c_str());
  o << buf;
  std::vector<const PeerKernel*> v;
  for (const auto& k : c.kernels) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(),
                   [](const auto* a, const auto* b) { return a->kiln_ms - a->peer_ms > b->kiln_ms - b->peer_ms; });
  for (size_t i = 0; i < v.size() && i < top; ++i) {
    const PeerKernel& k = *v[i];
    std::string nodes;
    for (const std::string& n : k.peer_nodes) nodes += (nodes.empty() ? "" : ",") + n;
    std::snprintf(buf, sizeof buf, "  %-40.40s %-10.10s %9.4f %9.4f %6.2fx  %.80s\n", k.name.c_str(),
                  k.tactic.empty() ? "-" : k.tactic.c_str(), k.kiln_ms, k.peer_ms, ratio(k.kiln_ms, k.peer_ms),
                  nodes.empty() ? "(none matched)" : nodes.c_str());
    o << buf;
  }
  if (!c.unmatched.empty()) {
    std::snprintf(buf, sizeof buf,
                  "  %s nodes with no kiln kernel for their original node (layout conversions it inserts, nodes kiln "
                  "folds away): %.3f ms:",
                  c.peer.c_str(), unmatched_ms);
    o << buf;
    for (size_t i = 0; i < c.unmatched.size() && i < 8; ++i) {
      std::snprintf(buf, sizeof buf, "%s %s %.4f", i ? "," : "", c.unmatched[i].name.c_str(), c.unmatched[i].ms);
      o << buf;
    }
    o << (c.unmatched.size() > 8 ? ", ...\n" : "\n");
  }
  return o.str();
}

json::Value peer_json(const PeerComparison& c) {
  json::Value j;
  j.set("peer", c.peer);
  j.set("plain_ms", c.kiln_plain_ms);
  j.set("peer_run_ms", c.peer_run_ms);
  j.set("ratio", ratio(c.kiln_plain_ms, c.peer_run_ms));
  j.set("kernel_ms", c.kiln_kernel_ms);
  j.set("peer_node_ms", c.peer_node_ms);
  json::Value& kernels = j.set("kernels", json::Array{});
  for (const PeerKernel& k : c.kernels) {
    json::Value& e = kernels.push(json::Object{});
    e.set("name", k.name);
    e.set("op", k.op);
    e.set("tactic", k.tactic);
    e.set("ms", k.kiln_ms);
    e.set("peer_ms", k.peer_ms);
    e.set("ratio", ratio(k.kiln_ms, k.peer_ms));
    json::Value& nodes = e.set("peer_nodes", json::Array{});
    for (const std::string& n : k.peer_nodes) nodes.push(n);
  }
  json::Value& unmatched = j.set("unmatched", json::Array{});
  for (const PeerNode& n : c.unmatched) {
    json::Value& e = unmatched.push(json::Object{});
    e.set("name", n.name);
    e.set("op", n.op);
    e.set("ms", n.ms);
  }
  return j;
}

}  // namespace kiln::analysis

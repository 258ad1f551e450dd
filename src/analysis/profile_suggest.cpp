// `kiln profile` suggestions: what the measured numbers say to do next (profile.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "graph_report_internal.h"
#include "kiln/analysis/profile.h"
#include "perf_graph.h"

namespace kiln::analysis {

namespace pg = perf_graph;

namespace {

// Below this share of the total a suggestion is not worth a line.
constexpr double kMinShare = 0.005;

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

struct KernelIndex {
  std::unordered_map<std::string, const KernelProfile*> by_name;
  std::unordered_map<const Value*, int> readers;  // nodes reading each value (a node reading twice counts once)
  std::set<const Value*> graph_outputs;
};

KernelIndex index_kernels(const Profile& p, const Graph& g) {
  KernelIndex ix;
  for (const auto& k : p.kernels) ix.by_name[k.name] = &k;
  for (const auto& n : g.nodes()) {
    std::set<const Value*> seen(n->inputs.begin(), n->inputs.end());
    for (const Value* v : seen)
      if (v) ++ix.readers[v];
  }
  ix.graph_outputs.insert(g.outputs.begin(), g.outputs.end());
  return ix;
}

bool is_elementwise_kernel(const Node& n) {
  return pg::is_elementwise(n) || (n.domain == "kiln" && n.op == "FusedElementwise");
}

// The kernel that wrote v for `reader` alone: v's producer, looking through views (which the
// runtime does not run) that nobody else reads. nullptr when v is shared, a graph output or
// not written by a profiled kernel.
const Node* sole_writer(const KernelIndex& ix, const Value* v) {
  while (v && v->producer) {
    if (ix.graph_outputs.count(v) || ix.readers.count(v) == 0 || ix.readers.at(v) != 1) return nullptr;
    const Node* p = v->producer;
    if (pg::is_view(*p)) {
      v = p->input(0);
      continue;
    }
    return ix.by_name.count(p->name) ? p : nullptr;
  }
  return nullptr;
}

void fuse_chains(const Profile& p, const Graph& g, const KernelIndex& ix, std::vector<Suggestion>& out) {
  // Union-find over kernels joined by a single-use tensor into an elementwise consumer.
  std::map<const Node*, const Node*> parent;
  std::function<const Node*(const Node*)> root = [&](const Node* n) {
    auto it = parent.find(n);
    if (it == parent.end() || it->second == n) return n;
    return it->second = root(it->second);
  };
  std::map<const Node*, double> removed_ms;  // consumer kernels fusion would fold away
  for (const auto& np : g.nodes()) {
    const Node* n = np.get();
    if (!ix.by_name.count(n->name) || !is_elementwise_kernel(*n)) continue;
    for (const Value* v : n->inputs) {
      const Node* w = sole_writer(ix, v);
      if (!w || w == n) continue;
      parent.emplace(n, n);
      parent.emplace(w, w);
      parent[root(n)] = root(w);
      removed_ms[n] = ix.by_name.at(n->name)->ms;
    }
  }
  std::map<const Node*, std::vector<const Node*>> chains;  // root -> members in graph order
  for (const auto& np : g.nodes())
    if (parent.count(np.get())) chains[root(np.get())].push_back(np.get());
  for (const auto& [r, members] : chains) {
    double ms = 0;
    std::string names;
    for (const Node* m : members) {
      ms += removed_ms.count(m) ? removed_ms.at(m) : 0;
      names += (names.empty() ? "" : " -> ") + m->op + " '" + m->name + "'";
    }
    if (ms < kMinShare * p.kernel_ms) continue;
    out.push_back({"fuse",
                   str_cat("unfused elementwise chain ", names, ": ", members.size() - 1,
                           " intermediate tensors written and read back; fusing saves up to ", fmt("%.3g ms", ms),
                           " (", fmt("%.1f%%", 100 * ms / std::max(p.kernel_ms, 1e-12)), ")"),
                   ms});
  }
}

double constant_weight_bytes(const Node& n) {
  double b = 0;
  for (const Value* v : n.inputs)
    if (v && v->initializer) b += pg::model_bytes(*v);
  return b;
}

void matrix_kernels(const Profile& p, const Graph& g, const KernelIndex& ix, std::vector<Suggestion>& out) {
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    auto it = ix.by_name.find(n.name);
    if (it == ix.by_name.end() || !pg::is_matrix(n)) continue;
    const KernelProfile& k = *it->second;
    if (k.j.verdict == Bound::memory && k.bytes > 0) {
      double w = std::min(constant_weight_bytes(n), k.bytes);
      if (w < 0.5 * k.bytes) continue;
      // int8 weights: a quarter of the weight bytes; the kernel's time scales with its bytes.
      double saved = k.ms * 0.75 * w / k.bytes;
      if (saved < kMinShare * p.kernel_ms) continue;
      std::string rows;
      if (const Value* a = n.input(0); a && a->shape.is_static() && a->shape.rank() >= 1) {
        int64_t m = 1;
        for (size_t i = 0; i + 1 < a->shape.rank(); ++i) m *= a->shape.dims[i].value;
        if (n.op.find("MatMul") != std::string::npos || n.op == "Gemm") rows = str_cat(" with ", m, " rows");
      }
      // Weights an earlier kernel fetched ahead come from cache here (a network's classifier
      // GEMV after its last convolution): say so, since the kernel's GB/s then exceed the
      // memory roof's and int8 weights would shrink that earlier fetch too.
      std::string fetched;
      for (const KernelProfile& f : p.kernels)
        if (f.fetch_ahead_for == k.name && f.fetch_ahead_bytes > 0)
          fetched = str_cat(" (", f.op, " '", f.name, "' fetches them into cache as it computes, ",
                            human_bytes(static_cast<double>(f.fetch_ahead_bytes)),
                            ": they are read from cache here, and that fetch would move a quarter as much too)");
      out.push_back({"quantize-weights",
                     str_cat(k.op, " '", k.name, "'", rows, " is memory-bound (", fmt("%.3g FLOP/B, %.3g GB/s", k.j.intensity, k.j.gbs),
                             "): ", human_bytes(w), " of its ", human_bytes(k.bytes), " are constant weights", fetched,
                             "; int8 weights move a quarter of them, saving about ", fmt("%.3g of %.3g ms", saved, k.ms)),
                     saved});
    } else if (k.j.verdict == Bound::compute && k.j.roof_fraction < 0.5) {
      double gap = k.ms - k.j.roof_ms;
      if (gap < kMinShare * p.kernel_ms) continue;
      out.push_back({"tune",
                     str_cat(k.op, " '", k.name, "' (tactic ", k.tactic.empty() ? "none" : k.tactic,
                             ") is compute-bound at ", fmt("%.3g GFLOP/s, %.0f%% of the %.0f GFLOP/s roof", k.j.gflops,
                                                           100 * k.j.roof_fraction, p.roof.peak_gflops),
                             ": tuning its blocking could save up to ", fmt("%.3g ms", gap)),
                     gap});
    }
  }
}

void reference_kernels(const Profile& p, std::vector<Suggestion>& out) {
  struct Group {
    int count = 0;
    double ms = 0;
    std::vector<std::string> names;
  };
  std::map<std::string, Group> by_op;
  for (const auto& k : p.kernels) {
    if (k.fast) continue;
    Group& gr = by_op[k.op];
    ++gr.count;
    gr.ms += k.ms;
    if (gr.names.size() < 3) gr.names.push_back("'" + k.name + "'");
  }
  for (const auto& [op, gr] : by_op) {
    if (gr.ms < kMinShare * p.kernel_ms) continue;
    std::string names;
    for (const auto& n : gr.names) names += (names.empty() ? "" : ", ") + n;
    if (gr.count > static_cast<int>(gr.names.size())) names += ", ...";
    out.push_back({"reference-kernel",
                   str_cat(op, " x", gr.count, " (", names, ") ran the op table's reference kernel: ",
                           fmt("%.3g ms (%.1f%%)", gr.ms, 100 * gr.ms / std::max(p.kernel_ms, 1e-12)),
                           "; a fast kernel (src/runtime/fast_kernels.inc) would take that on"),
                   gr.ms});
  }
}

}  // namespace

std::vector<Suggestion> suggest(const Profile& p, const Graph& g) {
  KernelIndex ix = index_kernels(p, g);
  std::vector<Suggestion> out;
  fuse_chains(p, g, ix, out);
  matrix_kernels(p, g, ix, out);
  reference_kernels(p, out);
  std::stable_sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace kiln::analysis

// `kiln perf --measured`: a measured time against the prediction, and causes from the graph.
#include "kiln/analysis/perf_diagnose.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

#include "graph_report_internal.h"
#include "kiln/ir/error.h"
#include "kiln/plan/json.h"
#include "perf_graph.h"

namespace kiln::analysis {

namespace pg = perf_graph;

std::pair<double, int64_t> parse_measured(const std::string& s, int64_t default_batch) {
  std::string ms_text = s, batch_text;
  if (auto at = s.find('@'); at != std::string::npos) {
    ms_text = s.substr(0, at);
    batch_text = s.substr(at + 1);
  }
  char* end = nullptr;
  double ms = std::strtod(ms_text.c_str(), &end);
  KILN_CHECK(!ms_text.empty() && end && *end == '\0' && ms > 0, "--measured: '", s,
             "' is not MS or MS@BATCH with MS > 0 (milliseconds)");
  int64_t batch = default_batch;
  if (!batch_text.empty()) {
    long long b = std::strtoll(batch_text.c_str(), &end, 10);
    KILN_CHECK(end && *end == '\0' && b >= 1, "--measured: '", s, "': batch must be a positive integer");
    batch = b;
  }
  return {ms, batch};
}

namespace {

std::string mib(double bytes) { return human_bytes(bytes); }

std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

struct GraphIndex {
  std::map<const Value*, std::vector<const Node*>> users;
  std::map<const Node*, const OpEstimate*> estimate;
  std::set<const Value*> outputs;
};

GraphIndex index_graph(const Graph& g, const PerfRow& row) {
  GraphIndex ix;
  for (const auto& n : g.nodes())
    for (const Value* v : n->inputs)
      if (v) ix.users[v].push_back(n.get());
  for (const auto& e : row.ops) ix.estimate[e.node] = &e;
  for (const Value* v : g.outputs) ix.outputs.insert(v);
  return ix;
}

// The one user of v when it has exactly one and v is not a graph output.
const Node* sole_user(const GraphIndex& ix, const Value* v) {
  if (ix.outputs.count(v)) return nullptr;
  auto it = ix.users.find(v);
  return it != ix.users.end() && it->second.size() == 1 ? it->second[0] : nullptr;
}

// Chains of kernels joined by single-use intermediates where the consumer is elementwise:
// an elementwise op or a GEMM/conv epilogue that a fused kernel would keep in registers.
void unfused_chains(const Graph& g, const GraphIndex& ix, const Chip& chip, const PerfOptions& opt,
                    std::vector<Cause>& out) {
  std::set<const Node*> in_chain;
  int chains = 0, intermediates = 0;
  double bytes = 0, ms = 0;
  std::string longest;
  size_t longest_len = 0;
  for (const auto& np : g.nodes()) {
    const Node* n = np.get();
    if (in_chain.count(n) || !ix.estimate.count(n) || n->outputs.empty() || !n->outputs[0]) continue;
    if (!pg::is_elementwise(*n) && !pg::is_matrix(*n)) continue;
    std::vector<const Node*> chain{n};
    for (;;) {
      const Node* tail = chain.back();
      const Node* next = tail->outputs.size() == 1 && tail->outputs[0] ? sole_user(ix, tail->outputs[0]) : nullptr;
      if (!next || !ix.estimate.count(next) || !pg::is_elementwise(*next) || in_chain.count(next)) break;
      chain.push_back(next);
    }
    if (chain.size() < 2) continue;
    ++chains;
    std::string ops;
    for (size_t i = 0; i < chain.size(); ++i) {
      in_chain.insert(chain[i]);
      ops += (i ? "->" : "") + chain[i]->op;
      if (i + 1 < chain.size()) {
        double b = pg::value_bytes(*chain[i]->outputs[0], opt.precision);
        ++intermediates;
        bytes += 2 * b;  // written by one kernel, read back by the next
        ms += (2 * b / (chip.memory_gbs * 1e9) + chip.launch_overhead_us * 1e-6) * 1e3;
      }
    }
    if (chain.size() > longest_len) {
      longest_len = chain.size();
      longest = ops + " at '" + chain[0]->name + "'";
    }
  }
  if (chains == 0) return;
  out.push_back({"unfused-elementwise",
                 str_cat(chains, " chains of kernels joined by single-use tensors (", intermediates,
                         " intermediates, ", mib(bytes), " written and read back; longest ", longest,
                         "): fusing them saves that traffic and ", intermediates, " launches"),
                 ms});
}

// The producer of a node's main data input: the largest float input computed by another node
// (for Where(cond, scores, fill) that is the scores, not the mask).
const Node* data_input_producer(const Node& n) {
  const Value* best = nullptr;
  for (const Value* v : n.inputs)
    if (v && v->producer && dtype_is_float(v->dtype) &&
        (!best || v->shape.numel().value_or(0) > best->shape.numel().value_or(0)))
      best = v;
  return best ? best->producer : nullptr;
}

// Attention written as MatMul -> (scale/mask)* -> Softmax -> MatMul stores the whole
// [.., seq, seq] score matrix; a fused attention kernel keeps it on chip.
void materialised_scores(const Graph& g, const GraphIndex& ix, const Chip& chip, const PerfOptions& opt,
                         std::vector<Cause>& out) {
  int blocks = 0;
  double bytes = 0, ms = 0;
  std::string example;
  for (const auto& np : g.nodes()) {
    const Node* s = np.get();
    if (s->op != "Softmax" || !s->domain.empty() || !s->input(0) || s->outputs.empty() || !s->outputs[0]) continue;
    const Value* scores = s->outputs[0];
    if (scores->shape.rank() < 3) continue;
    // Forward: the probabilities feed a MatMul (P x V).
    auto users = ix.users.find(scores);
    bool feeds_matmul = users != ix.users.end() && std::any_of(users->second.begin(), users->second.end(), [](const Node* u) {
      return u->op == "MatMul" || u->op == "Einsum";
    });
    // Backward: through elementwise producers to a MatMul (Q x K^T).
    const Node* p = s->input(0)->producer;
    std::vector<const Node*> chain{s};
    while (p && pg::is_elementwise(*p)) {
      chain.push_back(p);
      p = data_input_producer(*p);
    }
    if (!feeds_matmul || !p || (p->op != "MatMul" && p->op != "Einsum")) continue;
    ++blocks;
    double b = pg::value_bytes(*scores, opt.precision);
    // The score matrix is written by Q x K^T and read by P x V at least, plus every pass in between.
    double t = 2 * b / (chip.memory_gbs * 1e9);
    for (const Node* c : chain) {
      auto e = ix.estimate.find(c);
      if (e != ix.estimate.end()) t += e->second->time.total_s();
    }
    bytes += b;
    ms += t * 1e3;
    if (example.empty()) example = str_cat("'", p->name, "' -> Softmax '", s->name, "', scores ", scores->shape.str());
  }
  if (blocks == 0) return;
  out.push_back({"materialised-scores",
                 str_cat(blocks, " attention blocks store their score matrix in memory (", mib(bytes), " in all; e.g. ",
                         example, "): a fused attention kernel keeps it on chip"),
                 ms});
}

void layout_transposes(const PerfRow& row, std::vector<Cause>& out) {
  int count = 0;
  double bytes = 0, ms = 0;
  for (const auto& e : row.ops)
    if (pg::is_layout(*e.node)) {
      ++count;
      bytes += e.bytes;
      ms += e.time.total_s() * 1e3;
    }
  if (count == 0) return;
  out.push_back({"layout-transpose",
                 str_cat(count, " Transpose kernels move ", mib(bytes),
                         " only to change layout: folding them into the neighbouring GEMMs' strides removes them"),
                 ms});
}

void float_gemms(const PerfRow& row, const Chip& chip, const PerfOptions& opt, std::vector<Cause>& out) {
  if (opt.precision == Precision::int8 || !chip.peak_tflops.count(Precision::int8)) return;
  int count = 0;
  double saved = 0;
  for (const auto& e : row.ops) {
    if (!e.matrix) continue;
    const Value* w = e.node->input(1);
    if (!w || !w->is_constant() || !dtype_is_float(w->dtype)) continue;
    ++count;
    // Same kernel at int8: the int8 peak, and float traffic at one byte per element.
    OpTime t8 = op_time(e.flops, e.bytes / precision_bytes(opt.precision), chip.peak_flops(Precision::int8), chip);
    saved += (e.time.total_s() - t8.total_s()) * 1e3;
  }
  if (count == 0 || saved <= 0) return;
  out.push_back({"float-gemm",
                 str_cat(count, " matrix ops with constant float weights run in ", precision_name(opt.precision),
                         "; quantized to int8 (peak ", str_cat(std::setprecision(4), chip.peak_tflops.at(Precision::int8)),
                         " TOPS) they would take ",
                         fmt_ms(saved), " less"),
                 saved});
}

void host_copies(const Graph& g, const Chip& chip, const PerfOptions& opt, std::vector<Cause>& out) {
  if (!chip.device_memory || chip.pcie_gbs <= 0) return;
  double bytes = 0;
  for (const auto* list : {&g.inputs, &g.outputs})
    for (const Value* v : *list)
      if (v) bytes += pg::value_bytes(*v, opt.precision);
  double ms = bytes / (chip.pcie_gbs * 1e9) * 1e3;
  out.push_back({"host-device-copy",
                 str_cat("inputs and outputs (", mib(bytes), ") cross PCIe at ", chip.pcie_gbs,
                         " GB/s each way if they live on the host: keep them on the device or overlap the copies"),
                 ms});
}

void launch_overhead(const PerfRow& row, const Chip& chip, std::vector<Cause>& out) {
  if (row.kernels == 0 || chip.launch_overhead_us <= 0) return;
  out.push_back({"launch-overhead",
                 str_cat(row.kernels, " kernels x ", chip.launch_overhead_us,
                         " us launch each; a runtime that launches more slowly (a Python loop, a sync per op) multiplies "
                         "this: fuse kernels or replay a captured graph"),
                 row.overhead_ms});
}

}  // namespace

std::vector<Cause> find_causes(const Model& m, const PerfRow& row, const Chip& chip, const PerfOptions& opt) {
  const Graph& g = *m.graph;
  GraphIndex ix = index_graph(g, row);
  std::vector<Cause> causes;
  unfused_chains(g, ix, chip, opt, causes);
  materialised_scores(g, ix, chip, opt, causes);
  layout_transposes(row, causes);
  float_gemms(row, chip, opt, causes);
  host_copies(g, chip, opt, causes);
  launch_overhead(row, chip, causes);
  std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) { return a.ms > b.ms; });
  return causes;
}

Diagnosis diagnose(Model& m, const Chip& chip, const PerfOptions& opt, double measured_ms, int64_t batch) {
  KILN_CHECK(measured_ms > 0, "--measured: the time must be positive");
  BatchBinder binder(m, opt.batch_dim);
  binder.bind(batch);
  PerfRow row = estimate(m, batch, chip, opt, true);
  Diagnosis d;
  d.batch = batch;
  d.measured_ms = measured_ms;
  d.predicted_ms = row.latency_ms;
  d.efficiency = row.latency_ms / measured_ms;
  d.off_by_2x = d.efficiency < 0.5 || d.efficiency > 2;
  if (d.efficiency < 0.5) {
    d.causes = find_causes(m, row, chip, opt);
  } else if (d.efficiency > 2) {
    d.causes.push_back({"model-too-pessimistic",
                        str_cat("measured is faster than the model's bound: the chip's peaks or bandwidth may be too "
                                "low (for --chip cpu: kiln machine --refresh), or the weights (",
                                mib(static_cast<double>(row.weight_bytes)), ") stay in cache between runs"),
                        0});
  }
  return d;
}

std::string diagnosis_to_text(const Diagnosis& d) {
  std::ostringstream o;
  char buf[256];
  std::snprintf(buf, sizeof buf, "measured %.4g ms at batch %lld; predicted %.4g ms: efficiency %.0f%%%s\n",
                d.measured_ms, static_cast<long long>(d.batch), d.predicted_ms, d.efficiency * 100,
                d.off_by_2x ? " (more than 2x off)" : " (within 2x of the model)");
  o << buf;
  if (!d.causes.empty()) o << "likely causes, largest first:\n";
  for (const auto& c : d.causes) {
    o << "  - " << c.kind;
    if (c.ms > 0) o << " (~" << fmt_ms(c.ms) << ")";
    o << ": " << c.detail << "\n";
  }
  return o.str();
}

json::Value diagnosis_json(const Diagnosis& d) {
  json::Value j;
  j.set("batch", d.batch);
  j.set("measured_ms", d.measured_ms);
  j.set("predicted_ms", d.predicted_ms);
  j.set("efficiency", d.efficiency);
  j.set("off_by_2x", d.off_by_2x);
  json::Value& causes = j.set("causes", json::Array{});
  for (const auto& c : d.causes) {
    json::Value& e = causes.push(json::Object{});
    e.set("kind", c.kind);
    e.set("detail", c.detail);
    e.set("ms", c.ms);
  }
  return j;
}

}  // namespace kiln::analysis

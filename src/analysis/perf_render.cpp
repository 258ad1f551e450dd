// `kiln perf` output: the per-batch table as text and as JSON.
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "kiln/analysis/perf_diagnose.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

namespace {
std::string chip_line(const Chip& c, Precision p) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, %s: peak %.1f TFLOP/s (vector %.1f), %.0f GB/s, %s, launch %.1f us",
                c.name.c_str(), std::string(precision_name(p)).c_str(), c.peak_flops(p) / 1e12, c.vector_tflops,
                c.memory_gbs, human_bytes(static_cast<double>(c.memory_bytes)).c_str(), c.launch_overhead_us);
  return buf;
}
}  // namespace

std::string perf_to_text(const PerfReport& r) {
  std::ostringstream o;
  o << "kiln perf: " << r.model << " on " << chip_line(r.chip, r.precision) << "\n";
  o << "  (" << r.chip.source << ")\n\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%7s %12s %14s %12s %9s %11s %10s %12s %8s\n", "batch", "latency_ms", "throughput/s",
                "memory", "bound", "compute_ms", "memory_ms", "overhead_ms", "kernels");
  o << buf;
  for (const auto& row : r.rows) {
    std::snprintf(buf, sizeof buf, "%7lld %12.4f %14.1f %12s %9s %11.4f %10.4f %12.4f %8lld%s\n",
                  static_cast<long long>(row.batch), row.latency_ms, row.throughput_per_s,
                  human_bytes(static_cast<double>(row.memory_bytes)).c_str(), std::string(bound_name(row.bound)).c_str(),
                  row.compute_ms, row.memory_ms, row.overhead_ms, static_cast<long long>(row.kernels),
                  row.fits ? "" : "  (does not fit)");
    o << buf;
  }
  if (!r.rows.empty() && r.rows.back().uncosted_nodes > 0)
    o << "\nnote: " << r.rows.back().uncosted_nodes << " nodes kept dynamic shapes and are left out\n";
  o << "\nmemory = weights " << human_bytes(static_cast<double>(r.rows.front().weight_bytes)) << " + arena + workspace "
    << human_bytes(static_cast<double>(r.rows.front().workspace_bytes)) << "\n";
  if (r.optimal_batch) o << "optimal batch: " << *r.optimal_batch << " (" << r.optimal_reason << ")\n";
  else o << "optimal batch: none (" << r.optimal_reason << ")\n";
  if (r.max_latency_ms) {
    if (r.best_batch_under_latency)
      o << "best throughput within " << *r.max_latency_ms << " ms: batch " << *r.best_batch_under_latency << "\n";
    else
      o << "no batch given meets " << *r.max_latency_ms << " ms\n";
  }
  return o.str();
}

std::string perf_to_json(const PerfReport& r, const Diagnosis* measured) {
  json::Value j;
  j.set("model", r.model);
  json::Value& chip = j.set("chip", json::Object{});
  chip.set("id", r.chip.id);
  chip.set("name", r.chip.name);
  chip.set("source", r.chip.source);
  chip.set("peak_tflops", r.chip.peak_flops(r.precision) / 1e12);
  chip.set("vector_tflops", r.chip.vector_tflops);
  chip.set("memory_gbs", r.chip.memory_gbs);
  chip.set("memory_bytes", r.chip.memory_bytes);
  chip.set("launch_overhead_us", r.chip.launch_overhead_us);
  j.set("precision", precision_name(r.precision));
  json::Value& rows = j.set("rows", json::Array{});
  for (const auto& row : r.rows) {
    json::Value& e = rows.push(json::Object{});
    e.set("batch", row.batch);
    e.set("latency_ms", row.latency_ms);
    e.set("memory_bytes", row.memory_bytes);
    e.set("throughput_per_s", row.throughput_per_s);
    e.set("bound", bound_name(row.bound));
    e.set("fits", row.fits);
    e.set("compute_ms", row.compute_ms);
    e.set("memory_ms", row.memory_ms);
    e.set("overhead_ms", row.overhead_ms);
    e.set("kernels", row.kernels);
    e.set("flops", row.flops);
    e.set("bytes", row.bytes);
    e.set("weight_bytes", row.weight_bytes);
    e.set("arena_bytes", row.arena_bytes);
    e.set("workspace_bytes", row.workspace_bytes);
    e.set("uncosted_nodes", row.uncosted_nodes);
  }
  j.set("optimal_batch", r.optimal_batch ? json::Value(*r.optimal_batch) : json::Value());
  j.set("optimal_reason", r.optimal_reason);
  if (r.max_latency_ms) {
    j.set("max_latency_ms", *r.max_latency_ms);
    j.set("best_batch_under_latency", r.best_batch_under_latency ? json::Value(*r.best_batch_under_latency) : json::Value());
  }
  if (measured) j.set("measured", diagnosis_json(*measured));
  return j.dump() + "\n";
}

}  // namespace kiln::analysis

// `kiln perf` output: the per-batch table as text and as JSON.
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "json_writer.h"
#include "kiln/analysis/perf_model.h"

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

std::string perf_to_json(const PerfReport& r) {
  JsonWriter w;
  w.begin_object();
  w.key("model").value(r.model);
  w.key("chip").begin_object();
  w.key("id").value(r.chip.id);
  w.key("name").value(r.chip.name);
  w.key("source").value(r.chip.source);
  w.key("peak_tflops").value(r.chip.peak_flops(r.precision) / 1e12);
  w.key("vector_tflops").value(r.chip.vector_tflops);
  w.key("memory_gbs").value(r.chip.memory_gbs);
  w.key("memory_bytes").value(r.chip.memory_bytes);
  w.key("launch_overhead_us").value(r.chip.launch_overhead_us);
  w.end_object();
  w.key("precision").value(precision_name(r.precision));
  w.key("rows").begin_array();
  for (const auto& row : r.rows) {
    w.begin_object();
    w.key("batch").value(row.batch);
    w.key("latency_ms").value(row.latency_ms);
    w.key("memory_bytes").value(row.memory_bytes);
    w.key("throughput_per_s").value(row.throughput_per_s);
    w.key("bound").value(bound_name(row.bound));
    w.key("fits").value(row.fits);
    w.key("compute_ms").value(row.compute_ms);
    w.key("memory_ms").value(row.memory_ms);
    w.key("overhead_ms").value(row.overhead_ms);
    w.key("kernels").value(row.kernels);
    w.key("flops").value(row.flops);
    w.key("bytes").value(row.bytes);
    w.key("weight_bytes").value(row.weight_bytes);
    w.key("arena_bytes").value(row.arena_bytes);
    w.key("workspace_bytes").value(row.workspace_bytes);
    w.key("uncosted_nodes").value(row.uncosted_nodes);
    w.end_object();
  }
  w.end_array();
  if (r.optimal_batch) w.key("optimal_batch").value(*r.optimal_batch);
  else w.key("optimal_batch").null();
  w.key("optimal_reason").value(r.optimal_reason);
  if (r.max_latency_ms) {
    w.key("max_latency_ms").value(*r.max_latency_ms);
    if (r.best_batch_under_latency) w.key("best_batch_under_latency").value(*r.best_batch_under_latency);
    else w.key("best_batch_under_latency").null();
  }
  w.end_object();
  return w.str() + "\n";
}

}  // namespace kiln::analysis

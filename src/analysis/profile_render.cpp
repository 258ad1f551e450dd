// `kiln profile` output: the top-N table with suggestions as text, and the JSON document.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "kiln/analysis/perf_diagnose.h"
#include "kiln/analysis/profile.h"
#include "kiln/analysis/profile_peer.h"
#include "kiln/analysis/profile_scaling.h"
#include "kiln/analysis/profile_balance.h"
#include "kiln/analysis/profile_rerun.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

namespace {

std::string nodes_brief(const std::vector<std::string>& nodes, size_t max_names) {
  std::string s;
  for (size_t i = 0; i < nodes.size() && i < max_names; ++i) s += (i ? "," : "") + nodes[i];
  if (nodes.size() > max_names) s += str_cat(",+", nodes.size() - max_names);
  return s.empty() ? "-" : s;
}

std::vector<const KernelProfile*> by_time(const Profile& p) {
  std::vector<const KernelProfile*> v;
  for (const auto& k : p.kernels) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) { return a->ms > b->ms; });
  return v;
}

}  // namespace

std::string profile_to_text(const Profile& p, size_t top) {
  std::ostringstream o;
  char buf[512];
  o << "kiln profile: " << p.model << " (" << p.threads << " threads, median of " << p.runs << " runs"
    << (p.placement.empty() ? "" : ", those with the cores " + p.placement) << ")\n";
  std::snprintf(buf, sizeof buf, "  roof: %.1f GFLOP/s FP32, %.1f GB/s (kiln machine: %s); dispatch %.1f us per kernel\n",
                p.roof.peak_gflops, p.roof.bandwidth_gbs, p.machine.c_str(), p.roof.dispatch_us);
  o << buf;
  if (p.roof.int8_peak_gops > 0) {
    std::snprintf(buf, sizeof buf, "  int8 kernels (kiln.QConv, kiln.QMatMul) against %.1f GOP/s INT8\n",
                  p.roof.int8_peak_gops);
    o << buf;
  }
  std::snprintf(buf, sizeof buf,
                "  %zu kernels, %.3f ms summed; a plain run takes %.3f ms, a profiled one %.3f ms "
                "(profiler overhead %+.1f%%)\n\n",
                p.kernels.size(), p.kernel_ms, p.plain_ms, p.profiled_ms, 100 * p.overhead_fraction);
  o << buf;
  const bool predicted = std::any_of(p.kernels.begin(), p.kernels.end(), [](const auto& k) { return k.predicted_ms >= 0; });
  std::snprintf(buf, sizeof buf, "%-32s %-22s %-10s %9s %6s %9s %9s %7s %8s %7s %5s %-8s %s%s\n", "kernel", "op", "tactic",
                "ms", "share", "MFLOP", "KiB", "FLOP/B", "GFLOP/s", "GB/s", "roof", "verdict", predicted ? "pred_ms  " : "",
                "onnx nodes");
  o << buf;
  std::vector<const KernelProfile*> sorted = by_time(p);
  double rest_ms = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const KernelProfile& k = *sorted[i];
    if (i >= top) {
      rest_ms += k.ms;
      continue;
    }
    char pred[32] = "";
    if (predicted) std::snprintf(pred, sizeof pred, "%8.4f ", k.predicted_ms);
    std::snprintf(buf, sizeof buf, "%-32.32s %-22.22s %-10.10s %9.4f %5.1f%% %9.3f %9.1f %7.2f %8.2f %7.2f %4.0f%% %-8s %s%s%s\n",
                  k.name.c_str(), k.op.c_str(), k.tactic.empty() ? "-" : k.tactic.c_str(), k.ms, 100 * k.share,
                  k.flops / 1e6, k.bytes / 1024, k.j.intensity, k.j.gflops, k.j.gbs, 100 * k.j.roof_fraction,
                  k.costed ? std::string(bound_name(k.j.verdict)).c_str() : "?", pred, nodes_brief(k.nodes, 3).c_str(),
                  k.fast ? "" : "  [reference kernel]");
    o << buf;
  }
  if (sorted.size() > top)
    o << "  ... " << sorted.size() - top << " more kernels, " << rest_ms << " ms\n";
  double by_verdict[3] = {0, 0, 0};
  for (const auto& k : p.kernels) by_verdict[static_cast<int>(k.j.verdict)] += k.ms;
  std::snprintf(buf, sizeof buf, "\nby verdict: compute %.3f ms, memory %.3f ms, overhead %.3f ms\n",
                by_verdict[static_cast<int>(Bound::compute)], by_verdict[static_cast<int>(Bound::memory)],
                by_verdict[static_cast<int>(Bound::overhead)]);
  o << buf;
  for (const auto& k : p.kernels)
    if (k.fetch_ahead_bytes > 0) {
      std::snprintf(buf, sizeof buf, "fetched ahead: %s fetched %.2f MiB of %s's weights into cache as it computed\n",
                    k.name.c_str(), k.fetch_ahead_bytes / 1048576.0, k.fetch_ahead_for.c_str());
      o << buf;
    }
  if (!p.sources.empty()) {
    std::vector<const SourceNodeProfile*> src;
    for (const auto& s : p.sources) src.push_back(&s);
    std::stable_sort(src.begin(), src.end(), [](const auto* a, const auto* b) { return a->ms > b->ms; });
    o << "\noriginal nodes (" << p.sources.size() << "), by their share of the kernel that covers them:\n";
    for (size_t i = 0; i < src.size() && i < top; ++i) {
      std::snprintf(buf, sizeof buf, "  %-40.40s %-20.20s %9.4f ms  in %s\n", src[i]->name.c_str(), src[i]->op.c_str(),
                    src[i]->ms, src[i]->kernel.c_str());
      o << buf;
    }
  }
  o << "\nsuggestions:\n";
  if (p.suggestions.empty()) o << "  none: no unfused chain, memory-bound weight GEMM, slow conv or reference kernel worth the time\n";
  for (const auto& s : p.suggestions) o << "  [" << s.kind << "] " << s.detail << "\n";
  return o.str();
}

std::string profile_to_json(const Profile& p, const Diagnosis* explain, const Scaling* scaling,
                            const PeerComparison* peer, const Rerun* rerun, const Balance* balance) {
  json::Value j;
  j.set("model", p.model);
  j.set("threads", p.threads);
  j.set("runs", p.runs);
  if (!p.placement.empty()) j.set("placement", p.placement);
  j.set("machine", p.machine);
  json::Value& roof = j.set("roof", json::Object{});
  roof.set("peak_gflops", p.roof.peak_gflops);
  if (p.roof.int8_peak_gops > 0) roof.set("int8_peak_gops", p.roof.int8_peak_gops);
  roof.set("bandwidth_gbs", p.roof.bandwidth_gbs);
  roof.set("dispatch_us", p.roof.dispatch_us);
  j.set("total_ms", p.kernel_ms);
  j.set("plain_ms", p.plain_ms);
  j.set("profiled_ms", p.profiled_ms);
  j.set("overhead_fraction", p.overhead_fraction);
  json::Value& kernels = j.set("kernels", json::Array{});
  for (const auto& k : p.kernels) {
    json::Value& e = kernels.push(json::Object{});
    e.set("name", k.name);
    e.set("op", k.op);
    e.set("tactic", k.tactic);
    e.set("fast", k.fast);
    if (k.fetch_ahead_bytes > 0) {
      e.set("fetch_ahead_bytes", k.fetch_ahead_bytes);
      e.set("fetch_ahead_for", k.fetch_ahead_for);
    }
    json::Value& nodes = e.set("nodes", json::Array{});
    for (const auto& n : k.nodes) nodes.push(n);
    e.set("ms", k.ms);
    e.set("share", k.share);
    e.set("flops", k.flops);
    e.set("bytes", k.bytes);
    e.set("costed", k.costed);
    e.set("intensity", k.j.intensity);
    e.set("gflops", k.j.gflops);
    e.set("gbs", k.j.gbs);
    e.set("roof_ms", k.j.roof_ms);
    e.set("roof_fraction", k.j.roof_fraction);
    e.set("verdict", bound_name(k.j.verdict));
    if (k.predicted_ms >= 0) e.set("predicted_ms", k.predicted_ms);
  }
  json::Value& nodes = j.set("nodes", json::Array{});
  for (const auto& s : p.sources) {
    json::Value& e = nodes.push(json::Object{});
    e.set("name", s.name);
    e.set("op", s.op);
    e.set("kernel", s.kernel);
    e.set("ms", s.ms);
  }
  json::Value& suggestions = j.set("suggestions", json::Array{});
  for (const auto& s : p.suggestions) {
    json::Value& e = suggestions.push(json::Object{});
    e.set("kind", s.kind);
    e.set("detail", s.detail);
    e.set("ms", s.ms);
  }
  if (explain) j.set("explain", diagnosis_json(*explain));
  if (scaling) j.set("scaling", scaling_json(*scaling));
  if (rerun) j.set("rerun", rerun_json(*rerun));
  if (balance) j.set("balance", balance_json(*balance));
  if (peer) j.set("ort", peer_json(*peer));
  return j.dump() + "\n";
}

std::string profile_to_trace(const Profile& p) {
  // Chrome's trace event format (also read by Perfetto): complete events with microsecond
  // timestamps; each profiled run is laid out at its real start, on the thread that ran it.
  json::Value j;
  j.set("displayTimeUnit", "ms");
  json::Value& events = j.set("traceEvents", json::Array{});
  json::Value& thread = events.push(json::Object{});
  thread.set("name", "thread_name");
  thread.set("ph", "M");
  thread.set("pid", 1);
  thread.set("tid", 1);
  thread.set("args", json::Object{}).set("name", str_cat("kiln run (", p.threads, " threads)"));
  for (size_t r = 0; r < p.timeline.size(); ++r) {
    double base_us = (r < p.run_start_ms.size() ? p.run_start_ms[r] : 0) * 1e3;
    for (const StepTiming& s : p.timeline[r]) {
      json::Value& e = events.push(json::Object{});
      e.set("name", s.node);
      e.set("cat", s.op);
      e.set("ph", "X");
      e.set("ts", base_us + s.start_ms * 1e3);
      e.set("dur", s.ms * 1e3);
      e.set("pid", 1);
      e.set("tid", 1);
      json::Value& args = e.set("args", json::Object{});
      args.set("run", r);
      args.set("op", s.op);
      args.set("tactic", s.tactic);
      args.set("fast", s.fast);
    }
  }
  return j.dump() + "\n";
}

}  // namespace kiln::analysis

// `kiln profile` output: the top-N table with suggestions as text, and the JSON document.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "json_writer.h"
#include "kiln/analysis/profile.h"

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
  o << "kiln profile: " << p.model << " (" << p.threads << " threads, median of " << p.runs << " runs)\n";
  std::snprintf(buf, sizeof buf, "  roof: %.1f GFLOP/s FP32, %.1f GB/s (kiln machine: %s); dispatch %.1f us per kernel\n",
                p.roof.peak_gflops, p.roof.bandwidth_gbs, p.machine.c_str(), p.roof.dispatch_us);
  o << buf;
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

std::string profile_to_json(const Profile& p) {
  JsonWriter w;
  w.begin_object();
  w.key("model").value(p.model);
  w.key("threads").value(static_cast<int64_t>(p.threads));
  w.key("runs").value(static_cast<int64_t>(p.runs));
  w.key("machine").value(p.machine);
  w.key("roof").begin_object();
  w.key("peak_gflops").value(p.roof.peak_gflops);
  w.key("bandwidth_gbs").value(p.roof.bandwidth_gbs);
  w.key("dispatch_us").value(p.roof.dispatch_us);
  w.end_object();
  w.key("total_ms").value(p.kernel_ms);
  w.key("plain_ms").value(p.plain_ms);
  w.key("profiled_ms").value(p.profiled_ms);
  w.key("overhead_fraction").value(p.overhead_fraction);
  w.key("kernels").begin_array();
  for (const auto& k : p.kernels) {
    w.begin_object();
    w.key("name").value(k.name);
    w.key("op").value(k.op);
    w.key("tactic").value(k.tactic);
    w.key("fast").value(k.fast);
    w.key("nodes").begin_array();
    for (const auto& n : k.nodes) w.value(n);
    w.end_array();
    w.key("ms").value(k.ms);
    w.key("share").value(k.share);
    w.key("flops").value(k.flops);
    w.key("bytes").value(k.bytes);
    w.key("costed").value(k.costed);
    w.key("intensity").value(k.j.intensity);
    w.key("gflops").value(k.j.gflops);
    w.key("gbs").value(k.j.gbs);
    w.key("roof_ms").value(k.j.roof_ms);
    w.key("roof_fraction").value(k.j.roof_fraction);
    w.key("verdict").value(bound_name(k.j.verdict));
    if (k.predicted_ms >= 0) w.key("predicted_ms").value(k.predicted_ms);
    w.end_object();
  }
  w.end_array();
  w.key("nodes").begin_array();
  for (const auto& s : p.sources) {
    w.begin_object();
    w.key("name").value(s.name);
    w.key("op").value(s.op);
    w.key("kernel").value(s.kernel);
    w.key("ms").value(s.ms);
    w.end_object();
  }
  w.end_array();
  w.key("suggestions").begin_array();
  for (const auto& s : p.suggestions) {
    w.begin_object();
    w.key("kind").value(s.kind);
    w.key("detail").value(s.detail);
    w.key("ms").value(s.ms);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

std::string profile_to_trace(const Profile& p) {
  // Chrome's trace event format (also read by Perfetto): complete events with microsecond
  // timestamps; each profiled run is laid out at its real start, on the thread that ran it.
  JsonWriter w;
  w.begin_object();
  w.key("displayTimeUnit").value("ms");
  w.key("traceEvents").begin_array();
  w.begin_object();
  w.key("name").value("thread_name");
  w.key("ph").value("M");
  w.key("pid").value(int64_t{1});
  w.key("tid").value(int64_t{1});
  w.key("args").begin_object().key("name").value(str_cat("kiln run (", p.threads, " threads)")).end_object();
  w.end_object();
  for (size_t r = 0; r < p.timeline.size(); ++r) {
    double base_us = (r < p.run_start_ms.size() ? p.run_start_ms[r] : 0) * 1e3;
    for (const StepTiming& s : p.timeline[r]) {
      w.begin_object();
      w.key("name").value(s.node);
      w.key("cat").value(s.op);
      w.key("ph").value("X");
      w.key("ts").value(base_us + s.start_ms * 1e3);
      w.key("dur").value(s.ms * 1e3);
      w.key("pid").value(int64_t{1});
      w.key("tid").value(int64_t{1});
      w.key("args").begin_object();
      w.key("run").value(static_cast<int64_t>(r));
      w.key("op").value(s.op);
      w.key("tactic").value(s.tactic);
      w.key("fast").value(s.fast);
      w.end_object();
      w.end_object();
    }
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace kiln::analysis

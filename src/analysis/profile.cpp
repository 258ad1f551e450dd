// `kiln profile`: timing the steps of a compiled model and judging each against the roofline.
#include <functional>
#include "kiln/analysis/profile.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"
#include "kiln/ops/op.h"

namespace kiln::analysis {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// ProfileOptions::run_counts's answer, yes when it is not set.
bool run_counts(const ProfileOptions& opt) { return !opt.run_counts || opt.run_counts(); }

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::vector<std::vector<StepTiming>> extra_profiled_runs(
    Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt, const std::string& what,
    const std::function<std::vector<StepTiming>(std::vector<Tensor>& outputs, const RunOptions& ro)>& profiled_run) {
  KILN_CHECK(opt.runs >= 1, "profile ", what, ": runs must be at least 1");
  KILN_CHECK(opt.threads >= 1, "profile ", what, ": threads must be at least 1");
  RunOptions ro;
  ro.threads = opt.threads;
  std::vector<Tensor> outputs;
  for (int i = 0; i < opt.warmup; ++i) {
    exe.run(inputs, outputs, ro);
    profiled_run(outputs, ro);
  }
  std::vector<std::vector<StepTiming>> runs;
  while (static_cast<int>(runs.size()) < opt.runs) {
    const bool counts_before = run_counts(opt);
    exe.run(inputs, outputs, ro);  // as profile_model: each profiled run after a plain one
    std::vector<StepTiming> steps = profiled_run(outputs, ro);
    const bool counts_after = run_counts(opt);
    if (counts_before && counts_after) runs.push_back(std::move(steps));
  }
  return runs;
}

Roof roof_for(const MachinePeaks& m, int threads) {
  KILN_CHECK(threads >= 1, "profile: threads must be at least 1");
  KILN_CHECK(m.fp32_gflops_per_core > 0 && m.dram_gbs_one_core > 0, "profile: the machine numbers are not measured");
  Roof r;
  r.threads = threads;
  bool all = m.cores > 0 && threads >= m.cores;
  r.peak_gflops = all ? m.fp32_gflops_all_cores : m.fp32_gflops_per_core * threads;
  if (m.int8_gops_per_core)
    r.int8_peak_gops = all && m.int8_gops_all_cores ? *m.int8_gops_all_cores : *m.int8_gops_per_core * threads;
  r.bandwidth_gbs = all || threads > 1 ? std::max(m.dram_gbs_all_cores, m.dram_gbs_one_core) : m.dram_gbs_one_core;
  return r;
}

double measure_dispatch_us(int threads) {
  // Enough chunks that every thread gets one; the body does nothing, so what is left is the
  // pool's fork and join.
  std::vector<double> us;
  for (int i = 0; i < 201; ++i) {
    auto t0 = Clock::now();
    kernels::parallel_for(threads, threads, [](int64_t, int64_t) {});
    us.push_back(ms_since(t0) * 1e3);
  }
  return median(us);
}

bool int8_op(const std::string& op) { return op == "kiln.QConv" || op == "kiln.QMatMul"; }

KernelJudgement judge_kernel(double flops, double bytes, double ms, const Roof& roof, bool int8) {
  KILN_CHECK(roof.peak_gflops > 0 && roof.bandwidth_gbs > 0, "profile: roof peak and bandwidth must be positive");
  KernelJudgement j;
  const double peak = int8 && roof.int8_peak_gops > 0 ? roof.int8_peak_gops : roof.peak_gflops;
  double compute_ms = flops / (peak * 1e9) * 1e3;
  double memory_ms = bytes / (roof.bandwidth_gbs * 1e9) * 1e3;
  j.intensity = bytes > 0 ? flops / bytes : 0;
  j.gflops = ms > 0 ? flops / (ms * 1e-3) / 1e9 : 0;
  j.gbs = ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0;
  j.roof_ms = std::max(compute_ms, memory_ms);
  j.roof_fraction = ms > 0 ? j.roof_ms / ms : 0;
  if (j.roof_ms * 1e3 < roof.dispatch_us) j.verdict = Bound::overhead;
  else j.verdict = compute_ms >= memory_ms ? Bound::compute : Bound::memory;
  return j;
}

void summarize(Profile& p, const SourceMap& sources) {
  p.kernel_ms = 0;
  for (const auto& k : p.kernels) p.kernel_ms += k.ms;
  p.sources.clear();
  std::unordered_map<std::string, size_t> source_index;
  for (auto& k : p.kernels) {
    k.share = p.kernel_ms > 0 ? k.ms / p.kernel_ms : 0;
    k.j = judge_kernel(k.flops, k.bytes, k.ms, p.roof, int8_op(k.op));
    auto it = sources.find(k.name);
    if (it == sources.end()) continue;
    // The kernel's time split over the nodes it covers by their roof times in the source graph.
    std::vector<double> weight;
    double total = 0;
    for (const SourceNode& s : it->second) {
      weight.push_back(judge_kernel(s.flops, s.bytes, 0, p.roof).roof_ms);
      total += weight.back();
    }
    for (size_t i = 0; i < it->second.size(); ++i) {
      const SourceNode& s = it->second[i];
      k.nodes.push_back(s.name);
      double ms = k.ms * (total > 0 ? weight[i] / total : 1.0 / static_cast<double>(weight.size()));
      auto [pos, fresh] = source_index.emplace(s.name, p.sources.size());
      if (fresh) p.sources.push_back({s.name, s.op, k.name, 0});
      p.sources[pos->second].ms += ms;
    }
  }
}

void attach_predictions(Profile& p, const PerfRow& row) {
  std::unordered_map<std::string, double> ms;
  for (const auto& e : row.ops)
    if (e.node) ms[e.node->name] += e.time.total_s() * 1e3;
  for (auto& k : p.kernels) {
    auto it = ms.find(k.name);
    k.predicted_ms = it != ms.end() ? it->second : -1;
  }
}

Profile profile_model(Executable& exe, const std::vector<Tensor>& inputs, const Model& costed, const SourceMap& sources,
                      const Roof& roof, const ProfileOptions& opt) {
  KILN_CHECK(opt.runs >= 1, "profile: runs must be at least 1");
  KILN_CHECK(opt.threads >= 1, "profile: threads must be at least 1");
  Profile p;
  p.threads = opt.threads;
  p.runs = opt.runs;
  p.roof = roof;
  RunOptions ro;
  ro.threads = opt.threads;
  std::vector<Tensor> outputs;
  for (int i = 0; i < opt.warmup; ++i) {
    exe.run(inputs, outputs, ro);
    exe.profile_run(inputs, outputs, ro);
  }
  std::vector<double> plain, profiled;
  const auto first = Clock::now();
  while (static_cast<int>(plain.size()) < opt.runs) {
    const bool counts_before = run_counts(opt);
    auto t0 = Clock::now();
    exe.run(inputs, outputs, ro);
    const double plain_ms = ms_since(t0);
    t0 = Clock::now();
    const double start_ms = std::chrono::duration<double, std::milli>(t0 - first).count();
    std::vector<StepTiming> steps = exe.profile_run(inputs, outputs, ro);
    const double profiled_ms = ms_since(t0);
    const bool counts_after = run_counts(opt);
    if (!counts_before || !counts_after) continue;
    plain.push_back(plain_ms);
    p.run_start_ms.push_back(start_ms);
    p.timeline.push_back(std::move(steps));
    profiled.push_back(profiled_ms);
  }
  p.plain_ms = median(plain);
  p.profiled_ms = median(profiled);
  p.overhead_fraction = p.plain_ms > 0 ? p.profiled_ms / p.plain_ms - 1 : 0;

  std::unordered_map<std::string, const Node*> by_name;
  // Steps of If branches are timed too (the runtime plans them): their nodes cost like any other.
  std::function<void(const Graph&)> index = [&](const Graph& g) {
    for (const auto& n : g.nodes()) {
      by_name.emplace(n->name, n.get());
      for (const Graph* sg : ops::compiled_branches(*n)) index(*sg);
    }
  };
  index(*costed.graph);
  const std::vector<StepTiming>& steps = p.timeline.front();
  for (size_t s = 0; s < steps.size(); ++s) {
    KernelProfile k;
    k.name = steps[s].node;
    k.op = steps[s].op;
    k.tactic = steps[s].tactic;
    k.fast = steps[s].fast;
    k.fetch_ahead_bytes = steps[s].fetch_ahead_bytes, k.fetch_ahead_for = steps[s].fetch_ahead_for;
    std::vector<double> ms;
    for (const auto& run : p.timeline) ms.push_back(run.at(s).ms);
    k.ms = median(ms);
    auto it = by_name.find(k.name);
    std::optional<ops::Cost> c = it != by_name.end() ? ops::node_cost(*it->second) : std::nullopt;
    k.costed = c.has_value();
    if (c) {
      k.flops = c->flops;
      k.bytes = c->bytes_read + c->bytes_written;
    }
    p.kernels.push_back(std::move(k));
  }
  summarize(p, sources);
  p.suggestions = suggest(p, *costed.graph);
  return p;
}

}  // namespace kiln::analysis

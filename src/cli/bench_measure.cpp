#include "bench_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace kiln::cli {
namespace {

// At each hand-over the backend that ran waits until it is idle (ORT's worker threads spin for
// ~40 ms after a run before they sleep: BenchBackend::wait_until_idle), then a short pause, so
// that one backend's idle spinning stays out of the next one's timed block. Before the wait,
// kiln's 2-thread resnet50 blocks right after ORT's ran 25% slower than alone.
constexpr auto kSettle = std::chrono::milliseconds(20);
constexpr int kDefaultBlock = 5;  // without warm-up runs to size blocks by
constexpr int kMaxBlock = 10;

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

}  // namespace

int auto_block_size(double slowest_run_ms) {
  constexpr double kBlockTargetMs = 100;
  if (!(slowest_run_ms > 0)) return kMaxBlock;
  return static_cast<int>(std::clamp(std::floor(kBlockTargetMs / slowest_run_ms), 1.0, double(kMaxBlock)));
}

Measured measure_interleaved(const std::vector<BenchBackend*>& backends, const MeasurePlan& plan) {
  KILN_CHECK(plan.runs >= 1 && plan.warmup >= 0 && plan.block >= 0, "bench: bad runs/warm-up/block");
  Measured m;
  // The slowest backend's fastest warm-up run sizes the blocks.
  double slowest_ms = 0;
  m.warmup_fastest_ms.assign(backends.size(), 0);
  for (size_t i = 0; i < backends.size(); ++i) {
    if (plan.warmup > 0) {
      std::vector<double> ms = backends[i]->time_runs(plan.warmup);
      m.warmup_fastest_ms[i] = *std::min_element(ms.begin(), ms.end());
      slowest_ms = std::max(slowest_ms, m.warmup_fastest_ms[i]);
    }
    backends[i]->wait_until_idle();
    std::this_thread::sleep_for(kSettle);
  }
  m.block = plan.block > 0 ? plan.block : plan.warmup > 0 ? auto_block_size(slowest_ms) : kDefaultBlock;
  m.times.resize(backends.size());
  m.idle_waits_ms.resize(backends.size());
  int rounds = (plan.runs + m.block - 1) / m.block;
  for (int round = 0; round < rounds; ++round) {
    if (plan.probe) m.probes.push_back(plan.probe());
    int n = std::min(m.block, plan.runs - round * m.block);
    // Alternate the order so that no backend always runs right after the same neighbour.
    for (size_t k = 0; k < backends.size(); ++k) {
      size_t i = round % 2 ? backends.size() - 1 - k : k;
      std::vector<double> ms = backends[i]->time_runs(n, plan.gap_ms);
      m.times[i].insert(m.times[i].end(), ms.begin(), ms.end());
      m.idle_waits_ms[i].push_back(backends[i]->wait_until_idle() * 1e3);
      std::this_thread::sleep_for(kSettle);
    }
    int done = std::min(plan.runs, (round + 1) * m.block);
    // A progress line about every 10% of the runs, and after the last.
    if (plan.progress && (done == plan.runs || done * 10 / plan.runs != (done - n) * 10 / plan.runs)) {
      std::string line = str_cat("bench: ", done, "/", plan.runs, " runs:");
      for (size_t i = 0; i < backends.size(); ++i)
        line += str_cat(i ? "," : "", " ", backends[i]->name(), " ", format_ms(summarize(m.times[i]).median_ms), " ms");
      plan.progress(line + " (medians so far)");
    }
  }
  if (plan.probe) m.probes.push_back(plan.probe());
  return m;
}

double load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double load = -1;
  if (std::fscanf(f, "%lf", &load) != 1) load = -1;
  std::fclose(f);
  return load;
}

std::vector<OutputCheck> check_outputs(const std::string& backend, const TensorMap& actual,
                                       const TensorMap& reference, const std::vector<std::string>& output_names,
                                       double tolerance, double min_cosine) {
  std::vector<OutputCheck> checks;
  for (const auto& name : output_names) {
    OutputCheck c{backend, name, {}};
    auto a = actual.find(name), r = reference.find(name);
    if (a != actual.end() && r != reference.end()) {
      c.c = compare_tensors(a->second, r->second, tolerance, 0);
      if (min_cosine > 0) c.c.ok = c.c.same_shape && c.c.cosine >= min_cosine;
    }
    checks.push_back(c);
  }
  return checks;
}

}  // namespace kiln::cli

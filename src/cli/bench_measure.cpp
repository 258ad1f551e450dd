#include "bench_measure.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace kiln::cli {
namespace {

// ORT's worker threads spin for a while after a run before they sleep; a short pause at each
// hand-over keeps one backend's idle spinning out of the next one's timed block.
constexpr auto kSettle = std::chrono::milliseconds(20);

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

}  // namespace

std::vector<std::vector<double>> measure_interleaved(const std::vector<BenchBackend*>& backends,
                                                     const MeasurePlan& plan) {
  KILN_CHECK(plan.runs >= 1 && plan.warmup >= 0 && plan.block >= 1, "bench: bad runs/warm-up/block");
  for (BenchBackend* b : backends) {
    if (plan.warmup > 0) b->time_runs(plan.warmup);
    std::this_thread::sleep_for(kSettle);
  }
  std::vector<std::vector<double>> times(backends.size());
  int rounds = (plan.runs + plan.block - 1) / plan.block;
  for (int round = 0; round < rounds; ++round) {
    int n = std::min(plan.block, plan.runs - round * plan.block);
    // Alternate the order so that no backend always runs right after the same neighbour.
    for (size_t k = 0; k < backends.size(); ++k) {
      size_t i = round % 2 ? backends.size() - 1 - k : k;
      std::vector<double> ms = backends[i]->time_runs(n);
      times[i].insert(times[i].end(), ms.begin(), ms.end());
      std::this_thread::sleep_for(kSettle);
    }
    if (plan.progress) {
      std::string line = str_cat("bench: ", std::min(plan.runs, (round + 1) * plan.block), "/", plan.runs, " runs:");
      for (size_t i = 0; i < backends.size(); ++i)
        line += str_cat(i ? "," : "", " ", backends[i]->name(), " ", format_ms(summarize(times[i]).median_ms), " ms");
      plan.progress(line + " (medians so far)");
    }
  }
  return times;
}

std::vector<OutputCheck> check_outputs(const std::string& backend, const TensorMap& actual,
                                       const TensorMap& reference, const std::vector<std::string>& output_names,
                                       double tolerance) {
  std::vector<OutputCheck> checks;
  for (const auto& name : output_names) {
    OutputCheck c{backend, name, {}};
    auto a = actual.find(name), r = reference.find(name);
    if (a != actual.end() && r != reference.end()) c.c = compare_tensors(a->second, r->second, tolerance, 0);
    checks.push_back(c);
  }
  return checks;
}

}  // namespace kiln::cli

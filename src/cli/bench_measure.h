// How `kiln bench` measures: every backend warms up, then the timed runs are taken in small
// blocks that go round the backends (kiln 5, ORT 5, kiln 5, ...), so that all of them see the
// same machine noise instead of one running while the machine is quiet and the other not.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "bench_backends.h"
#include "bench_report.h"

namespace kiln::cli {

struct MeasurePlan {
  int runs = 20;    // timed runs per backend
  int warmup = 3;   // untimed runs per backend before the first block
  int block = 0;    // runs per backend per turn; 0: as many as take ~100 ms (1 to 10)
  int gap_ms = 0;   // idle time before each timed run (intermittent load), untimed
  std::function<void(const std::string&)> progress;  // one line per round (may be empty)
  // Read before each round and once after the last (may be empty): with several threads, where
  // the host has the cores (the round trip of a cache line between them; -1: no reading), so
  // that each round can be told apart by placement (bench_report.h, split_by_placement).
  std::function<double()> probe;
};

struct Measured {
  std::vector<std::vector<double>> times;  // timed runs per backend, in the order of `backends`
  std::vector<std::vector<double>> idle_waits_ms;  // per backend: BenchBackend::wait_until_idle after each block
  std::vector<double> warmup_fastest_ms;   // per backend: its fastest warm-up run (0: none ran)
  int block = 0;                           // the block size used
  std::vector<double> probes;              // plan.probe's readings: rounds + 1 (none without a probe)
};

// Short blocks share the machine's noise best; tiny models get longer blocks so that a
// thread pool is not measured cold after every hand-over pause.
int auto_block_size(double slowest_run_ms);

Measured measure_interleaved(const std::vector<BenchBackend*>& backends, const MeasurePlan& plan);

// The 1-minute load average (from /proc/loadavg), or -1 where there is none: the bench
// records it because the machine it runs on is shared.
double load_average();

// Each backend's outputs against the reference's, output by output (graph output order).
// A missing output or a shape mismatch is reported as a failed check. ok: max|Δ| <= tolerance *
// max|ref|, or, with min_cosine > 0 (int8 models), cosine >= min_cosine.
std::vector<OutputCheck> check_outputs(const std::string& backend, const TensorMap& actual,
                                       const TensorMap& reference, const std::vector<std::string>& output_names,
                                       double tolerance, double min_cosine = 0);

}  // namespace kiln::cli

// `kiln profile --balance`: where each kernel's wall time goes across the threads. Separate
// profiled runs with the pool's stats on (kernels::set_pool_stats) record, per kernel, the time
// each thread spent inside the kernel's parallel pieces. At T threads a kernel of wall time ms
// has T x ms thread-ms; what the threads did not spend in pieces is lost, and splits into
//   imbalance: the sum over threads of (busiest thread's work - its work), time threads waited
//              for the slowest one at the joins (or had nothing: a kernel that ran on one
//              thread leaves the others idle for its whole time);
//   overhead:  T x (ms - the busiest thread's work), time not even the busiest thread was in a
//              piece: waking the workers, the joins' round trips, the kernel's serial code.
// The main profile's numbers come from runs without the stats (a clock read per piece).
#pragma once
#include <string>
#include <vector>

#include "kiln/analysis/profile.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

struct KernelBalance {
  std::string name, op, tactic;
  double ms = 0;                // median wall time in the --balance runs
  std::vector<double> busy_ms;  // per thread (0: the caller), median time inside the pieces
  double work_ms = 0;           // busy_ms summed
  double imbalance_ms = 0, overhead_ms = 0;  // thread-ms, as above (each at least 0)
  double regions = 0, pieces = 0, stolen = 0;  // per run, mean
  bool split() const { return busy_ms.size() > 1 && busy_ms[1] > 0; }
};

struct Balance {
  int threads = 1, runs = 0;
  std::vector<KernelBalance> kernels;  // in run order
  // Summed over the kernels: wall ms, work and the lost thread-ms; one_thread_ms: the wall time
  // of kernels that ran on one thread (not split).
  double ms = 0, work_ms = 0, imbalance_ms = 0, overhead_ms = 0, one_thread_ms = 0;
  size_t one_thread = 0;
  double lost_ms() const { return imbalance_ms + overhead_ms; }
};

// Turns an already timed set of runs (StepTiming with busy_ms) into medians and sums; `threads`
// is the run's thread count. Throws kiln::Error when the runs' steps differ or carry no stats.
Balance balance_from_runs(const std::vector<std::vector<StepTiming>>& runs, int threads);

// opt.warmup runs, then opt.runs, each a plain run followed by one with the pool's stats on.
Balance profile_balance(Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt);

// The sums, then the top kernels by lost thread-ms.
std::string balance_to_text(const Balance& b, size_t top);
// {"threads", "runs", "ms", "work_ms", "imbalance_ms", "overhead_ms", "one_thread_ms",
//  "kernels": [{"name", "op", "tactic", "ms", "busy_ms": [..], "work_ms", "imbalance_ms",
//  "overhead_ms", "regions", "pieces", "stolen"}]}
json::Value balance_json(const Balance& b);

}  // namespace kiln::analysis

// `kiln profile --balance`: where each kernel's wall time goes across the threads. Separate
// profiled runs with the pool's stats on (kernels::set_pool_stats) record, per kernel, the time
// each thread spent inside the kernel's parallel pieces. At T threads a kernel of wall time ms
// has T x ms thread-ms; what the threads did not spend in pieces is lost, and splits into
//   imbalance: the sum over threads of (busiest thread's work - its work), time threads waited
//              for the slowest one at the joins (or had nothing: a kernel that ran on one
//              thread leaves the others idle for its whole time);
//   overhead:  T x (ms - the busiest thread's work), time not even the busiest thread was in a
//              piece, in two parts: the kernel's serial code outside its parallel regions (T x
//              its wall time: the other threads idle meanwhile), and synchronisation inside the
//              regions (waking the workers, the joins' round trips).
// The main profile's numbers come from runs without the stats (a clock read per piece).
#pragma once
#include <algorithm>
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
  double serial_ms = 0;  // wall time outside the kernel's parallel regions (median)
  // overhead_ms's parts, in thread-ms: the serial code's, and the regions' synchronisation.
  double serial_thread_ms(int threads) const { return std::min(overhead_ms, threads * serial_ms); }
  double regions = 0, pieces = 0, stolen = 0;  // per run, mean
  int region_threads = 0;  // most threads a region was cut for, over the runs (1: never split)
  // Cut for more threads, but only the caller ran pieces (the others' cores busy elsewhere, or
  // the caller took every piece before they came).
  bool caller_alone() const {
    return region_threads > 1 && std::all_of(busy_ms.begin() + 1, busy_ms.end(), [](double b) { return b <= 0; });
  }
};

struct Balance {
  int threads = 1, runs = 0;
  std::vector<KernelBalance> kernels;  // in run order
  // Summed over the kernels: wall ms, work and the lost thread-ms; one_thread_ms: the wall time
  // of kernels that ran on one thread (never split), caller_alone_ms: of those split but whose
  // pieces the caller ran alone.
  double ms = 0, work_ms = 0, imbalance_ms = 0, overhead_ms = 0, one_thread_ms = 0, caller_alone_ms = 0;
  size_t one_thread = 0, caller_alone = 0;
  // overhead_ms's parts: the kernels' serial code (wall ms and thread-ms) and synchronisation.
  double serial_ms = 0, serial_thread_ms = 0, sync_ms = 0;
  // After the runs, pool thread t's speed against the caller's in the regions cut in one share a
  // thread (kernels::thread_speed; [0] is the caller's 1): what those regions' shares follow.
  std::vector<double> thread_speeds;
  double lost_ms() const { return imbalance_ms + overhead_ms; }
};

// Turns an already timed set of runs (StepTiming with busy_ms) into medians and sums; `threads`
// is the run's thread count. Throws kiln::Error when the runs' steps differ or carry no stats.
Balance balance_from_runs(const std::vector<std::vector<StepTiming>>& runs, int threads);

// opt.warmup runs, then opt.runs, each a plain run followed by one with the pool's stats on.
Balance profile_balance(Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt);

// The sums, then the top kernels by lost thread-ms.
std::string balance_to_text(const Balance& b, size_t top);
// {"threads", "runs", "ms", "work_ms", "imbalance_ms", "overhead_ms", "serial_ms",
//  "serial_thread_ms", "sync_ms", "one_thread_ms", "caller_alone_ms", "thread_speeds": [..],
//  "kernels": [{"name", "op",
//  "tactic", "ms", "busy_ms": [..], "work_ms", "imbalance_ms", "overhead_ms", "serial_ms",
//  "region_threads", "regions", "pieces", "stolen"}]}
json::Value balance_json(const Balance& b);

}  // namespace kiln::analysis

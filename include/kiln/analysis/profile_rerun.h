// `kiln profile --rerun`: what each kernel of a compiled model pays to reach its data. Separate
// profiled runs (Executable::profile_run with rerun) run every kernel a second time right after
// itself; the second call finds its inputs, weights and output lines where the first left them
// (in L1/L2, on the cores that wrote them), so the first call's time minus the second's is what
// bringing them in cost the first time: lines from L3 or DRAM, and lines the other core wrote
// last (on a host whose two vCPUs sit on different core complexes, the larger share at two
// threads). Kernels that write what they read (a layer planned in place, a residual added into
// its own output) are not run again, nor are If steps and the op table's reference kernels;
// they are listed apart. The main profile's numbers come from runs without the second calls.
#pragma once
#include <string>
#include <vector>

#include "kiln/analysis/profile.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

struct KernelRerun {
  std::string name, op, tactic;
  double ms = 0;         // median of the first call, in the runs with second calls
  double again_ms = -1;  // median of the second call; -1: not run again
  double cold_ms = 0;    // ms - again_ms (0 where not run again; below 0: noise)
};

struct Rerun {
  int threads = 1, runs = 0;
  std::vector<KernelRerun> kernels;  // in run order
  // Summed over the kernels run again: first calls, second calls, and the difference.
  double ms = 0, again_ms = 0, cold_ms = 0;
  // The kernels not run again, and their first calls' time summed.
  size_t not_rerun = 0;
  double not_rerun_ms = 0;
};

// opt.warmup runs, then opt.runs, each a plain run followed by a run with second calls, on
// opt.threads threads.
Rerun profile_rerun(Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt);

// The top kernels by cold_ms, the sums, and the kernels not run again.
std::string rerun_to_text(const Rerun& r, size_t top);
// {"threads", "runs", "ms", "again_ms", "cold_ms", "not_rerun_ms", "kernels": [{"name", "op",
//  "tactic", "ms", "again_ms", "cold_ms"}], "not_rerun": [names]}
json::Value rerun_json(const Rerun& r);

}  // namespace kiln::analysis

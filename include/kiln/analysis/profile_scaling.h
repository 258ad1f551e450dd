// `kiln profile --scaling`: how each kernel of a compiled model scales from one thread to N, the
// same kernels profiled both ways (analysis::profile_model at 1 and at N threads).
//
// The model's own speed-up S = plain run at 1 thread / plain run at N. A kernel's time lost to
// scaling is its time at N minus its time at 1 divided by S: what it costs beyond scaling like
// the model as a whole. Kernels that take longer at N than at 1 are listed apart: a kernel split
// over threads whose work does not pay for the split, or one that reads lines the other core
// wrote (the rule: no model may get slower with more threads).
#pragma once
#include <string>
#include <vector>

#include "kiln/analysis/profile.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

struct KernelScaling {
  std::string name, op, tactic;
  double ms_one = 0, ms_n = 0;  // medians at 1 and at N threads
  double speedup = 0;           // ms_one / ms_n (0 when ms_n is 0)
  double lost_ms = 0;           // ms_n - ms_one / model speed-up
};

struct Scaling {
  int threads = 1;                    // N
  double plain_ms_one = 0, plain_ms_n = 0;
  double speedup = 0;                 // plain_ms_one / plain_ms_n
  std::vector<KernelScaling> kernels; // in run order
};

// Pairs the kernels of the two profiles (the same artifact: the same kernels in the same order);
// a kernel list that differs is an error.
Scaling compare_scaling(const Profile& one, const Profile& n);

// The top kernels by time lost, then the kernels slower at N than at 1.
std::string scaling_to_text(const Scaling& s, size_t top);
// {"threads", "plain_ms_one_thread", "plain_ms", "speedup", "kernels": [{"name", "op", "tactic",
//  "ms_one_thread", "ms", "speedup", "lost_ms"}], "slower_kernels": [names]}
json::Value scaling_json(const Scaling& s);

}  // namespace kiln::analysis

// Executable::profile_run: one run of a shape instance with the time of every step.
#include <algorithm>
#include <vector>

#include "kiln/runtime/executable.h"
#include "shape_instance.h"

namespace kiln::runtime {

std::vector<StepTiming> timed_run(ShapeInstance& inst, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs, int threads, bool rerun) {
  StepTrace trace;
  trace.rerun = rerun;
  trace.entries.reserve(256);
  if (kernels::pool_stats_on()) (void)kernels::take_pool_stats();  // what ran before this run
  inst.run(inputs, outputs, threads, &trace);
  // One clock read between steps: a step's time runs from the end of the one before it. An If's
  // entry follows its branch's steps, so it keeps only its own work (the condition, copies out).
  std::vector<StepTiming> steps(trace.entries.size());
  double prev = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepTrace::Entry& e = trace.entries[i];
    const Node& n = *e.node;
    steps[i].node = n.name;
    steps[i].op = n.domain.empty() ? n.op : n.domain + "." + n.op;
    steps[i].tactic = n.attr_s("tactic", "");
    // The direct tactic's Winograd tiles (lower/winograd.cpp) do another algorithm's work: name it.
    if (n.attr_i("winograd", 0) != 0) steps[i].tactic = "winograd";
    steps[i].fast = e.fast;
    steps[i].start_ms = prev;
    steps[i].ms = e.end_ms - prev;
    steps[i].again_ms = e.again_ms;
    steps[i].fetch_ahead_bytes = e.fetch_ahead_bytes;
    if (e.fetch_ahead_for) steps[i].fetch_ahead_for = e.fetch_ahead_for->name;
    if (e.has_pool) {
      const int used = std::min(std::max(e.pool.threads, 1), kernels::PoolStats::kThreads);
      for (int t = 0; t < used; ++t) steps[i].busy_ms.push_back(e.pool.busy_ns[t] * 1e-6);
      steps[i].regions = e.pool.regions, steps[i].pieces = e.pool.pieces, steps[i].stolen = e.pool.stolen;
      steps[i].region_ms = e.pool.region_ns * 1e-6;
      steps[i].region_threads = e.pool.threads;
    }
    prev = e.resume_ms;  // a step run again: the next one's time counts from the end of that
  }
  return steps;
}

}  // namespace kiln::runtime

// Executable::profile_run: one run of a shape instance with the time of every step.
#include <vector>

#include "kiln/runtime/executable.h"
#include "shape_instance.h"

namespace kiln::runtime {

std::vector<StepTiming> timed_run(ShapeInstance& inst, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs, int threads) {
  // Filled before the run, so the run itself only reads the clock once per step.
  std::vector<StepTiming> steps(inst.steps());
  std::vector<double> end_ms(inst.steps(), 0.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Node& n = inst.step_node(i);
    steps[i].node = n.name;
    steps[i].op = n.domain.empty() ? n.op : n.domain + "." + n.op;
    steps[i].tactic = n.attr_s("tactic", "");
    steps[i].fast = inst.step_is_fast(i);
  }
  inst.run(inputs, outputs, threads, end_ms.data());
  double prev = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i].start_ms = prev;
    steps[i].ms = end_ms[i] - prev;
    prev = end_ms[i];
  }
  return steps;
}

}  // namespace kiln::runtime

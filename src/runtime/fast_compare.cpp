// Equal, Less, LessOrEqual, Greater and GreaterOrEqual straight into the arena: the broadcast
// plan is made once per shape and each run compares (kiln/ops/compare.h, the reference
// kernels' own loop). The reference kernels planned, allocated the output and built a
// KernelContext on every run (BERT's attention-mask Equal: 18 heap allocations a run).
// Identical results; f16 / bf16 operands decline (the reference compares them through f32).
#include <memory>

#include "kiln/ops/compare.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct State {
  ops::Comparison cmp{};
  ops::BroadcastPlan plan;
  DType dtype = DType::undefined;
};

bool prepare(StepContext& ctx) {
  const Node& node = *ctx.node;
  const auto cmp = ops::comparison_of(node.op);
  const Value* a = node.input(0);
  const Value* b = node.input(1);
  if (!cmp || !a || !b || node.outputs.empty() || !node.outputs[0]) return false;
  if (!a->shape.is_static() || !b->shape.is_static() || a->dtype != b->dtype || !ops::compare_takes(a->dtype))
    return false;  // the reference kernel runs it (and names what is wrong)
  auto s = std::make_shared<State>();
  s->cmp = *cmp;
  s->dtype = a->dtype;
  const std::vector<int64_t> da = a->shape.static_dims(), db = b->shape.static_dims();
  try {
    s->plan = ops::plan_broadcast({&da, &db}, node);
  } catch (const std::exception&) {
    return false;
  }
  ctx.state = s;
  return true;
}

void run(StepContext& ctx) {
  const State& s = *static_cast<const State*>(ctx.state.get());
  ops::compare(s.cmp, s.plan, s.dtype, ctx.in(0).raw(), ctx.in(1).raw(), ctx.out(0).data<bool>(), ctx.threads);
}

}  // namespace

FastKernel fast_Compare() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

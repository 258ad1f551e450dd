// Pad with constant pads (and fill value): the per-dim source maps of ops::pad_plan are made once
// per shape, and each run copies rows through them (ops::pad_copy, the reference kernel's own
// loop). The reference kernel rebuilt the maps, allocated the output and a KernelContext on every
// run (Silero VAD's reflect pad of its 512 samples: 3.2 us a frame).
#include <memory>

#include "kiln/ops/views.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

const Tensor* constant_of(const Value* v) { return v && v->initializer ? &*v->initializer : nullptr; }

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  if (!x || !x->shape.is_static() || x->shape.rank() > static_cast<size_t>(ops::kMaxPadRank)) return false;
  const Tensor* pads = ctx.opset >= 11 ? constant_of(n.input(1)) : nullptr;
  const Tensor* value = ctx.opset >= 11 ? constant_of(n.input(2)) : nullptr;
  if (ctx.opset >= 11 && (!pads || (n.input(2) && !value) || n.input(3))) return false;  // run-time pads, axes
  try {
    ctx.state = std::make_shared<ops::PadPlan>(ops::pad_plan(n, ctx.opset, x->shape.static_dims(), x->dtype, pads, value));
  } catch (const Error&) {
    return false;  // the reference kernel reports it
  }
  return true;
}

void run(StepContext& ctx) {
  ops::pad_copy(*static_cast<const ops::PadPlan*>(ctx.state.get()), ctx.in(0).raw(), ctx.out(0).raw());
}

}  // namespace

FastKernel fast_Pad() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

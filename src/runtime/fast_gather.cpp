// Gather straight into the arena: the layout (kiln/ops/gather.h, shared with the reference
// kernel) is worked out once per shape; each run checks the indices and copies the rows. The
// reference kernel built a KernelContext and an int64 copy of the indices on every run (BERT's
// word-embedding lookup: 12 heap allocations a run). Bit-identical to the reference.
#include <memory>

#include "kiln/ops/gather.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct State {
  ops::GatherLayout layout;
  size_t elem = 0;
  int64_t count = 0;  // indices
  std::string where;  // the node, for an out-of-range index
};

bool prepare(StepContext& ctx) {
  const Node& node = *ctx.node;
  const Value* x = node.input(0);
  const Value* ind = node.input(1);
  if (!x || !ind || !x->shape.is_static() || !ind->shape.is_static() || node.outputs.empty() || !node.outputs[0])
    return false;
  if (ind->dtype != DType::i64 && ind->dtype != DType::i32) return false;  // the reference says why
  auto s = std::make_shared<State>();
  try {
    s->layout = ops::gather_layout(node, x->shape.static_dims(), ind->shape.static_dims());
  } catch (const std::exception&) {
    return false;  // the reference kernel runs it and reports the error
  }
  s->elem = dtype_size(x->dtype);
  s->count = 1;
  for (int64_t d : ind->shape.static_dims()) s->count *= d;
  s->where = str_cat(node.describe(), " (opset ", ctx.opset, ")");
  ctx.state = s;
  return true;
}

void run(StepContext& ctx) {
  const State& s = *static_cast<const State*>(ctx.state.get());
  const Tensor& ind = ctx.in(1);
  ops::gather_copy(s.layout, s.elem, ctx.in(0).raw(), ind.raw(), ind.dtype(), s.count, ctx.out(0).raw(), s.where);
}

}  // namespace

FastKernel fast_Gather() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

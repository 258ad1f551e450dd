// Concat straight into the arena: the layout (kiln/ops/views.h, shared with the reference
// kernel) is worked out once per shape, and each run copies every input's rows into its
// columns of the output. GPT-2's decode step concatenates each layer's cached keys and values
// with the new token's (24 Concats); on the reference kernel they cost ~100 heap allocations a
// run. A copy: bit-identical.
#include <memory>

#include "kiln/kernels/parallel.h"
#include "kiln/ops/views.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct State {
  ops::ConcatLayout layout;
  size_t elem = 0;
};

bool prepare(StepContext& ctx) {
  const Node& node = *ctx.node;
  if (node.inputs.empty() || node.outputs.empty() || !node.outputs[0]) return false;
  std::vector<std::vector<int64_t>> dims;
  for (const Value* v : node.inputs) {
    // An omitted input, a run-time shape or mixed dtypes: the reference kernel runs it (and says
    // what is wrong).
    if (!v || !v->shape.is_static() || v->dtype != node.inputs[0]->dtype) return false;
    dims.push_back(v->shape.static_dims());
  }
  std::vector<const std::vector<int64_t>*> ptrs;
  for (const auto& d : dims) ptrs.push_back(&d);
  auto s = std::make_shared<State>();
  try {
    s->layout = ops::concat_layout(node, ptrs);
  } catch (const std::exception&) {
    return false;
  }
  s->elem = dtype_size(node.inputs[0]->dtype);
  ctx.state = s;
  return true;
}

void run(StepContext& ctx) {
  const State& s = *static_cast<const State*>(ctx.state.get());
  void* y = ctx.out(0).raw();
  // Output rows split over threads when the copy is large (the reference kernel's copy is
  // serial): GPT-2's cache Concats stream 0.4 MB each.
  const double elements = static_cast<double>(s.layout.outer) * static_cast<double>(s.layout.row);
  const int threads = s.layout.outer > 1 && elements >= (1 << 16) ? ctx.threads : 1;
  kernels::parallel_for(s.layout.outer, threads, [&](int64_t o0, int64_t o1) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) ops::concat_copy(s.layout, i, s.elem, ctx.in(i).raw(), y, o0, o1);
  });
}

}  // namespace

FastKernel fast_Concat() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

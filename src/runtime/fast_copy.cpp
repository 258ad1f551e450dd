// Reshape, Flatten, Squeeze, Unsqueeze and Identity whose output the memory plan could not make
// a view (a branch's graph output, which needs bytes of its own; a view of a value whose bytes
// move between runs): the same bytes under other dims, one memcpy. The reference kernels
// re-read the shape input and allocated on every run.
#include <cstring>

#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!x || !y || n.outputs.size() != 1 || !x->shape.is_static() || !y->shape.is_static() || x->dtype != y->dtype)
    return false;
  return x->shape.numel() == y->shape.numel();
}

void run(StepContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.raw() != x.raw() && y.nbytes() != 0) std::memcpy(y.raw(), x.raw(), y.nbytes());
}

}  // namespace

FastKernel fast_Copy() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

// Shape and Size: at a planned shape their results are constants, worked out once per shape when
// the step is prepared (ops::shape_op_dims, the reference kernel's own reading of start/end);
// each run copies them into the arena. The reference kernels allocated a tensor on every run.
#include <cstring>
#include <memory>

#include "kiln/ops/views.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  if (!x || !x->shape.is_static() || n.outputs.empty() || !n.outputs[0]) return false;
  const std::vector<int64_t> dims = x->shape.static_dims();
  std::vector<int64_t> values;
  if (n.op == "Shape") {
    values = ops::shape_op_dims(n, dims);
  } else {
    int64_t numel = 1;
    for (int64_t d : dims) numel *= d;
    values = {numel};
  }
  ctx.state = std::make_shared<std::vector<int64_t>>(std::move(values));
  return true;
}

void run(StepContext& ctx) {
  const auto& values = *static_cast<const std::vector<int64_t>*>(ctx.state.get());
  std::memcpy(ctx.out(0).raw(), values.data(), values.size() * sizeof(int64_t));
}

}  // namespace

FastKernel fast_Shape() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

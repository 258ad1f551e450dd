// kiln.DepthwiseProject (lower/depthwise_project.cpp): the depthwise convolution and the 1x1
// projection band by band (kernels::depthwise_project), both weights packed by the lowering, each
// convolution's bias and activation in its own epilogue, the projection's residual in its. The
// workspace holds the whole depthwise output for the runs that take the two convolutions one
// after the other (one thread, or cores that share an L3 where the pair is not one band per
// thread: kernels::depthwise_project_bands_pay).
#include "fast_common.h"
#include "kiln/kernels/depthwise_project.h"
#include "kiln/kernels/gemm_packed.h"

namespace kiln::runtime {
namespace {

struct DepthwiseProjectState {
  ops::DepthwiseProjectShapes shapes;
  kernels::Epilogue depthwise, project;  // bias and residual pointers filled per run
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const std::vector<int64_t> xd = banded_conv_input_dims(n, "depthwise + projection");
  const Value* x = n.input(0);
  auto st = std::make_shared<DepthwiseProjectState>();
  st->shapes = ops::depthwise_project_shapes(n, xd);
  const std::string bad = kernels::depthwise_project_unsupported(st->shapes.depthwise, st->shapes.project);
  KILN_CHECK(bad.empty(), n.describe(), ": cannot run input ", x->shape.str(), ": ", bad);
  depthwise_project_epilogues(n, 5, st->depthwise, st->project);
  ctx.workspace_bytes = static_cast<int64_t>(
      kernels::depthwise_project_workspace_floats(st->shapes.depthwise, st->shapes.project, ctx.max_threads) *
      sizeof(float));
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const DepthwiseProjectState& st = *static_cast<const DepthwiseProjectState*>(ctx.state.get());
  kernels::Epilogue depthwise = st.depthwise, project = st.project;
  if (ctx.inputs[2]) depthwise.bias = ctx.in(2).data<float>();
  if (ctx.inputs.size() > 4 && ctx.inputs[4]) project.bias = ctx.in(4).data<float>();
  if (ctx.inputs.size() > 5 && ctx.inputs[5]) project.residual = ctx.in(5).data<float>();
  kernels::depthwise_project(st.shapes.depthwise, st.shapes.project, ctx.in(0).data<float>(),
                             ctx.in(1).data<float>(), depthwise, ctx.in(3).data<float>(), project,
                             ctx.out(0).data<float>(), static_cast<float*>(ctx.workspace), ctx.threads);
}

}  // namespace

FastKernel fast_DepthwiseProject() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

// kiln.StemDepthwiseProject (lower/stem_depthwise_project.cpp): the RGB stem, the depthwise
// convolution and the 1x1 projection band by band (kernels::stem_depthwise_project), the three
// weights packed by the lowering, each convolution's bias and activation in its own epilogue, the
// projection's residual in its. The workspace holds the stem's whole output for the runs that
// take the stem and then the pair (one thread: kernels::stem_depthwise_project_bands).
#include "fast_common.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/stem_depthwise_project.h"

namespace kiln::runtime {
namespace {

struct StemDepthwiseProjectState {
  ops::StemDepthwiseProjectShapes shapes;
  kernels::Epilogue stem, depthwise, project;  // bias and residual pointers filled per run
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const std::vector<int64_t> xd = banded_conv_input_dims(n, "stem + depthwise + projection");
  const Value* x = n.input(0);
  auto st = std::make_shared<StemDepthwiseProjectState>();
  st->shapes = ops::stem_depthwise_project_shapes(n, xd);
  st->stem = epilogue_of(ops::stem_half(n));
  st->stem.bias_per_row = true;
  const std::string bad = kernels::stem_depthwise_project_unsupported(st->shapes.stem, st->stem.act,
                                                                      st->shapes.depthwise, st->shapes.project);
  KILN_CHECK(bad.empty(), n.describe(), ": cannot run input ", x->shape.str(), ": ", bad);
  depthwise_project_epilogues(n, 7, st->depthwise, st->project);
  ctx.workspace_bytes = static_cast<int64_t>(kernels::stem_depthwise_project_workspace_floats(
                                                 st->shapes.stem, st->shapes.depthwise, st->shapes.project,
                                                 ctx.max_threads) *
                                             sizeof(float));
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const StemDepthwiseProjectState& st = *static_cast<const StemDepthwiseProjectState*>(ctx.state.get());
  kernels::Epilogue stem = st.stem, depthwise = st.depthwise, project = st.project;
  if (ctx.inputs[2]) stem.bias = ctx.in(2).data<float>();
  if (ctx.inputs[4]) depthwise.bias = ctx.in(4).data<float>();
  if (ctx.inputs.size() > 6 && ctx.inputs[6]) project.bias = ctx.in(6).data<float>();
  if (ctx.inputs.size() > 7 && ctx.inputs[7]) project.residual = ctx.in(7).data<float>();
  kernels::stem_depthwise_project(st.shapes.stem, st.shapes.depthwise, st.shapes.project, ctx.in(0).data<float>(),
                                  ctx.in(1).data<float>(), stem, ctx.in(3).data<float>(), depthwise,
                                  ctx.in(5).data<float>(), project, ctx.out(0).data<float>(),
                                  static_cast<float*>(ctx.workspace), ctx.threads);
}

}  // namespace

FastKernel fast_StemDepthwiseProject() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

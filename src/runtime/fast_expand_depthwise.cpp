// kiln.ExpandDepthwise (lower/expand_depthwise.cpp): the expand 1x1 and the depthwise
// convolution band by band (kernels::expand_depthwise), both weights packed by the lowering, each
// convolution's bias and activation in its own epilogue. The workspace holds the whole expanded
// tensor for the runs that take the two convolutions one after the other (one thread, or cores
// that share an L3 and an expanded tensor their L2s hold: kernels::expand_depthwise_bands_pay).
#include "fast_common.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/gemm_packed.h"

namespace kiln::runtime {
namespace {

struct ExpandDepthwiseState {
  ops::ExpandDepthwiseShapes shapes;
  kernels::Epilogue expand, depthwise;  // bias pointers filled per run
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const std::vector<int64_t> xd = banded_conv_input_dims(n, "expand + depthwise");
  const Value* x = n.input(0);
  auto st = std::make_shared<ExpandDepthwiseState>();
  st->shapes = ops::expand_depthwise_shapes(n, xd);
  const std::string bad = kernels::expand_depthwise_unsupported(st->shapes.expand, st->shapes.depthwise);
  KILN_CHECK(bad.empty(), n.describe(), ": cannot run input ", x->shape.str(), ": ", bad);
  check_channel_means_output(n);
  st->depthwise = epilogue_of(n);
  st->depthwise.bias_per_row = true;
  const ops::ActivationSpec a = ops::expand_activation_of(n);
  st->expand.act = static_cast<kernels::Act>(a.act), st->expand.act_alpha = a.alpha, st->expand.act_beta = a.beta;
  st->expand.bias_per_row = true;
  ctx.workspace_bytes = static_cast<int64_t>(
      kernels::expand_depthwise_workspace_floats(st->shapes.expand, st->shapes.depthwise, ctx.max_threads) *
      sizeof(float));
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const ExpandDepthwiseState& st = *static_cast<const ExpandDepthwiseState*>(ctx.state.get());
  kernels::Epilogue expand = st.expand, depthwise = st.depthwise;
  expand.bias = ctx.in(2).data<float>();
  depthwise.bias = ctx.in(4).data<float>();
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) depthwise.channel_means = ctx.out(1).data<float>();
  kernels::expand_depthwise(st.shapes.expand, st.shapes.depthwise, ctx.in(0).data<float>(), ctx.in(1).data<float>(),
                            expand, ctx.in(3).data<float>(), depthwise, ctx.out(0).data<float>(),
                            static_cast<float*>(ctx.workspace), ctx.threads);
}

}  // namespace

FastKernel fast_ExpandDepthwise() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

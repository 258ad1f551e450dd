// kiln.FusedConv with a weight the lowering packed: the convolution tactic it chose (gemm,
// pointwise, depthwise) from kernels/conv.h, bias + residual + activation in the kernel's
// epilogue, im2col panels in this step's arena workspace; the optional averages M through
// Epilogue::channel_means.
#include "fast_common.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/gemm_packed.h"

namespace kiln::runtime {
namespace {

struct ConvState {
  kernels::ConvTactic tactic;
  kernels::Conv2dShape shape;
  kernels::Epilogue epi;  // pointers filled per run
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  if (!n.has_attr("packed")) return false;  // unpacked (e.g. -O0 dumps): the reference runs it
  KILN_CHECK(n.attr_s("isa", "") == kernels::gemm_isa(), n.describe(), ": weight packed for ", n.attr_s("isa", "?"),
             ", but this CPU's micro-kernel is ", kernels::gemm_isa(), "; compile the model again here");
  const Value* x = n.input(0);
  KILN_CHECK(x->dtype == DType::f32 && x->shape.is_static() && x->shape.rank() == 4, n.describe(),
             ": the packed convolution needs a static f32 NCHW input, got ", dtype_name(x->dtype), x->shape.str());
  auto st = std::make_shared<ConvState>();
  st->tactic = conv_tactic_of(n);
  st->shape = ops::fused_conv_shape(n, x->shape.static_dims(), n.attr_ints("w_shape", {}));
  std::string bad = kernels::conv_tactic_unsupported(st->tactic, st->shape);
  KILN_CHECK(bad.empty(), n.describe(), ": tactic ", kernels::conv_tactic_name(st->tactic), " cannot run input ",
             x->shape.str(), ": ", bad);
  KILN_CHECK(!st->shape.y_padded() || (!n.input(3) && (n.outputs.size() < 2 || !n.outputs[1])), n.describe(),
             ": an output into padded planes (y_pad) takes no residual and no channel averages");
  if (const Value* z = n.input(3))
    KILN_CHECK(z->shape == n.outputs[0]->shape, n.describe(), ": residual ", z->shape.str(),
               " must have the output's shape ", n.outputs[0]->shape.str());
  check_channel_means_output(n);
  st->epi = epilogue_of(n);
  st->epi.bias_per_row = true;
  ctx.workspace_bytes =
      static_cast<int64_t>(kernels::conv_workspace_floats(st->tactic, st->shape, ctx.max_threads) * sizeof(float));
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const ConvState& st = *static_cast<const ConvState*>(ctx.state.get());
  kernels::Epilogue epi = st.epi;
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) epi.bias = ctx.in(2).data<float>();
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) epi.residual = ctx.in(3).data<float>();
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) epi.channel_means = ctx.out(1).data<float>();
  if (ctx.warm && fetch_ahead_on()) {
    epi.warm = static_cast<const float*>(ctx.warm);
    epi.warm_floats = ctx.warm_bytes / static_cast<int64_t>(sizeof(float));
  }
  kernels::conv2d(st.tactic, st.shape, ctx.in(0).data<float>(), ctx.in(1).data<float>(), ctx.out(0).data<float>(),
                  epi, static_cast<float*>(ctx.workspace), ctx.threads);
}

bool fetches_ahead(const StepContext& ctx) {
  const ConvState& st = *static_cast<const ConvState*>(ctx.state.get());
  return kernels::conv_fetches_ahead(st.tactic, st.shape, st.epi, ctx.max_threads);
}

}  // namespace

FastKernel fast_FusedConv() {
  FastKernel k{prepare, run};
  k.fetches_ahead = fetches_ahead;
  return k;
}

}  // namespace kiln::runtime

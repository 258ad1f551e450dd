// kiln.HalfConv: a convolution whose constant weight is bf16 or f16 (compress's precision passes).
//   bf16 weight, CPU with AVX512-BF16: the weight packed once into bf16 pairs, activations rounded
//     to bf16 while im2col packs them, vdpbf16ps with f32 accumulation (kernels/bf16.h: tolerance).
//   otherwise (f16 storage, or no AVX512-BF16): the honest fallback, the weight widened to f32 once
//     and the f32 convolution kernels (pointwise or implicit GEMM), computing in f32.
// Bias, residual and activation in the epilogue either way. Declines non-static or non-NCHW inputs.
#include <vector>

#include "fast_common.h"
#include "kiln/kernels/bf16.h"
#include "kiln/kernels/conv.h"

namespace kiln::runtime {
namespace {

struct HalfConvState {
  const kernels::bf16::BKernels* k = nullptr;  // nullptr: the f32 path
  kernels::ConvTactic tactic = kernels::ConvTactic::Gemm;
  kernels::Conv2dShape shape;
  std::vector<uint32_t> packed_bf16;
  std::vector<float> packed_f32;
  kernels::Epilogue epi;
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (x->dtype != DType::f32 || !x->shape.is_static() || x->shape.rank() != 4 || !w->is_constant()) return false;
  const Tensor& wt = *w->initializer;
  if ((wt.dtype() != DType::bf16 && wt.dtype() != DType::f16) || wt.rank() != 4) return false;
  if (const Value* z = n.input(3); z && z->shape != n.outputs[0]->shape) return false;
  auto st = std::make_shared<HalfConvState>();
  st->shape = ops::fused_conv_shape(n, x->shape.static_dims(), wt.dims());
  if (st->shape.group != 1) return false;
  st->epi = epilogue_of(n);
  st->epi.bias_per_row = true;
  st->k = wt.dtype() == DType::bf16 ? kernels::bf16::runtime_kernels() : nullptr;
  if (st->k) {
    st->packed_bf16.resize(kernels::bf16::conv_packed_weight_words(*st->k, st->shape));
    kernels::bf16::conv_pack_weight(*st->k, st->shape, static_cast<const uint16_t*>(wt.raw()), st->packed_bf16.data());
    ctx.workspace_bytes = static_cast<int64_t>(kernels::bf16::conv_workspace_bytes(*st->k, st->shape, ctx.max_threads));
  } else {
    Tensor wf = wt.cast(DType::f32);
    st->tactic = kernels::conv_tactic_unsupported(kernels::ConvTactic::Pointwise, st->shape).empty()
                     ? kernels::ConvTactic::Pointwise
                     : kernels::ConvTactic::Gemm;
    st->packed_f32.resize(kernels::conv_packed_weight_floats(st->tactic, st->shape));
    kernels::conv_pack_weight(st->tactic, st->shape, wf.data<float>(), st->packed_f32.data());
    ctx.workspace_bytes =
        static_cast<int64_t>(kernels::conv_workspace_floats(st->tactic, st->shape, ctx.max_threads) * sizeof(float));
  }
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const HalfConvState& st = *static_cast<const HalfConvState*>(ctx.state.get());
  kernels::Epilogue epi = st.epi;
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) epi.bias = ctx.in(2).data<float>();
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) epi.residual = ctx.in(3).data<float>();
  if (st.k)
    kernels::bf16::conv2d(*st.k, st.shape, ctx.in(0).data<float>(), st.packed_bf16.data(), ctx.out(0).data<float>(), epi,
                          ctx.workspace, ctx.threads);
  else
    kernels::conv2d(st.tactic, st.shape, ctx.in(0).data<float>(), st.packed_f32.data(), ctx.out(0).data<float>(), epi,
                    static_cast<float*>(ctx.workspace), ctx.threads);
}

}  // namespace

FastKernel fast_HalfConv() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

// kiln.QConv on the INT8 convolution kernel (kernels/int8.h): the weight is packed for this
// CPU's micro-kernel when the step is prepared (from the artifact's i8 weight), the zero-point
// compensation is folded into the int32 bias, and requantization happens in the tile epilogue.
// Declines (the reference kernel runs): non-2-D convolutions, non-constant weights, and f32
// outputs with an activation other than Relu/Clip.
#include "fast_quantized.h"
#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"

namespace kiln::runtime {
namespace {

struct QConvState {
  const kernels::int8::QKernels* k = nullptr;
  kernels::Conv2dShape shape;
  std::vector<uint8_t> packed;
  QuantizedEpilogue epi;
  uint8_t flip = 0, pad = 0;
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!x->shape.is_static() || x->shape.rank() != 4 || !w->shape.rank_known || w->shape.rank() != 4) return false;
  if (x->dtype != DType::u8 && x->dtype != DType::i8) return false;
  const int64_t channels = w->shape.static_dims()[0];
  std::optional<QuantizedConstants> c = quantized_constants(n, channels);
  if (!c) return false;
  ops::QuantAttrs q = ops::quant_attrs(n);
  if (!q.clamp_only) return false;
  if (const Value* z = n.input(4); z && z->shape != n.outputs[0]->shape) return false;
  auto st = std::make_shared<QConvState>();
  st->k = &kernels::int8::qkernels_for_signed(c->w->data<int8_t>(), c->w->numel());
  // With pixel-major flags from the node (lower/int8_nhwc_layout.cpp); a table without their
  // kernels runs them between transposes (qconv2d).
  st->shape = ops::fused_conv_shape(n, x->shape.static_dims(), c->w->dims());
  const kernels::Conv2dShape& s = st->shape;
  st->packed.resize(kernels::int8::qconv_packed_weight_bytes(*st->k, s));
  kernels::int8::qconv_pack_weight(*st->k, s, c->w->data<int8_t>(), st->packed.data());
  std::vector<int32_t> sums(channels);
  kernels::int8::row_sums_s8(c->w->data<int8_t>(), channels, c->w->numel() / channels, sums.data());
  // i8 activations reach the kernel with the sign bit flipped: x + 128, zero point + 128.
  const bool flip = x->dtype == DType::i8;
  const int32_t zp = q.x_zero_point + (flip ? 128 : 0);
  st->flip = flip ? 0x80 : 0;
  st->pad = static_cast<uint8_t>(zp);
  build_epilogue(n, *c, sums, zp, q.x_scale, st->epi);
  st->epi.e.ldr = s.out_h() * s.out_w();  // NCHW residual planes (a pixel-major one: the kernel sets it)
  ctx.workspace_bytes = static_cast<int64_t>(kernels::int8::qconv_workspace_bytes(*st->k, s, ctx.max_threads));
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const QConvState& st = *static_cast<const QConvState*>(ctx.state.get());
  kernels::int8::QEpilogue e = st.epi.e;
  if (ctx.inputs.size() > 4 && ctx.inputs[4]) e.residual = ctx.in(4).raw();
  kernels::int8::qconv2d(*st.k, st.shape, static_cast<const uint8_t*>(ctx.in(0).raw()), st.flip, st.pad,
                         st.packed.data(), e, ctx.out(0).raw(), static_cast<uint8_t*>(ctx.workspace), ctx.threads);
}

}  // namespace

FastKernel fast_QConv() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

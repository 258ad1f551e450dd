// Per-tensor QuantizeLinear (f32 -> u8/i8, kernels::int8::quantize_floats: AVX2 or SSE2) and
// DequantizeLinear (u8/i8 -> f32): the float edges of a quantized model. Same arithmetic as the
// reference kernels (x / scale rounded half to even, plus the zero point, saturated): rounding
// uses the 1.5 * 2^23 trick, exact for |x / scale| < 2^22 (beyond that the value saturates anyway).
// Per-axis parameters and i32 data decline (the reference kernels run them).
#include <algorithm>

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct QdqState {
  float scale = 1.f;
  int32_t zero_point = 0;
  DType qtype = DType::u8;
  int64_t n = 0;
};

bool prepare_common(StepContext& ctx, DType float_side, bool quantize) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Value* s = n.input(1);
  const Value* z = n.input(2);
  if (!x->shape.is_static() || !s || !s->is_constant() || s->initializer->numel() != 1 ||
      s->initializer->dtype() != DType::f32)
    return false;
  if (z && (!z->is_constant() || z->initializer->numel() != 1)) return false;
  auto st = std::make_shared<QdqState>();
  st->qtype = quantize ? (z ? z->dtype : DType::u8) : x->dtype;
  if (st->qtype != DType::u8 && st->qtype != DType::i8) return false;
  if ((quantize ? x->dtype : n.outputs[0]->dtype) != float_side) return false;
  st->scale = s->initializer->data<float>()[0];
  st->zero_point = z ? static_cast<int32_t>(z->initializer->as_int64(0)) : 0;
  st->n = *x->shape.numel();
  ctx.state = st;
  return true;
}

bool prepare_q(StepContext& ctx) { return prepare_common(ctx, DType::f32, true); }
bool prepare_dq(StepContext& ctx) { return prepare_common(ctx, DType::f32, false); }

void run_q(StepContext& ctx) {
  const QdqState& st = *static_cast<const QdqState*>(ctx.state.get());
  const float* x = ctx.in(0).data<float>();
  void* y = ctx.out(0).raw();
  kernels::parallel_for(st.n, kernels::threads_for_work(static_cast<double>(st.n) * 4, ctx.threads),
                        [&](int64_t b, int64_t e) {
                          kernels::int8::quantize_floats(x + b, e - b, st.scale, st.zero_point, st.qtype == DType::i8,
                                                         static_cast<uint8_t*>(y) + b);
                        });
}

template <typename Q>
void dequantize(const Q* x, float* y, int64_t b, int64_t e, float scale, int32_t zp) {
  for (int64_t i = b; i < e; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
}

void run_dq(StepContext& ctx) {
  const QdqState& st = *static_cast<const QdqState*>(ctx.state.get());
  const void* x = ctx.in(0).raw();
  float* y = ctx.out(0).data<float>();
  kernels::parallel_for(st.n, kernels::threads_for_work(static_cast<double>(st.n) * 4, ctx.threads),
                        [&](int64_t b, int64_t e) {
                          if (st.qtype == DType::u8) dequantize(static_cast<const uint8_t*>(x), y, b, e, st.scale, st.zero_point);
                          else dequantize(static_cast<const int8_t*>(x), y, b, e, st.scale, st.zero_point);
                        });
}

}  // namespace

FastKernel fast_QuantizeLinear() { return FastKernel{prepare_q, run_q}; }
FastKernel fast_DequantizeLinear() { return FastKernel{prepare_dq, run_dq}; }

}  // namespace kiln::runtime

// Per-tensor QuantizeLinear (f32 -> u8/i8) and DequantizeLinear (u8/i8 -> f32): the float edges
// of a quantized model. Same arithmetic as the reference kernels (x / scale rounded half to even,
// plus the zero point, saturated), in loops the compiler vectorises: rounding uses the
// 1.5 * 2^23 trick, exact for |x / scale| < 2^22 (beyond that the value saturates anyway).
// Per-axis parameters and i32 data decline (the reference kernels run them).
#include <algorithm>
#include <limits>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

template <typename Q>
void quantize(const float* x, Q* y, int64_t b, int64_t e, float scale, int32_t zp) {
  const float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  const float z = static_cast<float>(zp);
  int64_t i = b;
#if defined(__SSE2__)
  // The loop below, 16 values at a time (GCC's -O2 leaves it scalar, and its division was the
  // whole cost: ~1.9 ns per value on resnet50's input): the same float operations in the same
  // order, NaNs replaced by the zero point through the ordered-compare mask.
  const __m128 vs = _mm_set1_ps(scale), big = _mm_set1_ps(4194304.f), magic = _mm_set1_ps(12582912.f);
  const __m128 vz = _mm_set1_ps(z), vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  auto four = [&](const float* p) {
    const __m128 xv = _mm_loadu_ps(p);
    __m128 v = _mm_min_ps(_mm_max_ps(_mm_div_ps(xv, vs), _mm_sub_ps(_mm_setzero_ps(), big)), big);
    v = _mm_sub_ps(_mm_add_ps(v, magic), magic);
    v = _mm_min_ps(_mm_max_ps(_mm_add_ps(v, vz), vlo), vhi);
    const __m128 ordered = _mm_cmpord_ps(xv, xv);
    v = _mm_or_ps(_mm_and_ps(ordered, v), _mm_andnot_ps(ordered, vz));
    return _mm_cvttps_epi32(v);  // integral and within the type already
  };
  for (; i + 16 <= e; i += 16) {
    const __m128i a = _mm_packs_epi32(four(x + i), four(x + i + 4));
    const __m128i c = _mm_packs_epi32(four(x + i + 8), four(x + i + 12));
    const __m128i q = std::is_signed_v<Q> ? _mm_packs_epi16(a, c) : _mm_packus_epi16(a, c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), q);
  }
#endif
  for (; i < e; ++i) {
    float v = std::min(std::max(x[i] / scale, -4194304.f), 4194304.f);  // NaN becomes -2^22 here...
    v = (v + 12582912.f) - 12582912.f;                                 // round half to even
    v = std::min(std::max(v + z, lo), hi);
    y[i] = static_cast<Q>(x[i] == x[i] ? v : z);                       // ...and the zero point here
  }
}

void run_q(StepContext& ctx) {
  const QdqState& st = *static_cast<const QdqState*>(ctx.state.get());
  const float* x = ctx.in(0).data<float>();
  void* y = ctx.out(0).raw();
  kernels::parallel_for(st.n, kernels::threads_for_work(static_cast<double>(st.n) * 4, ctx.threads),
                        [&](int64_t b, int64_t e) {
                          if (st.qtype == DType::u8) quantize(x, static_cast<uint8_t*>(y), b, e, st.scale, st.zero_point);
                          else quantize(x, static_cast<int8_t*>(y), b, e, st.scale, st.zero_point);
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

// The requantizing epilogue on 16 lanes of a zmm register, for the translation units built
// with AVX-512 flags and -ffp-contract=off (qgemm_avx512vnni.cpp's tiles, the pixel-major
// depthwise kernel qdepthwise_nhwc_avx512.cpp). Each lane computes exactly the float operations
// of epilogue_real + quantize_value (kiln/kernels/int8.h), so the outputs are those of the scalar
// formula bit for bit. In an anonymous namespace: each including file has its own copy.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kiln/kernels/int8.h"
#include "qepilogue_dispatch.h"

namespace kiln::kernels::int8 {
namespace {

using detail::Res;
using detail::out_size;
using detail::res_size;

// The epilogue's broadcast constants, set up once per call.
struct EpiConsts {
  __m512 lo, hi, inv, qmin, qmax, rscale, res_lo, res_hi;
  __m512i zp, rzp;
  explicit EpiConsts(const QEpilogue& e)
      : lo(_mm512_set1_ps(e.lo)), hi(_mm512_set1_ps(e.hi)), inv(_mm512_set1_ps(e.out_inv_scale)),
        rscale(_mm512_set1_ps(e.residual_scale)), res_lo(_mm512_set1_ps(e.res_lo)), res_hi(_mm512_set1_ps(e.res_hi)),
        zp(_mm512_set1_epi32(e.out_zp)), rzp(_mm512_set1_epi32(e.residual_zp)) {
    // Quantized outputs: the activation clamp [lo, hi] and the saturation to [qlo, qhi] as one
    // clamp of x = v * inv, bit-identical to clamping, scaling, rounding, adding zp and
    // saturating: multiplying by inv > 0 is monotonic in f32 (max(v, lo) * inv = max(v * inv,
    // lo * inv)), and since qlo - zp and qhi - zp are integers, clamping x to them before rounding
    // saturates exactly as clamping the rounded value would. A NaN takes the low bound, as with
    // the separate clamps.
    const float ql = e.out == QType::U8 ? 0.f : -128.f, qh = e.out == QType::U8 ? 255.f : 127.f;
    qmin = _mm512_set1_ps(std::max(e.lo * e.out_inv_scale, ql - static_cast<float>(e.out_zp)));
    qmax = _mm512_set1_ps(std::min(e.hi * e.out_inv_scale, qh - static_cast<float>(e.out_zp)));
  }
};

// The epilogue of 16 lanes (`mask` of them): accumulators a (bias already added) times scale, plus
// bias_f, the residual at rp, the clamp, stored as Out at op. The same float operations, in the
// same order, as epilogue_real + quantize_value.
template <QType Out, Res R>
inline void epilogue_lanes(const EpiConsts& k, __m512i a, __m512 scale, const float* bias_f, __m512 bf,
                           const void* rp, void* op, __mmask16 mask) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), scale);
  if (bias_f) v = _mm512_add_ps(v, bf);
  if constexpr (R != Res::None) {
    __m512 rv;
    if constexpr (R == Res::U8)
      rv = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, rp)), k.rzp));
    else if constexpr (R == Res::S8)
      rv = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, rp)), k.rzp));
    else
      rv = _mm512_maskz_loadu_ps(mask, rp);
    v = _mm512_min_ps(_mm512_max_ps(v, k.res_lo), k.res_hi);
    v = R == Res::F32 ? _mm512_add_ps(v, rv) : _mm512_fmadd_ps(rv, k.rscale, v);
  }
  if constexpr (Out == QType::F32) {
    _mm512_mask_storeu_ps(op, mask, _mm512_min_ps(_mm512_max_ps(v, k.lo), k.hi));
  } else {
    const __m512 x = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, k.inv), k.qmin), k.qmax);
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(x), k.zp);  // round half to even (MXCSR default)
    // Narrowed in a register, then stored: the memory form of vpmovdb is slow on some cores (Zen 4).
    const __m128i b = _mm512_cvtepi32_epi8(q);
    if (mask == 0xFFFF) _mm_storeu_si128(static_cast<__m128i*>(op), b);
    else _mm_mask_storeu_epi8(op, mask, b);
  }
}

inline __mmask16 lane_mask(int n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max(n, 0)) - 1); }

}  // namespace
}  // namespace kiln::kernels::int8

// AVX-512 VNNI: vpdpbusd on zmm with an 8 x 32 register tile (16 accumulators), and the
// requantization epilogue 16 lanes at a time with masked tails.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8 {

using QV = __m512i;
constexpr int QV_LANES = 16, QV_MR = 8, QV_NV = 2;
inline QV qv_zero() { return _mm512_setzero_si512(); }
inline QV qv_load(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline void qv_store(int32_t* p, QV v) { _mm512_storeu_si512(p, v); }
inline QV qv_set1(int32_t w) { return _mm512_set1_epi32(w); }
inline QV qv_dpbusd(QV acc, QV u8, QV s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }

#include "qgemm_vnni.inl"

namespace {

// Loads `mask` lanes of the residual at p as real-valued floats (before the scale for u8/s8).
inline __m512 residual_lanes(const QEpilogue& e, const void* p, __mmask16 mask) {
  switch (e.residual_type) {
    case QType::U8:
      return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, p)),
                                                 _mm512_set1_epi32(e.residual_zp)));
    case QType::S8:
      return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, p)),
                                                 _mm512_set1_epi32(e.residual_zp)));
    case QType::F32: return _mm512_maskz_loadu_ps(mask, p);
  }
  return _mm512_setzero_ps();
}

void epilogue_avx512(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e_in, int64_t row0, int64_t col0,
                     void* out, int64_t ldo) {
  // A local copy: the byte stores below could alias the caller's struct, which would make the
  // compiler reload every field after each store.
  const QEpilogue e = e_in;
  const size_t osize = e.out == QType::F32 ? 4 : 1;
  const size_t rsize = e.residual_type == QType::F32 ? 4 : 1;
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  const __m512 inv = _mm512_set1_ps(e.out_inv_scale);
  const __m512i zp = _mm512_set1_epi32(e.out_zp);
  // Quantized outputs: the activation clamp [lo, hi] and the saturation to [qlo, qhi] as one clamp
  // of x = v * inv, bit-identical to clamping, scaling, rounding, adding zp and saturating:
  // multiplying by inv > 0 is monotonic in f32 (max(v, lo) * inv = max(v * inv, lo * inv)), and
  // since qlo - zp and qhi - zp are integers, clamping x to them before rounding saturates exactly
  // as clamping the rounded value would. A NaN takes the low bound, as with the separate clamps.
  const float qlo = e.out == QType::U8 ? 0.f : -128.f, qhi = e.out == QType::U8 ? 255.f : 127.f;
  const __m512 qmin = _mm512_set1_ps(std::max(e.lo * e.out_inv_scale, qlo - static_cast<float>(e.out_zp)));
  const __m512 qmax = _mm512_set1_ps(std::min(e.hi * e.out_inv_scale, qhi - static_cast<float>(e.out_zp)));
  const __m512 rscale = _mm512_set1_ps(e.residual_scale);
  const __m512 res_lo = _mm512_set1_ps(e.res_lo), res_hi = _mm512_set1_ps(e.res_hi);
  for (int r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    // Per-row parameters once per row (per_row), else loaded per column below.
    const __m512i row_bias = _mm512_set1_epi32(e.per_row && e.bias ? e.bias[row] : 0);
    const __m512 row_scale = _mm512_set1_ps(e.per_row ? e.scale[row] : 0.f);
    const __m512 row_bias_f = _mm512_set1_ps(e.per_row && e.bias_f ? e.bias_f[row] : 0.f);
    for (int j = 0; j < cols; j += 16) {
      const __mmask16 mask = cols - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - j)) - 1);
      const int64_t col = col0 + j;
      __m512i a = _mm512_maskz_loadu_epi32(mask, acc + r * nr + j);
      __m512 scale = row_scale;
      if (e.per_row) {
        a = _mm512_add_epi32(a, row_bias);
      } else {
        if (e.bias) a = _mm512_add_epi32(a, _mm512_maskz_loadu_epi32(mask, e.bias + col));
        scale = _mm512_maskz_loadu_ps(mask, e.scale + col);
      }
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), scale);
      if (e.bias_f) v = _mm512_add_ps(v, e.per_row ? row_bias_f : _mm512_maskz_loadu_ps(mask, e.bias_f + col));
      if (e.residual) {
        const void* rp = static_cast<const char*>(e.residual) + (row * e.ldr + col) * rsize;
        __m512 rv = residual_lanes(e, rp, mask);
        v = _mm512_min_ps(_mm512_max_ps(v, res_lo), res_hi);
        v = e.residual_type == QType::F32 ? _mm512_add_ps(v, rv) : _mm512_fmadd_ps(rv, rscale, v);
      }
      void* op = static_cast<char*>(out) + (row * ldo + col) * osize;
      if (e.out == QType::F32) {
        _mm512_mask_storeu_ps(op, mask, _mm512_min_ps(_mm512_max_ps(v, lo), hi));
        continue;
      }
      const __m512 x = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, inv), qmin), qmax);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(x), zp);  // round half to even (MXCSR default)
      // Narrowed in a register, then stored: the memory form of vpmovdb is slow on some cores (Zen 4).
      const __m128i b = _mm512_cvtepi32_epi8(q);
      if (mask == 0xFFFF) _mm_storeu_si128(static_cast<__m128i*>(op), b);
      else _mm_mask_storeu_epi8(op, mask, b);
    }
  }
}

}  // namespace

QKernels make_avx512vnni_qkernels() {
  QKernels k;
  k.isa = QIsa::Avx512Vnni;
  k.mr = QV_MR;
  k.nr = QV_NV * QV_LANES;
  k.tile_s8u8 = vnni_tile<true>;
  k.tile_u8s8 = vnni_tile<false>;
  k.epilogue = epilogue_avx512;
  return k;
}

}  // namespace kiln::kernels::int8

// AVX-512 VNNI: vpdpbusd on zmm with an 8 x 32 register tile (16 accumulators), and the
// requantization epilogue 16 lanes at a time with masked tails.
#include <immintrin.h>

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

void epilogue_avx512(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                     void* out, int64_t ldo) {
  const size_t osize = e.out == QType::F32 ? 4 : 1;
  const size_t rsize = e.residual_type == QType::F32 ? 4 : 1;
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  const __m512 inv = _mm512_set1_ps(e.out_inv_scale), lim = _mm512_set1_ps(1073741824.f);
  const __m512i zp = _mm512_set1_epi32(e.out_zp);
  const __m512i qlo = _mm512_set1_epi32(e.out == QType::U8 ? 0 : -128);
  const __m512i qhi = _mm512_set1_epi32(e.out == QType::U8 ? 255 : 127);
  const __m512 rscale = _mm512_set1_ps(e.residual_scale);
  for (int r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    for (int j = 0; j < cols; j += 16) {
      const __mmask16 mask = cols - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - j)) - 1);
      const int64_t col = col0 + j;
      __m512i a = _mm512_maskz_loadu_epi32(mask, acc + r * nr + j);
      __m512 scale;
      if (e.per_row) {
        if (e.bias) a = _mm512_add_epi32(a, _mm512_set1_epi32(e.bias[row]));
        scale = _mm512_set1_ps(e.scale[row]);
      } else {
        if (e.bias) a = _mm512_add_epi32(a, _mm512_maskz_loadu_epi32(mask, e.bias + col));
        scale = _mm512_maskz_loadu_ps(mask, e.scale + col);
      }
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), scale);
      if (e.bias_f) v = _mm512_add_ps(v, e.per_row ? _mm512_set1_ps(e.bias_f[row]) : _mm512_maskz_loadu_ps(mask, e.bias_f + col));
      if (e.residual) {
        const void* rp = static_cast<const char*>(e.residual) + (row * e.ldr + col) * rsize;
        __m512 rv = residual_lanes(e, rp, mask);
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(e.res_lo)), _mm512_set1_ps(e.res_hi));
        v = e.residual_type == QType::F32 ? _mm512_add_ps(v, rv) : _mm512_fmadd_ps(rv, rscale, v);
      }
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      void* op = static_cast<char*>(out) + (row * ldo + col) * osize;
      if (e.out == QType::F32) {
        _mm512_mask_storeu_ps(op, mask, v);
        continue;
      }
      __m512 x = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, inv), _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
      __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(x), zp);  // round half to even (MXCSR default)
      q = _mm512_min_epi32(_mm512_max_epi32(q, qlo), qhi);
      _mm512_mask_cvtepi32_storeu_epi8(op, mask, q);
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

// QuantizeLinear of f32 into u8/i8 per tensor on AVX2 (quantize_floats, kernels/int8.h): the SSE2
// loop of runtime/fast_qdq.cpp on 8-float vectors, 32 values a step; the same float operations
// in the same order, so the bytes are the reference's (round half to even of x / scale, the zero
// point, saturation, NaN to the zero point). The division bounds both; 256-bit divisions halve
// the instructions.
#if defined(__x86_64__)
#include <immintrin.h>

#include "qconv_internal.h"

namespace kiln::kernels::int8::detail {

int64_t quantize_floats_avx2(const float* x, int64_t n, float scale, float zp, float lo, float hi, bool is_signed,
                             uint8_t* y) {
  const __m256 vs = _mm256_set1_ps(scale), big = _mm256_set1_ps(4194304.f), magic = _mm256_set1_ps(12582912.f);
  const __m256 nbig = _mm256_sub_ps(_mm256_setzero_ps(), big);
  const __m256 vz = _mm256_set1_ps(zp), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  auto eight = [&](const float* p) {
    const __m256 xv = _mm256_loadu_ps(p);
    __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(xv, vs), nbig), big);
    v = _mm256_sub_ps(_mm256_add_ps(v, magic), magic);
    v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vz), vlo), vhi);
    v = _mm256_blendv_ps(vz, v, _mm256_cmp_ps(xv, xv, _CMP_ORD_Q));  // NaN -> the zero point
    return _mm256_cvttps_epi32(v);  // integral and within the type already
  };
  // Dwords 0, 4, 1, 5, 2, 6, 3, 7: the two packs interleave the four vectors' halves by lane.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i ab = _mm256_packs_epi32(eight(x + i), eight(x + i + 8));
    const __m256i cd = _mm256_packs_epi32(eight(x + i + 16), eight(x + i + 24));
    const __m256i q = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_permutevar8x32_epi32(q, order));
  }
  return i;
}

}  // namespace kiln::kernels::int8::detail
#endif

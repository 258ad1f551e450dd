// Per-tensor QuantizeLinear of f32 into u8/i8 (quantize_floats, kernels/int8.h): the AVX2 loop
// where the CPU has it (qquantize_avx2.cpp), then SSE2 16 values at a time, then scalar. Every
// path does the reference's float operations in its order: x / scale clamped to +-2^22, rounded
// half to even by adding and subtracting 1.5 * 2^23, plus the zero point, saturated; NaN -> the
// zero point.
#include <algorithm>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kiln/kernels/int8.h"
#include "qconv_internal.h"

namespace kiln::kernels::int8 {
namespace {

template <typename Q>
void quantize(const float* x, Q* y, int64_t b, int64_t e, float scale, int32_t zp) {
  const float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  const float z = static_cast<float>(zp);
  int64_t i = b;
#if defined(__SSE2__)
  // 16 values at a time (GCC's -O2 leaves the scalar loop as it is, and its division was the
  // whole cost: ~1.9 ns per value on resnet50's input); NaNs replaced by the zero point through
  // the ordered-compare mask.
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
    const __m128i q = std::numeric_limits<Q>::is_signed ? _mm_packs_epi16(a, c) : _mm_packus_epi16(a, c);
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

}  // namespace

void quantize_floats(const float* x, int64_t n, float scale, int32_t zp, bool is_signed, uint8_t* y) {
  int64_t done = 0;
#if defined(__x86_64__)
  if (qkernels_for(QIsa::Avx2)) {
    const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
    done = detail::quantize_floats_avx2(x, n, scale, static_cast<float>(zp), lo, hi, is_signed, y);
  }
#endif
  if (is_signed) quantize(x, reinterpret_cast<int8_t*>(y), done, n, scale, zp);
  else quantize(x, y, done, n, scale, zp);
}

}  // namespace kiln::kernels::int8

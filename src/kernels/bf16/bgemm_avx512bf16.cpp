// AVX512-BF16: vdpbf16ps on zmm with an 8 x 32 register tile (16 f32 accumulators: 8 rows x
// 2 vectors of 16 columns), each step one k pair; f32 -> bf16 pairs 16 columns at a time.
#include <immintrin.h>

#include <cstring>

#include "kiln/kernels/bf16.h"

namespace kiln::kernels::bf16 {
namespace {

constexpr int kMr = 8, kNv = 2, kLanes = 16;

void tile(int64_t kpairs, const uint32_t* rows, const uint32_t* cols, float* acc) {
  __m512 c[kMr][kNv];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kNv; ++v) c[r][v] = _mm512_setzero_ps();
  for (int64_t g = 0; g < kpairs; ++g) {
    __m512bh b[kNv];
#pragma GCC unroll 2
    for (int v = 0; v < kNv; ++v) b[v] = (__m512bh)_mm512_loadu_si512(cols + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(rows[r]));
#pragma GCC unroll 2
      for (int v = 0; v < kNv; ++v) c[r][v] = _mm512_dpbf16_ps(c[r][v], a, b[v]);
    }
    rows += kMr;
    cols += kNv * kLanes;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kNv; ++v) _mm512_storeu_ps(acc + (r * kNv + v) * kLanes, c[r][v]);
}

// 16 columns: both rows rounded to bf16 (vcvtneps2bf16, nearest even), widened to 32-bit lanes
// and joined (even k low, odd k high).
inline __m512i pairs16(__m512 lo, __m512 hi) {
  const __m512i l = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
  const __m512i h = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
  return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

void pair_f32(const float* r0, const float* r1, int64_t n, uint32_t* out) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m512 hi = r1 ? _mm512_loadu_ps(r1 + j) : _mm512_setzero_ps();
    _mm512_storeu_si512(out + j, pairs16(_mm512_loadu_ps(r0 + j), hi));
  }
  if (j < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m512 hi = r1 ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
    _mm512_mask_storeu_epi32(out + j, m, pairs16(_mm512_maskz_loadu_ps(m, r0 + j), hi));
  }
}

}  // namespace

BKernels make_avx512bf16_bkernels() { return BKernels{BIsa::Avx512Bf16, kMr, kNv * kLanes, tile, pair_f32}; }

}  // namespace kiln::kernels::bf16

// AVX512-BF16: vdpbf16ps on zmm with an 8 x 32 register tile (16 f32 accumulators: 8 rows x
// 2 vectors of 16 columns), each step one k pair; convolution panels packed from f32 rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kiln/kernels/bf16.h"

namespace kiln::kernels::bf16 {
namespace {

constexpr int kMr = 8, kMrPx = 7, kNv = 2, kLanes = 16;

template <int kMr>
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

// 32 columns per k pair: two 16-column halves, each both rows rounded to bf16 by one
// vcvtne2ps2bf16 (nearest even; row 0 in the low 16 words, row 1 in the high 16) and
// interleaved by one vpermw into (row 0, row 1) pairs. Masked loads past `count`.
void pack_panel(const float* base, const int64_t* offsets, int64_t kpairs, int64_t count, uint32_t* out) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                           8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  __mmask16 m[kNv];
  for (int v = 0; v < kNv; ++v) {
    const int64_t n = std::clamp<int64_t>(count - v * kLanes, 0, kLanes);
    m[v] = static_cast<__mmask16>((1u << n) - 1);
  }
  for (int64_t g = 0; g < kpairs; ++g, out += kNv * kLanes) {
    const float* r0 = base + offsets[2 * g];
    const int64_t o1 = offsets[2 * g + 1];
#pragma GCC unroll 2
    for (int v = 0; v < kNv; ++v) {
      const __m512 lo = _mm512_maskz_loadu_ps(m[v], r0 + v * kLanes);
      const __m512 hi = o1 >= 0 ? _mm512_maskz_loadu_ps(m[v], base + o1 + v * kLanes) : _mm512_setzero_ps();
      const __m512i t = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      _mm512_storeu_si512(out + v * kLanes, _mm512_permutexvar_epi16(interleave, t));
    }
  }
}

// Up to 8 positions of two taps per k pair: two masked 8-lane gathers, one vcvtne2ps2bf16 and a
// vpermw into (tap 0, tap 1) pairs.
void pack_rows_px(const float* base, const int64_t* offsets, int64_t kpairs, const int64_t* cols, int count,
                  uint32_t* out) {
  alignas(32) static constexpr uint16_t kInterleave[16] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
  static_assert(kMrPx <= 8);
  const __m256i interleave = _mm256_load_si256(reinterpret_cast<const __m256i*>(kInterleave));
  alignas(32) int32_t idx[8] = {};
  for (int r = 0; r < count; ++r) idx[r] = static_cast<int32_t>(cols[r]);
  const __m256i vidx = _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
  const __mmask8 m = static_cast<__mmask8>((1u << count) - 1), store = static_cast<__mmask8>((1u << kMrPx) - 1);
  for (int64_t g = 0; g < kpairs; ++g, out += kMrPx) {
    const int64_t o1 = offsets[2 * g + 1];
    const __m256 lo = _mm256_mmask_i32gather_ps(_mm256_setzero_ps(), m, vidx, base + offsets[2 * g], 4);
    const __m256 hi = o1 >= 0 ? _mm256_mmask_i32gather_ps(_mm256_setzero_ps(), m, vidx, base + o1, 4) : _mm256_setzero_ps();
    const __m256i t = (__m256i)_mm256_cvtne2ps_pbh(hi, lo);
    _mm256_mask_storeu_epi32(out, store, _mm256_permutexvar_epi16(interleave, t));
  }
}

}  // namespace

BKernels make_avx512bf16_bkernels() {
  return BKernels{BIsa::Avx512Bf16, kMr, kNv * kLanes, tile<kMr>, pack_panel, kMrPx, tile<kMrPx>, pack_rows_px};
}

}  // namespace kiln::kernels::bf16

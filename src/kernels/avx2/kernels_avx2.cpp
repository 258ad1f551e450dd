// The AVX2+FMA kernels: this file is compiled with -mavx2 -mfma (CMakeLists.txt) and only
// reached through the kernel table after CPUID says so.
// Register tile 6 x 16: 12 ymm accumulators + 2 for the B row + 1 broadcast.
#if defined(__x86_64__)
#include <utility>

#include "kiln/kernels/dispatch.h"
#include "simd/vec_avx2.h"

namespace kiln::kernels::avx2 {
using V = simd::Vec256;
using namespace simd;
constexpr Isa kIsa = Isa::Avx2;
constexpr int MR = 6, NR = 16;
constexpr int GMR = MR, GNR = NR;  // the GEMM's tile: the direct convolution's
constexpr int64_t KC = 256, MC = 6 * 20, NC = 1024;
#include "simd/vecmath.inl"
#include "simd/gemm_tile.inl"
#include "simd/conv_tile.inl"
#include "simd/depthwise.inl"
#include "simd/rows.inl"
#include "simd/depthwise_blocked.inl"
#include "simd/table.inl"

// Sum of x[0:n] in double: 4 floats widened per step into four 4-double accumulators. The
// portable four-scalar loop ran efficientnet_b0's squeeze-excitation pools (56x56 planes) at
// ~16 GB/s, half of ORT's (Zen 3).
double sum_row_f64(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd(), a2 = _mm256_setzero_pd(), a3 = _mm256_setzero_pd();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + j)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + j + 4)));
    a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + j + 8)));
    a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + j + 12)));
  }
  for (; j + 4 <= n; j += 4) a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + j)));
  const __m256d s = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  double sum = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  for (; j < n; ++j) sum += x[j];
  return sum;
}

// Per-lane sums of rows of 8 floats: each row widened to two 4-double halves, two rows in turn.
void sum_block_rows_f64(const float* x, int64_t rows, double* acc) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd(), b0 = _mm256_setzero_pd(), b1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 2 <= rows; i += 2, x += 16) {
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + 4)));
    b0 = _mm256_add_pd(b0, _mm256_cvtps_pd(_mm_loadu_ps(x + 8)));
    b1 = _mm256_add_pd(b1, _mm256_cvtps_pd(_mm_loadu_ps(x + 12)));
  }
  if (i < rows) {
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + 4)));
  }
  _mm256_storeu_pd(acc, _mm256_add_pd(a0, b0));
  _mm256_storeu_pd(acc + 4, _mm256_add_pd(a1, b1));
}
}  // namespace kiln::kernels::avx2

namespace kiln::kernels {
KernelTable make_avx2_table() {
  KernelTable t = avx2::make_table();
  t.sum_row = avx2::sum_row_f64;
  t.sum_block_rows = avx2::sum_block_rows_f64;
  return t;
}
}  // namespace kiln::kernels
#endif

// The AVX-512 kernels: this file is compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl
// -mfma (CMakeLists.txt) and only reached through the kernel table after CPUID says so.
// The direct convolution's tile: 14 pixels x 32 channels, 28 zmm accumulators + 2 for the
// weight row, the input broadcast from memory. The GEMM's: 6 rows x 64 columns, 24 accumulators
// + 4 for the B row; see GMR below.
#if defined(__x86_64__)
#include <utility>

#include "kiln/kernels/dispatch.h"
#include "simd/vec_avx512.h"

namespace kiln::kernels::avx512 {
using V = simd::Vec512;
using namespace simd;
constexpr Isa kIsa = Isa::Avx512;
constexpr int MR = 14, NR = 32;
// The GEMM's tile is 6 x 64 rather than the convolution's 14 x 32: a K step loads 4 B vectors
// and broadcasts 6 floats of A for 24 FMAs (10 loads) instead of 2 + 14 for 28 (16 loads). On
// one Ice Lake core, the same driver, call by call: 1024^3 0.955-0.968 of the 14 x 32 tile's time
// (best 135 -> 149-151 GFLOP/s; oneDNN's sgemm read 143-154 alongside), BERT's 128 x 2304 x 768
// 0.942, 128 x 3072 x 768 0.920, 128 x 768 x 3072 about even; the products bit-identical.
constexpr int GMR = 6, GNR = 64;
constexpr int64_t KC = 256, MC = 6 * 28, NC = 1024;
#include "simd/vecmath.inl"
#include "simd/gemm_tile.inl"
#include "simd/conv_tile.inl"
#include "simd/depthwise.inl"
#include "simd/rows.inl"
#include "simd/depthwise_blocked.inl"
#include "simd/table.inl"

// Sum of x[0:n] in double: 8 floats widened per step into four 8-double accumulators.
double sum_row_f64(const float* x, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + j)));
    a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 8)));
    a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 16)));
    a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 24)));
  }
  for (; j < n; j += 8) {
    const int rest = n - j < 8 ? static_cast<int>(n - j) : 8;
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << rest) - 1u), x + j)));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}

// Per-lane sums of rows of 8 floats: each row widened to 8 doubles, four accumulators in turn
// (one accumulator through memory, the portable loop's shape, cost blocked global averages a
// store-forwarding wait a row: 2x the NCHW planes' time on efficientnet_b0's 112x112 layer).
void sum_block_rows_f64(const float* x, int64_t rows, double* acc) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4, x += 32) {
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x)));
    a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + 8)));
    a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(x + 16)));
    a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(x + 24)));
  }
  for (; i < rows; ++i, x += 8) a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x)));
  _mm512_storeu_pd(acc, _mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}

}  // namespace kiln::kernels::avx512

namespace kiln::kernels {
KernelTable make_avx512_table() {
  KernelTable t = avx512::make_table();
  t.sum_row = avx512::sum_row_f64;
  t.sum_block_rows = avx512::sum_block_rows_f64;
  return t;
}
}  // namespace kiln::kernels
#endif

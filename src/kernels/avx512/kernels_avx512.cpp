// The AVX-512 kernels: this file is compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl
// -mfma (CMakeLists.txt) and only reached through the kernel table after CPUID says so.
// Register tile 14 x 32: 28 zmm accumulators + 2 for the B row, A broadcast from memory.
#if defined(__x86_64__)
#include "kiln/kernels/dispatch.h"
#include "simd/vec_avx512.h"

namespace kiln::kernels::avx512 {
using V = simd::Vec512;
using namespace simd;
constexpr Isa kIsa = Isa::Avx512;
constexpr int MR = 14, NR = 32;
constexpr int64_t KC = 256, MC = 14 * 12, NC = 1024;
#include "simd/vecmath.inl"
#include "simd/gemm_tile.inl"
#include "simd/conv_tile.inl"
#include "simd/depthwise.inl"
#include "simd/rows.inl"
#include "simd/table.inl"

// A panel of MR (14) rows, 16 columns of A at a time through transpose16.
void pack_a_panel_transpose(const float* A, int64_t lda, int64_t rows, int64_t kc, int mr, float* out) {
  const __mmask16 panel = static_cast<__mmask16>((1u << MR) - 1u);
  int64_t q = 0;
  for (; q < kc; q += 16) {
    const int n = kc - q < 16 ? static_cast<int>(kc - q) : 16;
    const __mmask16 cols = static_cast<__mmask16>((1u << n) - 1u);
    __m512 r[16];
    for (int i = 0; i < 16; ++i)
      r[i] = i < rows ? _mm512_maskz_loadu_ps(cols, A + i * lda + q) : _mm512_setzero_ps();
    transpose16(r);
    for (int i = 0; i < n; ++i) _mm512_mask_storeu_ps(out + (q + i) * MR, panel, r[i]);
  }
  (void)mr;
}

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
}  // namespace kiln::kernels::avx512

namespace kiln::kernels {
KernelTable make_avx512_table() {
  KernelTable t = avx512::make_table();
  t.pack_a_panel = avx512::pack_a_panel_transpose;
  t.sum_row = avx512::sum_row_f64;
  return t;
}
}  // namespace kiln::kernels
#endif

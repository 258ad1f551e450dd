// The AVX-512 kernels: this file is compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl
// -mfma (CMakeLists.txt) and only reached through the kernel table after CPUID says so.
// The direct convolution's tile: 14 pixels x 32 channels, 28 zmm accumulators + 2 for the
// weight row, the input broadcast from memory. The GEMM's: 6 rows x 64 columns, 24 accumulators
// + 4 for the B row; see GMR below.
#if defined(__x86_64__)
#include <utility>

#include "kiln/kernels/dispatch.h"
#include "depthwise_halves.h"
#include "pair_tail.h"
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

// The GEMM's A panel for its 6-row tile (pack_a_panel_blocks' layout, out[q * 6 + r] =
// A[r * lda + q]): 16 columns of the 6 rows as 6 loads, 18 two-register permutes and 6 stores,
// where the generic packer transposes a 16 x 16 block (10 rows of it zeros) and stores 16
// overlapping vectors. That packer moved ~9 GB/s from L2 (60 us a 168 x 768 block), 3% of a
// 1536^3 product; rows pair up first (rows 2p and 2p + 1 interleaved, columns 0-7 and 8-15),
// then each output vector takes its lanes from the three pairs in two permutes.
namespace {
struct Pack6Index {
  alignas(64) int32_t lo[16];
  alignas(64) int32_t hi[16];
  alignas(64) int32_t a[6][16];  // output vector j: lanes from pairs 0 and 1
  alignas(64) int32_t b[6][16];  // then pair 2's lanes into that
};
constexpr Pack6Index make_pack6_index() {
  Pack6Index x{};
  for (int q = 0; q < 8; ++q)
    for (int s = 0; s < 2; ++s) x.lo[2 * q + s] = q + 16 * s, x.hi[2 * q + s] = 8 + q + 16 * s;
  for (int j = 0; j < 6; ++j)
    for (int l = 0; l < 16; ++l) {
      // Output float 16j + l is column q, row r: lane 2 (q mod 8) + (r mod 2) of pair r / 2.
      const int f = 16 * j + l, q = f / 6, r = f % 6, pos = 2 * (q % 8) + (r & 1), pair = r >> 1;
      x.a[j][l] = pair == 0 ? pos : pair == 1 ? 16 + pos : 0;
      x.b[j][l] = pair <= 1 ? l : 16 + pos;
    }
  return x;
}
constexpr Pack6Index kPack6 = make_pack6_index();
}  // namespace

void pack_a_panel_6(const float* A, int64_t lda, int64_t rows, int64_t kc, int mr, float* out) {
  if (mr != 6 || rows != 6) {
    pack_a_panel_blocks(A, lda, rows, kc, mr, out);
    return;
  }
  const __m512i lo = _mm512_load_si512(kPack6.lo), hi = _mm512_load_si512(kPack6.hi);
  __m512i ia[6], ib[6];
  for (int j = 0; j < 6; ++j) ia[j] = _mm512_load_si512(kPack6.a[j]), ib[j] = _mm512_load_si512(kPack6.b[j]);
  int64_t q0 = 0;
  for (; q0 + 16 <= kc; q0 += 16) {
    __m512 r[6];
    for (int i = 0; i < 6; ++i) r[i] = _mm512_loadu_ps(A + i * lda + q0);
    __m512 pl[3], ph[3];
    for (int p = 0; p < 3; ++p) {
      pl[p] = _mm512_permutex2var_ps(r[2 * p], lo, r[2 * p + 1]);
      ph[p] = _mm512_permutex2var_ps(r[2 * p], hi, r[2 * p + 1]);
    }
    float* o = out + q0 * 6;
    for (int j = 0; j < 6; ++j) {
      const __m512* pv = j < 3 ? pl : ph;
      const __m512 t = _mm512_permutex2var_ps(pv[0], ia[j], pv[1]);
      _mm512_storeu_ps(o + 16 * j, _mm512_permutex2var_ps(t, ib[j], pv[2]));
    }
  }
  if (q0 < kc) pack_a_panel_blocks(A + q0, lda, rows, kc - q0, mr, out + q0 * 6);
}

}  // namespace kiln::kernels::avx512

namespace kiln::kernels {
KernelTable make_avx512_table() {
  KernelTable t = avx512::make_table();
  t.sum_row = avx512::sum_row_f64;
  t.sum_block_rows = avx512::sum_block_rows_f64;
  if (t.gemm.mr == 6) t.pack_a_panel = avx512::pack_a_panel_6;
  return t;
}
}  // namespace kiln::kernels
#endif

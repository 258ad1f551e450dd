// Packing and the blocked GEMM driver of the INT8 kernels (the micro-kernels are per ISA).
//
// Blocking: the rows operand is cut into blocks of kRowBlock rows (a block of weights stays in
// L2 while every cols panel passes by), each cols panel (K x nr bytes) is reused by the block's
// row tiles from L1/L2. Work items are (row block, cols panel) pairs, split over threads.
#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kiln/kernels/int8.h"
#include "isa_gate.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::int8 {
namespace {

constexpr int64_t kRowBlock = 64;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

size_t packed_rows_bytes(const QKernels& k, int64_t M, int64_t K) {
  return static_cast<size_t>(ceil_div(M, k.mr) * ceil_div(K, 4) * k.mr * 4);
}

size_t packed_cols_bytes(const QKernels& k, int64_t K, int64_t N) {
  return static_cast<size_t>(ceil_div(N, k.nr) * ceil_div(K, 4) * k.nr * 4);
}

void pack_rows(const QKernels& k, const uint8_t* a, int64_t lda, int64_t M, int64_t K, uint8_t flip, uint8_t* out) {
  const int64_t kg = ceil_div(K, 4), mt = ceil_div(M, k.mr);
  for (int64_t t = 0; t < mt; ++t) {
    uint8_t* panel = out + t * kg * k.mr * 4;
    for (int r = 0; r < k.mr; ++r) {
      const int64_t m = t * k.mr + r;
      for (int64_t g = 0; g < kg; ++g) {
        uint8_t* dst = panel + (g * k.mr + r) * 4;
        for (int64_t q = 0; q < 4; ++q) {
          const int64_t kk = g * 4 + q;
          dst[q] = m < M && kk < K ? static_cast<uint8_t>(a[m * lda + kk] ^ flip) : 0;
        }
      }
    }
  }
}

void pack_cols(const QKernels& k, const uint8_t* b, int64_t ldb, bool trans, int64_t K, int64_t N, uint8_t* out) {
  const int64_t kg = ceil_div(K, 4), nt = ceil_div(N, k.nr);
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t g = 0; g < kg; ++g)
      for (int j = 0; j < k.nr; ++j)
        for (int q = 0; q < 4; ++q) {
          const int64_t n = t * k.nr + j, kk = g * 4 + q;
          uint8_t v = 0;
          if (n < N && kk < K) v = trans ? b[n * ldb + kk] : b[kk * ldb + n];
          out[((t * kg + g) * k.nr + j) * 4 + q] = v;
        }
}

namespace {
// dst[j * 4 + t] = r[t][j] for the nr columns of one panel's 4-k group (nr = 8, 16 or 32):
// byte-interleave rows 0/1 and 2/3, then 16-bit-interleave the pairs, which leaves each column's
// 4 bytes together.
#if defined(__x86_64__)
// 4 rows' 32 columns (v[t]: row t) interleaved into out[0..3]: columns 0-7, 8-15, 16-23, 24-31,
// each column's 4 bytes together. The SSE2 interleave on both 128-bit lanes, then the lanes'
// halves put back in column order.
__attribute__((target("avx2"), always_inline)) inline void interleave32_rows(const __m256i (&v)[4], __m256i (&out)[4]) {
  const __m256i ab_lo = _mm256_unpacklo_epi8(v[0], v[1]), ab_hi = _mm256_unpackhi_epi8(v[0], v[1]);
  const __m256i cd_lo = _mm256_unpacklo_epi8(v[2], v[3]), cd_hi = _mm256_unpackhi_epi8(v[2], v[3]);
  const __m256i x0 = _mm256_unpacklo_epi16(ab_lo, cd_lo);  // columns 0-3 | 16-19
  const __m256i x1 = _mm256_unpackhi_epi16(ab_lo, cd_lo);  // 4-7 | 20-23
  const __m256i x2 = _mm256_unpacklo_epi16(ab_hi, cd_hi);  // 8-11 | 24-27
  const __m256i x3 = _mm256_unpackhi_epi16(ab_hi, cd_hi);  // 12-15 | 28-31
  out[0] = _mm256_permute2x128_si256(x0, x1, 0x20);
  out[1] = _mm256_permute2x128_si256(x2, x3, 0x20);
  out[2] = _mm256_permute2x128_si256(x0, x1, 0x31);
  out[3] = _mm256_permute2x128_si256(x2, x3, 0x31);
}

const bool kHasAvx2 = kSimdKernelsAllowed && __builtin_cpu_supports("avx2");

// 32 columns of every 4-k group in one call: 32 bytes per row, interleave32_rows, then bytes
// 0-63 (columns 0-15) to dst and 64-127 (columns 16-31) to dst + second, dst advancing `step`
// per group. Two whole 16-column panels (the 256-bit tables' nr): second = the panel's bytes,
// step 64. One 32-column panel (AVX-512 VNNI's nr): second 64, step 128. With one function call
// per group and 16-byte loads, packing ran at 5-11 GB/s from L2 (12 % of resnet50's 256 -> 64
// 1x1 convolution at 56x56, perf, Zen 3); this way at 18-25 GB/s. The 32-column panels went
// one AVX2 call per group until the thirteenth session (11 % of resnet50's 64 -> 256 and 512 ->
// 128 1x1s on Zen 5).
__attribute__((target("avx2"))) void pack_groups32_avx2(const uint8_t* base, const int64_t* offsets,
                                                        const uint8_t* zeros, int64_t kgroups, int64_t col,
                                                        int64_t second, int64_t step, uint8_t* dst) {
  for (int64_t kg = 0; kg < kgroups; ++kg, dst += step) {
    __m256i v[4], out[4];
    for (int t = 0; t < 4; ++t) {
      const int64_t off = offsets[kg * 4 + t];
      v[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off < 0 ? zeros : base + off + col));
    }
    interleave32_rows(v, out);
    for (int i = 0; i < 4; ++i)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (i >> 1) * second + 32 * (i & 1)), out[i]);
  }
}
#endif

#if defined(__SSE2__)
void interleave16_sse2(const uint8_t* const r[4], int64_t at, uint8_t* dst) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + at));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + at));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + at));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + at));
  const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
  const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi16(ab_lo, cd_lo));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi16(ab_lo, cd_lo));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 32), _mm_unpacklo_epi16(ab_hi, cd_hi));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 48), _mm_unpackhi_epi16(ab_hi, cd_hi));
}

void interleave8_sse2(const uint8_t* const r[4], uint8_t* dst) {
  const __m128i ab = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r[0])),
                                       _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r[1])));
  const __m128i cd = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r[2])),
                                       _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r[3])));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi16(ab, cd));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi16(ab, cd));
}
#endif

// One whole panel's group; false when this build or CPU has no vector loop for nr. (With AVX2,
// whole 16- and 32-column panels never come here: pack_groups32_avx2 packs them.)
bool interleave_panel_group(int nr, const uint8_t* const r[4], uint8_t* dst) {
#if defined(__SSE2__)
  if (nr == 32) return interleave16_sse2(r, 0, dst), interleave16_sse2(r, 16, dst + 64), true;
  if (nr == 16) return interleave16_sse2(r, 0, dst), true;
  if (nr == 8) return interleave8_sse2(r, dst), true;
#endif
  (void)nr, (void)r, (void)dst;
  return false;
}
}  // namespace

// Panel by panel, each written front to back. Group by group across all panels instead (one
// 64-byte store per panel per group, the panels 16 KiB apart) packing took 7.9 % of resnet50's
// layer3 1x1 convolution (1024 -> 256, 14x14; perf), this way 5.6 %.
void pack_cols_rows(const QKernels& k, const uint8_t* base, const int64_t* offsets, int64_t kgroups, int64_t j0,
                    int64_t n, uint8_t* out) {
  static const uint8_t kZeros[64] = {};
  const int nr = k.nr;
  const int64_t nt = ceil_div(n, nr);
  for (int64_t p = 0; p < nt; ++p) {
    uint8_t* panel = out + p * kgroups * nr * 4;
#if defined(__x86_64__)
    if (nr == 16 && kHasAvx2 && n - p * nr >= 2 * nr) {
      pack_groups32_avx2(base, offsets, kZeros, kgroups, j0 + p * nr, kgroups * nr * 4, 64, panel);
      ++p;
      continue;
    }
    if (nr == 32 && kHasAvx2 && n - p * nr >= nr) {
      pack_groups32_avx2(base, offsets, kZeros, kgroups, j0 + p * nr, 64, 128, panel);
      continue;
    }
#endif
    const int64_t col = j0 + p * nr, m = std::min<int64_t>(nr, n - p * nr);
    for (int64_t kg = 0; kg < kgroups; ++kg) {
      const uint8_t* r[4];
      for (int t = 0; t < 4; ++t) {
        const int64_t off = offsets[kg * 4 + t];
        r[t] = off < 0 ? kZeros : base + off + col;
      }
      uint8_t* dst = panel + kg * nr * 4;
      if (m == nr && interleave_panel_group(nr, r, dst)) continue;
      for (int64_t j = 0; j < nr; ++j)
        for (int t = 0; t < 4; ++t) dst[j * 4 + t] = j < m && offsets[kg * 4 + t] >= 0 ? r[t][j] : 0;
    }
  }
}

void row_sums_s8(const int8_t* w, int64_t M, int64_t K, int32_t* out) {
  for (int64_t m = 0; m < M; ++m) {
    int32_t s = 0;
    for (int64_t kk = 0; kk < K; ++kk) s += w[m * K + kk];
    out[m] = s;
  }
}

void epilogue_tile(const QKernels& k, const int32_t* acc, int rows, int64_t row0, int64_t col0, int cols,
                   const QEpilogue& e, void* out, int64_t ldo) {
  if (e.grid_w == 0) {
    k.epilogue(acc, k.nr, rows, cols, e, row0, col0, out, ldo);
    return;
  }
  // Wide grid: each run of valid columns within one grid row goes to its output columns.
  for (int64_t j = col0, end = col0 + cols; j < end;) {
    const int64_t in_row = j % e.grid_w, row_end = std::min(end, j - in_row + e.grid_w);
    const int64_t valid_end = std::min(row_end, j - in_row + e.grid_valid);
    if (j < valid_end)
      k.epilogue(acc + (j - col0), k.nr, rows, static_cast<int>(valid_end - j), e, row0,
                 (j / e.grid_w) * e.grid_valid + in_row, out, ldo);
    j = row_end;
  }
}

void qgemm_packed(const QKernels& k, bool rows_signed, int64_t M, int64_t N, int64_t K, const uint8_t* rows,
                  const uint8_t* cols, const QEpilogue& e, void* out, int64_t ldo, int threads) {
  if (M <= 0 || N <= 0) return;
  const int64_t kg = ceil_div(K, 4);
  const int64_t mt = ceil_div(M, k.mr), nt = ceil_div(N, k.nr);
  const int64_t tiles_per_block = std::max<int64_t>(1, kRowBlock / k.mr);
  const int64_t blocks = ceil_div(mt, tiles_per_block);
  auto tile_fn = rows_signed ? k.tile_s8u8 : k.tile_u8s8;
  threads = threads_for_work(static_cast<double>(M) * N * K / 4, threads <= 0 ? default_threads() : threads);
  parallel_for(blocks * nt, threads, [&](int64_t begin, int64_t end) {
    alignas(64) int32_t acc[16 * 64];  // mr * nr <= 16 * 64 for every table
    for (int64_t w = begin; w < end; ++w) {
      const int64_t b = w / nt, c = w % nt;
      const uint8_t* cp = cols + c * kg * k.nr * 4;
      const int cols_here = static_cast<int>(std::min<int64_t>(k.nr, N - c * k.nr));
      for (int64_t t = b * tiles_per_block; t < std::min(mt, (b + 1) * tiles_per_block); ++t) {
        tile_fn(kg, rows + t * kg * k.mr * 4, cp, acc);
        const int rows_here = static_cast<int>(std::min<int64_t>(k.mr, M - t * k.mr));
        epilogue_tile(k, acc, rows_here, t * k.mr, c * k.nr, cols_here, e, out, ldo);
      }
    }
  });
}

}  // namespace kiln::kernels::int8

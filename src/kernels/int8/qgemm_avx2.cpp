// AVX2 without VNNI. vpmaddubsw would multiply u8 x s8 and add pairs into int16 with saturation
// (255 * 127 * 2 > 32767), so this path widens both operands to int16 instead (vpmovzxbw /
// vpmovsxbw) and uses vpmaddwd, whose pair sums land in int32 exactly: the results equal the
// VNNI and scalar paths bit for bit, at about half of vpmaddubsw's throughput.
//
// Tile 4 x 8. A cols group (8 columns x 4 k) is two 16-byte halves widened to 16 int16 each
// (columns 0-3 and 4-7); a row's 4 bytes are widened and repeated in each 64-bit quarter, so
// vpmaddwd yields two partial sums per column, added pairwise (vphaddd) at the end of the tile.
#include <immintrin.h>

#include <cstring>

#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8 {
namespace {

constexpr int kMr = 4, kNr = 8;

template <bool Signed>
inline __m256i widen16(__m128i bytes) {
  return Signed ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
}

// Gather: cols group g is at cols + offsets[g] instead of following the previous one.
template <bool RowsSigned, bool Gather = false>
void tile_avx2(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets, int32_t* acc) {
  __m256i c[kMr][2];
#pragma GCC unroll 4
  for (int r = 0; r < kMr; ++r) c[r][0] = c[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < kgroups; ++g) {
    const uint8_t* cg = Gather ? cols + offsets[g] : cols;
    __m256i b0 = widen16<!RowsSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(cg)));
    __m256i b1 = widen16<!RowsSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(cg + 16)));
#pragma GCC unroll 4
    for (int r = 0; r < kMr; ++r) {
      int32_t word;
      std::memcpy(&word, rows + r * 4, 4);
      __m128i w = _mm_cvtsi32_si128(word);
      __m128i w16 = RowsSigned ? _mm_cvtepi8_epi16(w) : _mm_cvtepu8_epi16(w);  // 4 int16 in the low 64 bits
      __m256i a = _mm256_broadcastq_epi64(w16);
      c[r][0] = _mm256_add_epi32(c[r][0], _mm256_madd_epi16(b0, a));
      c[r][1] = _mm256_add_epi32(c[r][1], _mm256_madd_epi16(b1, a));
    }
    rows += kMr * 4;
    if (!Gather) cols += kNr * 4;
  }
#pragma GCC unroll 4
  for (int r = 0; r < kMr; ++r) {
    // hadd gives columns (0 1 4 5 | 2 3 6 7); the 64-bit permute puts them in order.
    __m256i h = _mm256_hadd_epi32(c[r][0], c[r][1]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kNr), _mm256_permute4x64_epi64(h, 0xD8));
  }
}

template <bool RowsSigned>
void tile_avx2_packed(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int32_t* acc) {
  tile_avx2<RowsSigned>(kgroups, rows, cols, nullptr, acc);
}

}  // namespace

// The 8-lane epilogue, shared with the AVX-VNNI table. Tails go through the scalar formula.
void epilogue_avx2(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo) {
  const size_t osize = e.out == QType::F32 ? 4 : 1;
  const size_t rsize = e.residual_type == QType::F32 ? 4 : 1;
  const __m256 lo = _mm256_set1_ps(e.lo), hi = _mm256_set1_ps(e.hi);
  const __m256 inv = _mm256_set1_ps(e.out_inv_scale), lim = _mm256_set1_ps(1073741824.f);
  const __m256i zp = _mm256_set1_epi32(e.out_zp);
  const __m256i qlo = _mm256_set1_epi32(e.out == QType::U8 ? 0 : -128);
  const __m256i qhi = _mm256_set1_epi32(e.out == QType::U8 ? 255 : 127);
  const __m256 rscale = _mm256_set1_ps(e.residual_scale);
  for (int r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    int j = 0;
    for (; j + 8 <= cols; j += 8) {
      const int64_t col = col0 + j;
      __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * nr + j));
      __m256 scale;
      if (e.per_row) {
        if (e.bias) a = _mm256_add_epi32(a, _mm256_set1_epi32(e.bias[row]));
        scale = _mm256_set1_ps(e.scale[row]);
      } else {
        if (e.bias) a = _mm256_add_epi32(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.bias + col)));
        scale = _mm256_loadu_ps(e.scale + col);
      }
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), scale);
      if (e.bias_f) v = _mm256_add_ps(v, e.per_row ? _mm256_set1_ps(e.bias_f[row]) : _mm256_loadu_ps(e.bias_f + col));
      if (e.residual) {
        const char* rp = static_cast<const char*>(e.residual) + (row * e.ldr + col) * rsize;
        v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(e.res_lo)), _mm256_set1_ps(e.res_hi));
        if (e.residual_type == QType::F32) {
          v = _mm256_add_ps(v, _mm256_loadu_ps(reinterpret_cast<const float*>(rp)));
        } else {
          __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rp));
          __m256i ri = e.residual_type == QType::U8 ? _mm256_cvtepu8_epi32(raw) : _mm256_cvtepi8_epi32(raw);
          __m256 rv = _mm256_cvtepi32_ps(_mm256_sub_epi32(ri, _mm256_set1_epi32(e.residual_zp)));
          v = _mm256_fmadd_ps(rv, rscale, v);
        }
      }
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      char* op = static_cast<char*>(out) + (row * ldo + col) * osize;
      if (e.out == QType::F32) {
        _mm256_storeu_ps(reinterpret_cast<float*>(op), v);
        continue;
      }
      __m256 x = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, inv), _mm256_sub_ps(_mm256_setzero_ps(), lim)), lim);
      __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(x), zp);
      q = _mm256_min_epi32(_mm256_max_epi32(q, qlo), qhi);
      // In range, so the signed/unsigned packs only select the low byte of each lane.
      __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      __m128i q8 = e.out == QType::U8 ? _mm_packus_epi16(q16, q16) : _mm_packs_epi16(q16, q16);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(op), q8);
    }
    for (; j < cols; ++j) epilogue_element(e, acc[r * nr + j], row, col0 + j, out, ldo);
  }
}

QKernels make_avx2_qkernels() {
  QKernels k;
  k.isa = QIsa::Avx2;
  k.mr = kMr;
  k.nr = kNr;
  k.tile_s8u8 = tile_avx2_packed<true>;
  k.tile_u8s8 = tile_avx2_packed<false>;
  k.tile_s8u8_gather = tile_avx2<true, true>;
  k.epilogue = epilogue_avx2;
  return k;
}

}  // namespace kiln::kernels::int8

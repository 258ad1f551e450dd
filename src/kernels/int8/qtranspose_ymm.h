// An 8 x 8 int32 transpose through ymm registers, for the pixels tiles (tile_u8s8_pixels) of
// the 256-bit tables (qgemm_ymm_epilogue.inl) and of AVX-512 VNNI (qgemm_avx512vnni.cpp, on the
// halves of its zmm rows). In an anonymous namespace, as qepilogue_ymm.h: each including file has
// its own copy, compiled for its own ISA flags.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace kiln::kernels::int8 {
namespace {

// Eight rows of 8 int32 transposed: out[j * ldb + i] = r[i][j].
inline void store_transposed_8x8(const __m256i (&r)[8], int32_t* out, int64_t ldb) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);      // rows 2i, 2i+1 of columns 0 1 | 4 5
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);  // columns 2 3 | 6 7
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 2; ++i) {
      u[h * 4 + 2 * i] = _mm256_unpacklo_epi64(t[h * 4 + i], t[h * 4 + i + 2]);      // rows 4h..4h+3 of column 2i | 2i+4
      u[h * 4 + 2 * i + 1] = _mm256_unpackhi_epi64(t[h * 4 + i], t[h * 4 + i + 2]);  // column 2i+1 | 2i+5
    }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j * ldb), _mm256_permute2x128_si256(u[j], u[4 + j], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (j + 4) * ldb), _mm256_permute2x128_si256(u[j], u[4 + j], 0x31));
  }
}

}  // namespace
}  // namespace kiln::kernels::int8

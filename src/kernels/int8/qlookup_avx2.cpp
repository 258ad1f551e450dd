// y[i] = table[x[i]] for a 256-entry byte table on AVX2 (lookup_bytes, kernels/int8.h): per 32
// input bytes, the low nibble indexes each of the table's sixteen 16-byte rows with one vpshufb,
// and the high nibble selects which row's byte is kept (compare + blend): 48 single-cycle vector
// ops per 32 bytes where the scalar loop spends two loads and a store on every byte.
#if defined(__x86_64__)
#include <immintrin.h>

#include "qconv_internal.h"

namespace kiln::kernels::int8::detail {

void lookup_bytes_avx2(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n) {
  __m256i rows[16];
  for (int k = 0; k < 16; ++k)
    rows[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * k)));
  const __m256i nibble = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i lo = _mm256_and_si256(v, nibble);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
    __m256i r = _mm256_shuffle_epi8(rows[0], lo), k = _mm256_setzero_si256();
#pragma GCC unroll 15
    for (int row = 1; row < 16; ++row) {
      k = _mm256_add_epi8(k, one);
      r = _mm256_blendv_epi8(r, _mm256_shuffle_epi8(rows[row], lo), _mm256_cmpeq_epi8(hi, k));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace kiln::kernels::int8::detail
#endif

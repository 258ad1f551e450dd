// AVX-VNNI (VEX-encoded vpdpbusd on ymm, e.g. Alder Lake without AVX-512): a 6 x 16 register
// tile (12 accumulators of the 16 ymm registers); the epilogue is the AVX2 one.
#include <immintrin.h>

#include <cstring>

#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8 {

using QV = __m256i;
constexpr int QV_LANES = 8, QV_MR = 6, QV_NV = 2;
inline QV qv_zero() { return _mm256_setzero_si256(); }
inline QV qv_load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void qv_store(int32_t* p, QV v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline QV qv_set1(int32_t w) { return _mm256_set1_epi32(w); }
inline QV qv_dpbusd(QV acc, QV u8, QV s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }

#include "qgemm_vnni.inl"

void epilogue_avx2(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo);

QKernels make_avxvnni_qkernels() {
  QKernels k;
  k.isa = QIsa::AvxVnni;
  k.mr = QV_MR;
  k.nr = QV_NV * QV_LANES;
  k.tile_s8u8 = vnni_tile<true>;
  k.tile_u8s8 = vnni_tile<false>;
  k.tile_s8u8_gather = vnni_tile_gather;
  k.epilogue = epilogue_avx2;
  return k;
}

}  // namespace kiln::kernels::int8

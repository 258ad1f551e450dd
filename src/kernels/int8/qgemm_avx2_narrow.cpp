// AVX2 without VNNI, for s8 operands within [-64, 64] (weights quantized in 7 bits, `kiln
// quantize --reduce-range`): vpdpbusd emulated as vpmaddubsw (u8 x s8 byte pairs summed into
// int16) then vpmaddwd with ones (int16 pairs into int32). vpmaddubsw saturates above 32767,
// which 255 x 64 x 2 = 32640 never reaches, so in this range the results equal the scalar and
// VNNI paths bit for bit, at about twice the widening kernel's rate (qgemm_avx2.cpp), which
// stays the path for full-range weights. The tile is 5 x 16 (below); the packing is AVX-VNNI's.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kiln/kernels/int8.h"
#include "qepilogue_dispatch.h"
#include "qepilogue_ymm.h"
#include "qtranspose_ymm.h"

namespace kiln::kernels::int8 {

// 5 x 16, not AVX-VNNI's 6 x 16: the emulated vpdpbusd also holds a vector of ones and a
// product, so 6 rows' 12 accumulators made GCC keep one in memory, a store-to-load chain through
// every k step. 10 accumulators + 2 cols vectors + the row + ones + product = 15 registers; the
// multiplies per product are the same at any tile shape.
constexpr int QV_MR = 5;
#include "qgemm_ymm.inl"
inline QV qv_dpbusd(QV acc, QV u8, QV s8) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
}

void epilogue_avx2(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo);

#include "qgemm_vnni.inl"
#include "qgemm_ymm_epilogue.inl"

QKernels make_avx2_narrow_qkernels() {
  QKernels k = ymm_qkernels(QIsa::Avx2);
  k.narrow_signed = true;
  return k;
}

}  // namespace kiln::kernels::int8

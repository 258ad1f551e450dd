// AVX-VNNI (VEX-encoded vpdpbusd on ymm, e.g. Alder Lake without AVX-512): a 6 x 16 register
// tile (12 accumulators of the 16 ymm registers), its epilogue fused (qgemm_ymm_epilogue.inl) or
// AVX2's.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kiln/kernels/int8.h"
#include "qepilogue_dispatch.h"
#include "qepilogue_ymm.h"
#include "qtranspose_ymm.h"

namespace kiln::kernels::int8 {

// 12 accumulators, the two cols vectors and the broadcast row: 15 of the 16 ymm registers.
constexpr int QV_MR = 6;
#include "qgemm_ymm.inl"
inline QV qv_dpbusd(QV acc, QV u8, QV s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }

void epilogue_avx2(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo);

#include "qgemm_vnni.inl"
#include "qgemm_ymm_epilogue.inl"

QKernels make_avxvnni_qkernels() { return ymm_qkernels(QIsa::AvxVnni); }

}  // namespace kiln::kernels::int8

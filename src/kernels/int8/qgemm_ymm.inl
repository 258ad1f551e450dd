// The ymm vector type and operations of qgemm_vnni.inl for the two 256-bit tiles (AVX-VNNI and
// AVX2's narrow-operand kernels): QV_MR x 16 register tiles. The including file defines
// qv_dpbusd and, before including this, QV_MR.
using QV = __m256i;
constexpr int QV_LANES = 8, QV_NV = 2;
inline QV qv_zero() { return _mm256_setzero_si256(); }
inline QV qv_load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void qv_store(int32_t* p, QV v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline QV qv_set1(int32_t w) { return _mm256_set1_epi32(w); }


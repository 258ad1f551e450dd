// 16 floats in one zmm register: the vector type the AVX-512 kernels are written with.
// Only included by src/kernels/avx512/*.cpp, which are compiled with -mavx512f/bw/dq/vl -mfma.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace kiln::kernels::simd {

struct Vec512 {
  static constexpr int W = 16;
  // fma(a, b, c) rounds once (the hardware FMA), not a·b then + c.
  static constexpr bool kFusedFma = true;
  __m512 v;

  static __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static Vec512 zero() { return {_mm512_setzero_ps()}; }
  static Vec512 set1(float x) { return {_mm512_set1_ps(x)}; }
  static Vec512 load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static Vec512 load_first(const float* p, int n) { return {_mm512_maskz_loadu_ps(first(n), p)}; }
  void store(float* p) const { _mm512_storeu_ps(p, v); }
  // lo[0..7] in the low half, hi[0..7] in the high half.
  static Vec512 load_halves(const float* lo, const float* hi) {
    return {_mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(lo)), _mm256_loadu_ps(hi), 1)};
  }
  void store_first(float* p, int n) const { _mm512_mask_storeu_ps(p, first(n), v); }
  // The low 8 floats at lo, the high 8 at hi (two unmasked 256-bit stores).
  void store_halves(float* lo, float* hi) const {
    _mm256_storeu_ps(lo, _mm512_castps512_ps256(v));
    _mm256_storeu_ps(hi, _mm512_extractf32x8_ps(v, 1));
  }
  // [a's low 8, b's low 8] and [a's high 8, b's high 8]: two pixels' halves of 16 channels as
  // the pixels' two 8-channel blocks (kConvBlock).
  static Vec512 low_halves(Vec512 a, Vec512 b) { return {_mm512_shuffle_f32x4(a.v, b.v, 0x44)}; }
  static Vec512 high_halves(Vec512 a, Vec512 b) { return {_mm512_shuffle_f32x4(a.v, b.v, 0xee)}; }
  // Low-half arithmetic for tiles whose last vector holds 8 columns (conv_tile_split's LAST_HALF):
  // 256-bit loads and FMAs, half the cost of 512-bit ones on double-pumped cores (Zen 4); the
  // high half is not meaningful.
  static Vec512 load_low(const float* p) { return {_mm512_castps256_ps512(_mm256_loadu_ps(p))}; }
  static Vec512 fma_low(Vec512 a, Vec512 b, Vec512 c) {
    return {_mm512_castps256_ps512(
        _mm256_fmadd_ps(_mm512_castps512_ps256(a.v), _mm512_castps512_ps256(b.v), _mm512_castps512_ps256(c.v)))};
  }
  // a's high 256 bits, then b's low 256 bits.
  static Vec512 high_low(Vec512 a, Vec512 b) { return {_mm512_shuffle_f32x4(a.v, b.v, 0x4e)}; }
  // p[0], p[2], ..., p[2W-2]: the even elements of 2W floats (a stride-2 row's phase).
  static Vec512 load_even(const float* p) {
    const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return {_mm512_permutex2var_ps(_mm512_loadu_ps(p), idx, _mm512_loadu_ps(p + 16))};
  }
  // p[1], p[3], ..., p[2W-1]: the odd elements of the same 2W floats.
  static Vec512 load_odd(const float* p) {
    const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return {_mm512_permutex2var_ps(_mm512_loadu_ps(p), idx, _mm512_loadu_ps(p + 16))};
  }
  // The first n (< W) even elements, reading only the 2n - 1 floats they need.
  static Vec512 load_even_first(const float* p, int n) {
    const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const int m = 2 * n - 1;
    __m512 lo = _mm512_maskz_loadu_ps(first(m < 16 ? m : 16), p);
    __m512 hi = _mm512_maskz_loadu_ps(first(m > 16 ? m - 16 : 0), p + 16);
    return {_mm512_permutex2var_ps(lo, idx, hi)};
  }
  float sum() const { return _mm512_reduce_add_ps(v); }
  float max() const { return _mm512_reduce_max_ps(v); }
  // table[i & 31] for the integer i in each lane's bits: one two-register permute (exp_table32's
  // 2^(j/32) table in vecmath.inl).
  static constexpr bool kLookup32 = true;
  static Vec512 lookup32(const float* table, Vec512 i) {
    return {_mm512_permutex2var_ps(_mm512_loadu_ps(table), _mm512_castps_si512(i.v), _mm512_loadu_ps(table + 16))};
  }
};

inline Vec512 operator+(Vec512 a, Vec512 b) { return {_mm512_add_ps(a.v, b.v)}; }
inline Vec512 operator-(Vec512 a, Vec512 b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline Vec512 operator*(Vec512 a, Vec512 b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Vec512 operator/(Vec512 a, Vec512 b) { return {_mm512_div_ps(a.v, b.v)}; }
inline Vec512 fma(Vec512 a, Vec512 b, Vec512 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline Vec512 max(Vec512 a, Vec512 b) { return {_mm512_max_ps(a.v, b.v)}; }
inline Vec512 min(Vec512 a, Vec512 b) { return {_mm512_min_ps(a.v, b.v)}; }
inline Vec512 abs(Vec512 a) { return {_mm512_abs_ps(a.v)}; }
// |mag| with the sign of sgn.
inline Vec512 copysign(Vec512 mag, Vec512 sgn) {
  const __m512 sign = _mm512_set1_ps(-0.f);
  return {_mm512_or_ps(_mm512_andnot_ps(sign, mag.v), _mm512_and_ps(sign, sgn.v))};
}
// a < b ? x : y, lane by lane.
inline Vec512 select_lt(Vec512 a, Vec512 b, Vec512 x, Vec512 y) {
  return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ), y.v, x.v)};
}
// t's bits shifted left 23: for t = n + 127 + 1.5·2^23 (n an integer in [-126, 127], see
// exp_v), the float 2^n.
inline Vec512 exponent_bits(Vec512 t) { return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(t.v), 23))}; }
// t's bits shifted right 5 (arithmetic) and left 23, added to x's bits: x·2^(k >> 5) for the
// integer k in t's low bits, while the result stays a normal float (exp_table32's scaling).
inline Vec512 scale_by_exponent_bits32(Vec512 x, Vec512 t) {
  const __m512i e = _mm512_and_si512(_mm512_slli_epi32(_mm512_castps_si512(t.v), 18), _mm512_set1_epi32(int(0xff800000u)));
  return {_mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(x.v), e))};
}
// always_inline: a plain inline wrapper reached through an always_inline helper was deleted by
// GCC 12 as a call without side effects (conv_tile.inl's conv_tile_prefetch_rows).
[[gnu::always_inline]] inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
// Into L2 only: data needed after what L1 holds now is used up (gemm_tile.inl's NextPanel).
[[gnu::always_inline]] inline void prefetch_l2(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
// The line at p, owned for writing (PREFETCHW; callers check write_prefetch_pays, which needs it).
[[gnu::always_inline]] inline void prefetch_for_write(const void* p) {
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
}

// In-register transpose of 16 rows of 16 floats: r[i] holds row i on entry, column i on exit.
[[gnu::always_inline]] inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[4g + j]: rows 4g..4g+3 at columns j + 4L of 128-bit lane L.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
    __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd);
    __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), v3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
    r[j] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
    r[j + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[j + 12] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
  }
}

[[gnu::always_inline]] inline void transpose_square(Vec512 r[16]) {
  __m512 x[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) x[i] = r[i].v;
  transpose16(x);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i].v = x[i];
}

}  // namespace kiln::kernels::simd

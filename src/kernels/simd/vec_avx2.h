// 8 floats in one ymm register: the vector type the AVX2+FMA kernels are written with.
// Only included by src/kernels/avx2/*.cpp, which are compiled with -mavx2 -mfma.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace kiln::kernels::simd {

struct Vec256 {
  static constexpr int W = 8;
  // fma(a, b, c) rounds once (the hardware FMA), not a·b then + c.
  static constexpr bool kFusedFma = true;
  static constexpr bool kLookup32 = false;  // no lookup32 (vec_avx512.h)
  __m256 v;

  // Lanes [0, n) set: the mask maskload/maskstore take.
  static __m256i first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Vec256 zero() { return {_mm256_setzero_ps()}; }
  static Vec256 set1(float x) { return {_mm256_set1_ps(x)}; }
  static Vec256 load(const float* p) { return {_mm256_loadu_ps(p)}; }
  static Vec256 load_first(const float* p, int n) { return {_mm256_maskload_ps(p, first(n))}; }
  void store(float* p) const { _mm256_storeu_ps(p, v); }
  // As at most three plain stores (4, 2, 1 floats): vmaskmovps to memory is microcoded on AMD
  // Zen (depthwise rows of 7, 14 and 28 floats end in one per row).
  void store_first(float* p, int n) const {
    if (n >= W) return store(p);  // callers may pass a whole vector
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
      _mm_storeu_ps(p, part);
      part = _mm256_extractf128_ps(v, 1);
      p += 4, n -= 4;
    }
    if (n >= 2) {
      _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
      part = _mm_movehl_ps(part, part);
      p += 2, n -= 2;
    }
    if (n > 0) _mm_store_ss(p, part);
  }
  // p[0], p[2], ..., p[2W-2]: the even elements of 2W floats (a stride-2 row's phase).
  static Vec256 load_even(const float* p) {
    // Even elements of each 128-bit half, then the two middle 64-bit pieces swapped into order.
    __m256 ev = _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), _MM_SHUFFLE(2, 0, 2, 0));
    return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0)))};
  }
  // The odd elements of the same 2W floats.
  static Vec256 load_odd(const float* p) {
    __m256 od = _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), _MM_SHUFFLE(3, 1, 3, 1));
    return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), _MM_SHUFFLE(3, 1, 2, 0)))};
  }
  // The first n (< W) even elements, reading only the 2n - 1 floats they need.
  static Vec256 load_even_first(const float* p, int n) {
    const int m = 2 * n - 1;
    __m256 lo = _mm256_maskload_ps(p, first(m < 8 ? m : 8)), hi = _mm256_maskload_ps(p + 8, first(m > 8 ? m - 8 : 0));
    __m256 ev = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0)))};
  }
  float sum() const {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  float max() const {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

inline Vec256 operator+(Vec256 a, Vec256 b) { return {_mm256_add_ps(a.v, b.v)}; }
inline Vec256 operator-(Vec256 a, Vec256 b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline Vec256 operator*(Vec256 a, Vec256 b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline Vec256 operator/(Vec256 a, Vec256 b) { return {_mm256_div_ps(a.v, b.v)}; }
inline Vec256 fma(Vec256 a, Vec256 b, Vec256 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline Vec256 max(Vec256 a, Vec256 b) { return {_mm256_max_ps(a.v, b.v)}; }
inline Vec256 min(Vec256 a, Vec256 b) { return {_mm256_min_ps(a.v, b.v)}; }
inline Vec256 abs(Vec256 a) { return {_mm256_andnot_ps(_mm256_set1_ps(-0.f), a.v)}; }
inline Vec256 copysign(Vec256 mag, Vec256 sgn) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  return {_mm256_or_ps(_mm256_andnot_ps(sign, mag.v), _mm256_and_ps(sign, sgn.v))};
}
inline Vec256 select_lt(Vec256 a, Vec256 b, Vec256 x, Vec256 y) {
  return {_mm256_blendv_ps(y.v, x.v, _mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ))};
}
// t's bits shifted left 23 (vec_avx512.h's exponent_bits).
inline Vec256 exponent_bits(Vec256 t) { return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t.v), 23))}; }
// always_inline: a plain inline wrapper reached through an always_inline helper was deleted by
// GCC 12 as a call without side effects (conv_tile.inl's conv_tile_prefetch_rows).
[[gnu::always_inline]] inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
// Into L2 only: data needed after what L1 holds now is used up (gemm_tile.inl's NextPanel).
[[gnu::always_inline]] inline void prefetch_l2(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
// The line at p, owned for writing (PREFETCHW; callers check write_prefetch_pays, which needs it).
[[gnu::always_inline]] inline void prefetch_for_write(const void* p) {
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
}

// In-register transpose of 8 rows of 8 floats: r[i] holds row i on entry, column i on exit.
inline void transpose_square(Vec256 r[8]) {
  __m256 t[8], u[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i].v, r[i + 1].v);      // rows i, i+1: columns 0 1 | 4 5
    t[i + 1] = _mm256_unpackhi_ps(r[i].v, r[i + 1].v);  // columns 2 3 | 6 7
  }
#pragma GCC unroll 2
  for (int g = 0; g < 8; g += 4) {  // rows g..g+3, one column per 128-bit lane
    u[g] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));      // column 0 | 4
    u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));  // column 1 | 5
    u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));  // 2 | 6
    u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));  // 3 | 7
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    r[j].v = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    r[j + 4].v = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

}  // namespace kiln::kernels::simd

// 4 floats as a GCC/Clang vector-extension type: the baseline the scalar/ kernels are written
// with. No ISA-specific code: the compiler lowers it to what the base target has (SSE2 on
// x86-64, NEON on AArch64, plain scalar code elsewhere).
#pragma once
#include <cstdint>
#include <cstring>

namespace kiln::kernels::simd {

struct Vec4 {
  static constexpr int W = 4;
  // fma(a, b, c) is a·b + c with two roundings (no FMA in the base target).
  static constexpr bool kFusedFma = false;
  static constexpr bool kLookup32 = false;  // no lookup32 (vec_avx512.h)
  typedef float F __attribute__((vector_size(16)));
  typedef int32_t I __attribute__((vector_size(16)));
  F v;

  static Vec4 zero() { return {F{0, 0, 0, 0}}; }
  static Vec4 set1(float x) { return {F{x, x, x, x}}; }
  static Vec4 load(const float* p) {
    Vec4 r;
    std::memcpy(&r.v, p, sizeof(F));
    return r;
  }
  static Vec4 load_first(const float* p, int n) {
    Vec4 r = zero();
    for (int i = 0; i < n; ++i) r.v[i] = p[i];
    return r;
  }
  void store(float* p) const { std::memcpy(p, &v, sizeof(F)); }
  void store_first(float* p, int n) const {
    for (int i = 0; i < n; ++i) p[i] = v[i];
  }
  static Vec4 load_even(const float* p) { return {F{p[0], p[2], p[4], p[6]}}; }
  static Vec4 load_odd(const float* p) { return {F{p[1], p[3], p[5], p[7]}}; }
  static Vec4 load_even_first(const float* p, int n) {
    Vec4 r = zero();
    for (int i = 0; i < n; ++i) r.v[i] = p[2 * i];
    return r;
  }
  float sum() const { return (v[0] + v[1]) + (v[2] + v[3]); }
  float max() const {
    float a = v[0] > v[1] ? v[0] : v[1], b = v[2] > v[3] ? v[2] : v[3];
    return a > b ? a : b;
  }
  I bits() const {
    I i;
    std::memcpy(&i, &v, sizeof(I));
    return i;
  }
  static Vec4 from_bits(I i) {
    Vec4 r;
    std::memcpy(&r.v, &i, sizeof(I));
    return r;
  }
};

inline Vec4 operator+(Vec4 a, Vec4 b) { return {a.v + b.v}; }
inline Vec4 operator-(Vec4 a, Vec4 b) { return {a.v - b.v}; }
inline Vec4 operator*(Vec4 a, Vec4 b) { return {a.v * b.v}; }
inline Vec4 operator/(Vec4 a, Vec4 b) { return {a.v / b.v}; }
inline Vec4 fma(Vec4 a, Vec4 b, Vec4 c) { return {a.v * b.v + c.v}; }
inline Vec4 select_lt(Vec4 a, Vec4 b, Vec4 x, Vec4 y) {
  Vec4::I m = a.v < b.v;  // all ones where true
  return Vec4::from_bits((x.bits() & m) | (y.bits() & ~m));
}
inline Vec4 max(Vec4 a, Vec4 b) { return select_lt(a, b, b, a); }
inline Vec4 min(Vec4 a, Vec4 b) { return select_lt(a, b, a, b); }
inline Vec4 abs(Vec4 a) { return Vec4::from_bits(a.bits() & Vec4::I{0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}); }
inline Vec4 copysign(Vec4 mag, Vec4 sgn) {
  const Vec4::I lo = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
  return Vec4::from_bits((mag.bits() & lo) | (sgn.bits() & ~lo));
}
// t's bits shifted left 23 (vec_avx512.h's exponent_bits).
inline Vec4 exponent_bits(Vec4 t) { return Vec4::from_bits(t.bits() << 23); }

// Transpose of 4 rows of 4 floats: r[i] holds row i on entry, column i on exit.
inline void transpose_square(Vec4 r[4]) {
  Vec4 t[4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) t[j].v[i] = r[i].v[j];
  for (int j = 0; j < 4; ++j) r[j] = t[j];
}
// always_inline: a plain inline wrapper reached through an always_inline helper was deleted by
// GCC 12 as a call without side effects (conv_tile.inl's conv_tile_prefetch_rows).
[[gnu::always_inline]] inline void prefetch(const void* p) { __builtin_prefetch(p); }
[[gnu::always_inline]] inline void prefetch_l2(const void* p) { __builtin_prefetch(p, 0, 2); }
[[gnu::always_inline]] inline void prefetch_for_write(const void* p) { __builtin_prefetch(p, 1, 3); }

}  // namespace kiln::kernels::simd

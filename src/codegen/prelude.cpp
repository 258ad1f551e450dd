// The text every generated kernel library starts with (see emit.h): the ABI struct, the
// vectorisable float approximations with their measured errors, f16/bf16 conversions, and the
// exact ops with the reference interpreter's integer, NaN and cast semantics.
#include "kiln/codegen/emit.h"

namespace kiln::codegen {

std::string_view kernel_prelude() {
  static constexpr std::string_view kText = R"KILN_PRELUDE(// ---- kiln generated-kernel prelude -------------------------------------------------------
// Shared by every kernel in this library. The float math below is branch-free (selects, no
// calls, no tables) so that loops calling it vectorise. Max errors against the correctly
// rounded result, checked over every 997th float bit pattern plus specials, for the scalar,
// avx2 and avx512 builds (tests/codegen/test_prelude_math.cpp):
//   kiln_exp      1 ulp          (results below 2^-126 keep gradual underflow; >= 88.73 -> inf)
//   kiln_expm1    2 ulp
//   kiln_log      1 ulp          (denormal inputs handled; log(0) = -inf, log(<0) = NaN)
//   kiln_log1p    2 ulp
//   kiln_tanh     2 ulp
//   kiln_sigmoid  2 ulp
//   kiln_erf      2 ulp
// NaN in gives NaN out; +-inf give the limits.
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmath>
#include <limits>
#include <type_traits>

#define KILN_INLINE static inline __attribute__((always_inline))
#if defined(__clang__)
#define KILN_VECTOR_LOOP _Pragma("clang loop vectorize(assume_safety)")
#else
#define KILN_VECTOR_LOOP _Pragma("GCC ivdep")
#endif

extern "C" {
// Must match include/kiln/codegen/fused_abi.h (the generated library cannot include kiln headers).
struct kiln_fused_args {
  const void* const* inputs;
  void* const* outputs;
  const int64_t* out_dims;
  const int64_t* const* in_strides;
  int32_t rank;
};
}

KILN_INLINE uint32_t kiln_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
KILN_INLINE float kiln_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
KILN_INLINE float kiln_pow2i(int32_t n) { return kiln_u2f((uint32_t)(n + 127) << 23); }  // n in [-126, 127]
KILN_INLINE float kiln_copysign(float mag, float sgn) {
  return kiln_u2f((kiln_f2u(mag) & 0x7fffffffu) | (kiln_f2u(sgn) & 0x80000000u));
}

// e^r - 1 - r for r in [-ln2/2, ln2/2], as r^2 * P(r): relative error 3e-9 (minimax fit).
KILN_INLINE float kiln_exp_tail(float r) {
  float p = 0.001381461275741458f;
  p = p * r + 0.008368710055947304f;
  p = p * r + 0.04166838899254799f;
  p = p * r + 0.1666652113199234f;
  p = p * r + 0.4999999403953552f;
  return r * r * p;
}

// x = n ln2 + r, |r| <= ln2/2. ln2 is split so that n * kLn2Hi is exact for |n| < 2^8.
// The rounding uses the 1.5 * 2^23 trick: exact, and needs no SSE4.1.
KILN_INLINE float kiln_exp_reduce(float x, int32_t* n) {
  const float kMagic = 12582912.0f;
  float t = x * 1.44269504088896341f + kMagic;
  *n = (int32_t)(kiln_f2u(t) - kiln_f2u(kMagic));
  float nf = t - kMagic;
  return (x - nf * 0.693145751953125f) - nf * 1.428606765330187045e-6f;
}

KILN_INLINE float kiln_exp(float x) {
  // Outside [-104, 89] the result is 0 or inf already; clamping keeps n in [-150, 129].
  float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  int32_t n;
  float r = kiln_exp_reduce(xc, &n);
  float p = 1.0f + (r + kiln_exp_tail(r));
  // 2^n in two factors, so results in the denormal range round once and n = 128 overflows.
  int32_t n1 = n >> 1;
  float y = p * kiln_pow2i(n1) * kiln_pow2i(n - n1);
  return x != x ? x : y;
}

// e^z for finite z in [-87, 88] (callers clamp): no clamps, no NaN test, one scale factor.
// Same polynomial, so the same 1 ulp.
KILN_INLINE float kiln_exp_bounded(float z) {
  int32_t n;
  float r = kiln_exp_reduce(z, &n);
  return (1.0f + (r + kiln_exp_tail(r))) * kiln_pow2i(n);
}

KILN_INLINE float kiln_expm1(float x) {
  // Below -30 the answer is -1.0f; above 89 it is inf.
  float xc = x < -30.0f ? -30.0f : (x > 89.0f ? 89.0f : x);
  int32_t n;
  float r = kiln_exp_reduce(xc, &n);
  float q = r + kiln_exp_tail(r);  // e^r - 1
  // n in [-44, 129]: 2^n in two factors as in kiln_exp. Up to n = 99, 2^n q + (2^n - 1) keeps
  // the small results accurate; beyond, e^x - 1 == e^x in float.
  int32_t n1 = n >> 1;
  float s1 = kiln_pow2i(n1), s2 = kiln_pow2i(n - n1), s = s1 * s2;
  float y = n < 100 ? s * q + (s - 1.0f) : (1.0f + q) * s1 * s2;
  y = n == 0 ? q : y;
  return x != x ? x : y;
}

KILN_INLINE float kiln_log(float x) {
  // Denormals: scale into the normal range first.
  int32_t eadj = x < 1.17549435e-38f ? -23 : 0;
  float xs = x < 1.17549435e-38f ? x * 8388608.0f : x;
  uint32_t u = kiln_f2u(xs);
  int32_t e = (int32_t)((u >> 23) & 0xff) - 127 + eadj;
  float m = kiln_u2f((u & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  int32_t big = m > 1.41421356f;
  m = big ? m * 0.5f : m;                               // [sqrt(1/2), sqrt(2))
  e += big;
  float f = m - 1.0f;                                   // exact
  // log1p(f) = f - f^2/2 + f^3 Q(f): relative error 6e-9 (minimax fit).
  float q = -0.07634498924016953f;
  q = q * f + 0.12761583924293518f;
  q = q * f - 0.13160185515880585f;
  q = q * f + 0.14201757311820984f;
  q = q * f - 0.16623356938362122f;
  q = q * f + 0.20001226663589478f;
  q = q * f - 0.2500081956386566f;
  q = q * f + 0.3333333134651184f;
  float f2 = f * f;
  float ef = (float)e;
  float y = ((ef * 1.428606765330187045e-6f + (f2 * f * q - 0.5f * f2)) + f) + ef * 0.693145751953125f;
  y = x == 0.0f ? -INFINITY : y;
  y = x < 0.0f ? NAN : y;
  y = x == INFINITY ? x : y;
  return x != x ? x : y;
}

KILN_INLINE float kiln_log1p(float x) {
  // log(w) * x / (w - 1) with w = 1 + x cancels the rounding of w (Goldberg's trick).
  float w = 1.0f + x;
  float y = kiln_log(w) * (x / (w - 1.0f));
  y = w == 1.0f ? x : y;
  return x == INFINITY ? x : y;
}

KILN_INLINE float kiln_tanh(float x) {
  float a = fabsf(x);
  // |x| < 0.625: x + x^3 P(x^2), relative error 4e-9 (minimax fit).
  float x2 = x * x;
  float p = -0.005704983603209257f;
  p = p * x2 + 0.0206390842795372f;
  p = p * x2 - 0.05373971536755562f;
  p = p * x2 + 0.13331441581249237f;
  p = p * x2 - 0.3333328068256378f;
  float small = kiln_copysign(x + x * x2 * p, x);  // copysign keeps tanh(-0) = -0
  // Otherwise 1 - 2 / (e^2|x| + 1). From |x| = 9.1 on, tanh(x) rounds to +-1.
  float ac = a < 9.1f ? a : 9.1f;
  float big = kiln_copysign(1.0f - 2.0f / (kiln_exp_bounded(2.0f * ac) + 1.0f), x);
  float y = a < 0.625f ? small : big;
  return x != x ? x : y;
}

KILN_INLINE float kiln_sigmoid(float x) {
  // e = e^-|x| never overflows; x < 0 gives e / (1 + e), accurate down to the denormals.
  float e = kiln_exp(-fabsf(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

KILN_INLINE float kiln_erf(float x) {
  float a = fabsf(x);
  // |x| < 0.875: x P(x^2), relative error 9e-9 (minimax fit).
  float x2 = x * x;
  float p = -0.0006203255034051836f;
  p = p * x2 + 0.005032181274145842f;
  p = p * x2 - 0.026791462674736977f;
  p = p * x2 + 0.11282455176115036f;
  p = p * x2 - 0.3761255145072937f;
  p = p * x2 + 1.1283791065216064f;
  float small = x * p;
  // 0.875 <= |x| < 3.93: erfc(|x|) = e^(-x^2 + g(|x|)), g a polynomial in t = (|x| - 2.4025) / 1.5275
  // with erfc-weighted error 2e-9 (minimax fit). From 3.93 on, erf(x) rounds to +-1.
  float ac = a < 3.93f ? a : 3.93f;
  float t = (ac - 2.4025f) * 0.6546644844517184f;
  float g = 0.0025392374955117702f;
  g = g * t - 0.0016666370211169124f;
  g = g * t + 0.014514114707708359f;
  g = g * t - 0.0414138063788414f;
  g = g * t + 0.1386132538318634f;
  g = g * t - 0.5559414029121399f;
  g = g * t - 1.5218878984451294f;
  float big = kiln_copysign(1.0f - kiln_exp_bounded(g - ac * ac), x);
  float y = a < 0.875f ? small : big;
  return x != x ? x : y;
}

// f16 / bf16 storage <-> float, bit-exact with kiln::f16_to_f32 / f32_to_f16 / f32_to_bf16
// (round to nearest even; NaN -> quiet NaN). Values of f16/bf16 dtype are computed in float and
// rounded back after every op, as the reference interpreter does.
KILN_INLINE float kiln_h2f(uint16_t h) {
  uint32_t em = h & 0x7fffu;
  // em << 13 reads the half's exponent and mantissa as a float 2^112 too small (denormal halves
  // land on float denormals, which the multiplication normalises exactly).
  float f = kiln_u2f(em << 13) * 5.192296858534828e+33f;  // 2^112
  f = em >= 0x7c00u ? kiln_u2f((em << 13) | 0x7f800000u) : f;
  return kiln_u2f(kiln_f2u(f) | ((uint32_t)(h & 0x8000u) << 16));
}
KILN_INLINE uint16_t kiln_f2h(float f) {
  uint32_t u = kiln_f2u(f);
  uint32_t a = u & 0x7fffffffu;
  // Below 2^-14 (half denormals): adding 0.5 rounds to a multiple of 2^-24, the half's unit.
  uint32_t denormal = kiln_f2u(kiln_u2f(a) + 0.5f) - 0x3f000000u;
  uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;  // rebias, round to even
  uint32_t h = a < 0x38800000u ? denormal : normal;
  h = a >= 0x477ff000u ? 0x7c00u : h;  // rounds to >= 65520: inf
  h = a > 0x7f800000u ? 0x7e00u : h;
  return (uint16_t)(h | ((u >> 16) & 0x8000u));
}
KILN_INLINE float kiln_bf2f(uint16_t b) { return kiln_u2f((uint32_t)b << 16); }
KILN_INLINE uint16_t kiln_f2bf(float f) {
  uint32_t u = kiln_f2u(f);
  uint16_t r = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40u) : r;
}
KILN_INLINE float kiln_round_f16(float f) { return kiln_h2f(kiln_f2h(f)); }
KILN_INLINE float kiln_round_bf16(float f) { return kiln_bf2f(kiln_f2bf(f)); }

// ---- exact ops, with the reference interpreter's semantics --------------------------------
// Integer + - * and negation wrap (two's complement) instead of overflowing into undefined
// behaviour; bool and floats are plain.
template <class T> struct kiln_is_int {
  static const bool value = std::is_integral<T>::value && !std::is_same<T, bool>::value;
};
template <class T> KILN_INLINE T kiln_add(T a, T b) {
  if constexpr (kiln_is_int<T>::value) return (T)((uint64_t)a + (uint64_t)b); else return a + b;
}
template <class T> KILN_INLINE T kiln_sub(T a, T b) {
  if constexpr (kiln_is_int<T>::value) return (T)((uint64_t)a - (uint64_t)b); else return a - b;
}
template <class T> KILN_INLINE T kiln_mul(T a, T b) {
  if constexpr (kiln_is_int<T>::value) return (T)((uint64_t)a * (uint64_t)b); else return a * b;
}
template <class T> KILN_INLINE T kiln_neg(T a) {
  if constexpr (kiln_is_int<T>::value) return (T)((uint64_t)0 - (uint64_t)a); else return -a;
}
// As the reference writes it: -0 stays -0.
template <class T> KILN_INLINE T kiln_abs(T a) {
  if constexpr (std::is_unsigned<T>::value) return a;
  else return a < T(0) ? kiln_neg(a) : a;
}
template <class T> KILN_INLINE T kiln_sign(T a) {
  T s = a > T(0) ? T(1) : (a < T(0) ? (T)-1 : T(0));
  return a != a ? a : s;
}
// Max/Min propagate a NaN in either operand (a NaN `a` survives `a < b ? b : a`).
template <class T> KILN_INLINE T kiln_max(T a, T b) { return b != b ? b : (a < b ? b : a); }
template <class T> KILN_INLINE T kiln_min(T a, T b) { return b != b ? b : (b < a ? b : a); }
// std::max / std::min exactly (their NaN behaviour is what HardSigmoid and Celu inherit).
template <class T> KILN_INLINE T kiln_std_max(T a, T b) { return a < b ? b : a; }
template <class T> KILN_INLINE T kiln_std_min(T a, T b) { return b < a ? b : a; }
// Integer division truncates; MIN / -1 wraps. The divisor is a non-zero constant (checked at
// code generation), so no division by zero can happen here.
template <class T> KILN_INLINE T kiln_div(T a, T b) {
  if constexpr (kiln_is_int<T>::value && std::is_signed<T>::value) return b == (T)-1 ? kiln_neg(a) : (T)(a / b);
  else return a / b;
}
// Mod: fmod = 1 takes the dividend's sign (C fmod); fmod = 0 the divisor's (integers only).
template <class T> KILN_INLINE T kiln_mod(T a, T b, bool c_fmod) {
  if constexpr (std::is_floating_point<T>::value) {
    return std::fmod(a, b);
  } else {
    T r = 0;
    if constexpr (std::is_signed<T>::value) {
      r = b == (T)-1 ? (T)0 : (T)(a % b);
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    } else {
      r = (T)(a % b);
    }
    return r;
  }
}

// Cast with Tensor::cast's rules: floats -> integers truncate toward zero and saturate, NaN -> 0;
// 32/64-bit integer sources convert through int64; anything non-zero -> true.
template <class To> KILN_INLINE To kiln_float_to(double v) {
  if constexpr (kiln_is_int<To>::value) {
    // Selects, not branches, so that loops with casts vectorise.
    const double hi = (double)std::numeric_limits<To>::max(), lo = (double)std::numeric_limits<To>::lowest();
    const double c = v != v ? 0.0 : (v > lo ? v : lo);
    const To t = (To)(c < hi ? c : lo);  // converts only values in range
    return v >= hi ? std::numeric_limits<To>::max() : t;
  } else {
    return (To)v;
  }
}
template <class To, class From> KILN_INLINE To kiln_cast(From v) {
  if constexpr (std::is_same<To, From>::value) {
    return v;
  } else if constexpr (std::is_same<To, bool>::value) {
    return (double)v != 0.0;
  } else if constexpr (std::is_same<From, bool>::value) {
    return v ? (To)1 : (To)0;  // a select: vectorisers do not convert bool to double
  } else if constexpr (kiln_is_int<From>::value && sizeof(From) >= 4) {
    return (To)(int64_t)v;
  } else {
    return kiln_float_to<To>((double)v);
  }
}

// x^0.5 as pow gives it (+0 for -0, +inf for -inf), from a correctly rounded sqrt.
KILN_INLINE float kiln_pow_half(float x) { return x == -INFINITY ? INFINITY : sqrtf(x) + 0.0f; }
KILN_INLINE double kiln_pow_half(double x) { return x == -INFINITY ? INFINITY : sqrt(x) + 0.0; }

// Strides in elements along dims [from, rank) equal those of a row-major tensor with `dims`
// (size-1 dims may have any stride).
KILN_INLINE bool kiln_strides_contiguous(const int64_t* s, const int64_t* dims, int from, int rank) {
  int64_t want = 1;
  for (int d = rank - 1; d >= from; --d) {
    if (dims[d] != 1 && s[d] != want) return false;
    want *= dims[d];
  }
  return true;
}
// Strides along dims [from, to) are 0 (size-1 dims may have any stride).
KILN_INLINE bool kiln_strides_zero(const int64_t* s, const int64_t* dims, int from, int to) {
  for (int d = from; d < to; ++d)
    if (dims[d] != 1 && s[d] != 0) return false;
  return true;
}
// Stride along output dim d (of `rank`) of a baked constant compiled against `srank` dims,
// aligned to the right as broadcasting aligns shapes.
KILN_INLINE int64_t kiln_aligned_stride(const int64_t* s, int srank, int rank, int d) {
  int k = d - (rank - srank);
  return k >= 0 && k < srank ? s[k] : 0;
}
// ---- end of prelude ---------------------------------------------------------------------
)KILN_PRELUDE";
  return kText;
}

}  // namespace kiln::codegen

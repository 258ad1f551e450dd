// The requantizing epilogue on 8 lanes of a ymm register, for the translation units built with
// -mavx2 -mfma -ffp-contract=off (the fused GEMM tile epilogue, qgemm_ymm_epilogue.inl, and the
// channel-blocked depthwise kernel, qdepthwise_avx2.cpp). Each lane computes exactly the float
// operations of epilogue_real + quantize_value (kiln/kernels/int8.h), in their order, so the
// outputs are those of the scalar formula bit for bit. In an anonymous namespace: each including
// file has its own copy, compiled for its own ISA flags.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/kernels/int8.h"
#include "qepilogue_dispatch.h"

namespace kiln::kernels::int8 {
namespace {

struct EpiConstsY {
  __m256 lo, hi, inv, qmin, qmax, rscale, res_lo, res_hi, rmagic;
  __m256i zp, zp16, lo_bytes;
  explicit EpiConstsY(const QEpilogue& e)
      : lo(_mm256_set1_ps(e.lo)), hi(_mm256_set1_ps(e.hi)), inv(_mm256_set1_ps(e.out_inv_scale)),
        rscale(_mm256_set1_ps(e.residual_scale)), res_lo(_mm256_set1_ps(e.res_lo)), res_hi(_mm256_set1_ps(e.res_hi)),
        // 2^23 + the residual's zero point (+ 128 for s8, whose bytes are read flipped to u8):
        // see with_residual8.
        rmagic(_mm256_set1_ps(8388608.f + static_cast<float>(e.residual_zp + (e.residual_type == QType::S8 ? 128 : 0)))),
        zp(_mm256_set1_epi32(e.out_zp)), zp16(_mm256_set1_epi16(static_cast<int16_t>(e.out_zp))) {
    // The activation clamp and the saturation as one clamp of v * inv: bit-identical, for the
    // reasons given in qgemm_avx512vnni.cpp's EpiConsts (multiplying by inv > 0 is monotonic, the
    // saturation bounds minus the zero point are integers). The +-2^30 bound of quantize_value
    // is inside them.
    const float ql = e.out == QType::U8 ? 0.f : -128.f, qh = e.out == QType::U8 ? 255.f : 127.f;
    const float fmin = std::max(e.lo * e.out_inv_scale, ql - static_cast<float>(e.out_zp));
    const float fmax = std::min(e.hi * e.out_inv_scale, qh - static_cast<float>(e.out_zp));
    qmin = _mm256_set1_ps(fmin);
    qmax = _mm256_set1_ps(fmax);
    // store_pair16's lower clamp, on output bytes: rounding is monotonic, so rounding the value
    // clamped below at fmin equals clamping the rounded value below at round(fmin) (the zero point
    // added); min'd with round(fmax), so that fmin > fmax still gives round(fmax) as the clamp
    // does. Round half to even, as the conversion (MXCSR default).
    const int32_t lo_q = static_cast<int32_t>(std::min(std::nearbyint(fmin), std::nearbyint(fmax))) + e.out_zp;
    lo_bytes = _mm256_set1_epi8(static_cast<char>(lo_q));
  }
};

// The real values before the residual: float(a) * scale (+ bf): a holds accumulators with the
// int32 bias added.
template <bool BiasF>
inline __m256 scaled_lanes8(__m256i a, __m256 scale, __m256 bf) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), scale);
  if constexpr (BiasF) v = _mm256_add_ps(v, bf);
  return v;
}

// The residual at rp added to 8 scaled values v (nothing without one).
template <detail::Res R>
inline __m256 with_residual8(const EpiConstsY& k, __m256 v, const void* rp) {
  using detail::Res;
  if constexpr (R != Res::None) {
    __m256 rv;
    if constexpr (R == Res::F32) {
      rv = _mm256_loadu_ps(static_cast<const float*>(rp));
    } else {
      // float(r - zp) exactly, without a conversion: the float whose bits are 2^23's with the
      // byte as the low mantissa bits is 2^23 + r, and (2^23 + r) - (2^23 + zp) is exact (both
      // integers below 2^24). s8 bytes are flipped to u8 (r + 128; rmagic has the + 128). The
      // conversion competes with the products' multiplies for ports; the OR does not.
      __m128i raw = _mm_loadl_epi64(static_cast<const __m128i*>(rp));
      if constexpr (R == Res::S8) raw = _mm_xor_si128(raw, _mm_set1_epi8(static_cast<char>(0x80)));
      const __m256i bits = _mm256_or_si256(_mm256_cvtepu8_epi32(raw), _mm256_set1_epi32(0x4B000000));
      rv = _mm256_sub_ps(_mm256_castsi256_ps(bits), k.rmagic);
    }
    v = _mm256_min_ps(_mm256_max_ps(v, k.res_lo), k.res_hi);
    v = R == Res::F32 ? _mm256_add_ps(v, rv) : _mm256_fmadd_ps(rv, k.rscale, v);
  }
  return v;
}

// 8 values (residual added) scaled to output steps: the clamp, round half to even (MXCSR
// default); the zero point not yet added. In [qmin, qmax], so adding it lands in the output
// type's range, and the values fit int16 (|q| <= 255).
inline __m256i rounded8(const EpiConstsY& k, __m256 v) {
  return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, k.inv), k.qmin), k.qmax));
}

// rounded8 with the zero point: the output value.
inline __m256i quantized8(const EpiConstsY& k, __m256 v) { return _mm256_add_epi32(rounded8(k, v), k.zp); }

// The rest of the epilogue on 8 scaled values v: the residual at rp, the clamp, stored as Out
// at op.
template <QType Out, detail::Res R>
inline void finish_lanes8(const EpiConstsY& k, __m256 v, const void* rp, void* op) {
  v = with_residual8<R>(k, v, rp);
  if constexpr (Out == QType::F32) {
    _mm256_storeu_ps(static_cast<float*>(op), _mm256_min_ps(_mm256_max_ps(v, k.lo), k.hi));
  } else {
    const __m256i q = quantized8(k, v);
    // In range, so the packs only select each lane's low byte.
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i q8 = Out == QType::U8 ? _mm_packus_epi16(q16, q16) : _mm_packs_epi16(q16, q16);
    _mm_storel_epi64(static_cast<__m128i*>(op), q8);
  }
}

// rounded8 with only the upper clamp (none without Upper, see pair_needs_upper_clamp), for
// store_pair16, which clamps below on the output bytes. qmax first: a NaN v gives NaN,
// converted to INT_MIN, which the lower clamp takes to its bound as rounded8's max does.
template <bool Upper>
inline __m256i rounded_upper8(const EpiConstsY& k, __m256 v) {
  const __m256 x = _mm256_mul_ps(v, k.inv);
  return _mm256_cvtps_epi32(Upper ? _mm256_min_ps(k.qmax, x) : x);
}

// Whether store_pair16's values need the upper clamp for rows [row0, row0 + rows): a finite
// activation bound (hi) does, and so does a value v * inv that could reach 2^30 (quantize_value
// clamps there; the conversion turns values from 2^31 on into INT_MIN). Otherwise the saturating
// packs do what the clamp does: rounding is monotonic and qh - zp an integer, so
// round(min(x, qh - zp)) = min(round(x), qh - zp). |v| is bounded by the residual's pre-clamp
// when it has one, else by |int32| * scale + |bias_f|, plus the u8/s8 residual's |r - zp| <= 383
// steps; an f32 residual is unbounded. Typical products have scale * inv near 1e-2, far inside.
inline bool pair_needs_upper_clamp(const QEpilogue& e, int64_t row0, int rows) {
  if (!(e.hi == std::numeric_limits<float>::infinity())) return true;
  if (e.residual && e.residual_type == QType::F32) return true;
  const bool pre = e.residual && std::isfinite(e.res_lo) && std::isfinite(e.res_hi);
  const double inv = std::fabs(static_cast<double>(e.out_inv_scale));
  for (int r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    double v = pre ? std::max(std::fabs(static_cast<double>(e.res_lo)), std::fabs(static_cast<double>(e.res_hi)))
                   : 2147483648.0 * std::fabs(static_cast<double>(e.scale[row])) +
                         (e.bias_f ? std::fabs(static_cast<double>(e.bias_f[row])) : 0.0);
    if (e.residual) v += 384.0 * std::fabs(static_cast<double>(e.residual_scale));
    if (!(v * inv < 1073741824.0)) return true;  // NaN-safe
  }
  return false;
}

// 16 consecutive u8/s8 outputs from two vectors of rounded_upper8 values (q0 the first 8): one
// pack of the pair, the zero point added to its 16 int16 lanes at once, the lower clamp on the
// 16 bytes (EpiConstsY::lo_bytes), one dword permutation and one store, where two
// finish_lanes8 calls take two of each and clamp in float (the epilogue of convolutions with few
// input channels is most of their time, and its float operations compete with the products'
// multiplies for ports).
template <QType Out>
inline void store_pair16(const EpiConstsY& k, __m256i q0, __m256i q1, void* op) {
  static_assert(Out != QType::F32);
  // packs: [q0 0-3, q1 0-3 | q0 4-7, q1 4-7] as int16, saturating values below -32768 (those
  // under the lower clamp can be); the zero point added saturating, the byte pack saturating
  // to the type: all monotonic, and values at or above the lower clamp pass unchanged (in
  // [fmin, fmax] they round into the type's range minus the zero point). The byte pack repeats
  // each 128-bit lane's 8 bytes, whose dwords 0 (q0 0-3), 1 (q1 0-3), 4 (q0 4-7), 5 (q1 4-7) go
  // in order 0, 4, 1, 5.
  const __m256i w = _mm256_adds_epi16(_mm256_packs_epi32(q0, q1), k.zp16);
  const __m256i b = Out == QType::U8 ? _mm256_max_epu8(_mm256_packus_epi16(w, w), k.lo_bytes)
                                     : _mm256_max_epi8(_mm256_packs_epi16(w, w), k.lo_bytes);
  const __m256i ordered = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
  _mm_storeu_si128(static_cast<__m128i*>(op), _mm256_castsi256_si128(ordered));
}

// The whole epilogue on a row's 16 consecutive u8/s8 outputs: accumulators a0, a1 (bias added)
// times scale, plus bf, the residual at rp, the clamp, one pack and store (store_pair16).
template <QType Out, detail::Res R, bool BiasF, bool Upper>
__attribute__((always_inline)) inline void epilogue_pair16(const EpiConstsY& k, __m256i a0, __m256i a1,
                                                           __m256 scale, __m256 bf, const void* rp, void* op) {
  constexpr size_t rsize = detail::res_size(R);
  const __m256i q0 = rounded_upper8<Upper>(k, with_residual8<R>(k, scaled_lanes8<BiasF>(a0, scale, bf), rp));
  const __m256i q1 = rounded_upper8<Upper>(k, with_residual8<R>(k, scaled_lanes8<BiasF>(a1, scale, bf),
                                                         R == detail::Res::None ? nullptr
                                                                                : static_cast<const char*>(rp) + 8 * rsize));
  store_pair16<Out>(k, q0, q1, op);
}

// The whole epilogue on 8 lanes: accumulators a (bias added) times scale, plus bf, the residual
// at rp, the clamp, stored as Out at op.
template <QType Out, detail::Res R, bool BiasF>
inline void epilogue_lanes8(const EpiConstsY& k, __m256i a, __m256 scale, __m256 bf, const void* rp, void* op) {
  finish_lanes8<Out, R>(k, scaled_lanes8<BiasF>(a, scale, bf), rp, op);
}

}  // namespace
}  // namespace kiln::kernels::int8

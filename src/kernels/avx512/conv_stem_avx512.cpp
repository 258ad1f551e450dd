// The RGB stem as pixel vectors (conv_stem.h): compiled with the AVX-512 flags (CMakeLists.txt),
// reached only where direct_stem_applies said the table is AVX-512.
//
// A band's input rows are first split into their even and odd columns, each row of a channel a
// record [16 zeros][odd columns][even columns]: output pixel ow's taps kw = 0, 1, 2 read input
// columns 2 ow - 1, 2 ow, 2 ow + 1, which are odd[ow - 1] (the zero before odd[0] for ow = 0: the
// left padding), even[ow] and odd[ow], so 16 consecutive output pixels' tap is one load. Rows
// above or below the image are zero records (the padding's taps add zeros, as the stem bands'
// padded copy has them add). A tile is kTileVecs vectors of 16 output pixels, consecutive in
// the band (a tile may cross rows) by the 8 channels of one output block: per K step
// kTileVecs loads, 8 broadcast weights, 8 x kTileVecs FMAs, the 9 C steps unrolled.
#include <immintrin.h>

#include <cstring>

#include "../conv_stem.h"
#include "simd/vec_avx512.h"

namespace kiln::kernels::detail {
namespace {

using simd::prefetch_for_write;

constexpr int64_t kPx = 16;       // output pixels a vector
constexpr int kNK = 8;            // channels a tile: one output block
constexpr int kTileVecs = 3;      // pixel vectors a tile: 24 accumulators, 3 inputs, 1 weight
constexpr int64_t kLead = 16;     // zeros before a record's odd columns (odd[-1] among them)
constexpr int64_t kPanel = 32;    // columns of a packed weight panel (the direct tile's NR)

// Floats of one record (a channel's input row split into its odd and even columns).
int64_t record_floats(int64_t W) { return kLead + W; }

// Record i of channel c holds band input row 2 oh0 - 1 + i.
float* record(float* scratch, int64_t C, int64_t W, int64_t i, int64_t c) {
  return scratch + (i * C + c) * record_floats(W);
}

void split_columns(const StemBand& b) {
  const int64_t rows_in = 2 * (b.oh1 - b.oh0) + 1, half = b.W / 2;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t i = 0; i < rows_in; ++i) {
    const int64_t ih = 2 * b.oh0 - 1 + i;
    for (int64_t c = 0; c < b.C; ++c) {
      float* r = record(b.scratch, b.C, b.W, i, c);
      if (ih < 0 || ih >= b.H) {
        std::memset(r, 0, sizeof(float) * record_floats(b.W));
        continue;
      }
      _mm512_store_ps(r, _mm512_setzero_ps());
      float* o = r + kLead;
      float* e = o + half;
      const float* src = b.x + (c * b.H + ih) * b.W;
      for (int64_t j = 0; j < half; j += kPx) {  // half: a multiple of 16 (direct_stem_applies)
        const __m512 lo = _mm512_loadu_ps(src + 2 * j), hi = _mm512_loadu_ps(src + 2 * j + kPx);
        _mm512_storeu_ps(e + j, _mm512_permutex2var_ps(lo, even, hi));
        _mm512_storeu_ps(o + j, _mm512_permutex2var_ps(lo, odd, hi));
      }
    }
  }
}

// x = acc * alpha (when scaled) + bias (when there is one), then the activation:
// conv_tile_finish's operations in its order (vecmath.inl's activate for these three; the
// whole of vecmath.inl here would bring its epilogue functions into this object).
template <Act A>
[[gnu::always_inline]] inline __m512 finish(__m512 x, bool scale, __m512 alpha, const float* bias, __m512 lo,
                                            __m512 hi) {
  if (scale) x = _mm512_mul_ps(x, alpha);
  if (bias) x = _mm512_add_ps(x, _mm512_set1_ps(*bias));
  if constexpr (A == Act::Relu) return _mm512_max_ps(x, _mm512_setzero_ps());
  if constexpr (A == Act::Clip) return _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  return x;
}

// Channels a[0..7] of 16 pixels into 8 vectors of two pixels' 8 channels, pixels 2j and 2j + 1
// in out + 16 j.
[[gnu::always_inline]] inline void store_transposed(const __m512 (&a)[kNK], float* out) {
  const __m512 s0 = _mm512_unpacklo_ps(a[0], a[1]), s1 = _mm512_unpackhi_ps(a[0], a[1]);
  const __m512 s2 = _mm512_unpacklo_ps(a[2], a[3]), s3 = _mm512_unpackhi_ps(a[2], a[3]);
  const __m512 s4 = _mm512_unpacklo_ps(a[4], a[5]), s5 = _mm512_unpackhi_ps(a[4], a[5]);
  const __m512 s6 = _mm512_unpacklo_ps(a[6], a[7]), s7 = _mm512_unpackhi_ps(a[6], a[7]);
  auto lo_pd = [](__m512 x, __m512 y) {
    return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
  };
  auto hi_pd = [](__m512 x, __m512 y) {
    return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
  };
  // In 128-bit lane L (pixels 4L..4L+3): u0..u3 pixels 4L..4L+3's channels 0-3, u4..u7 their 4-7.
  const __m512 u0 = lo_pd(s0, s2), u1 = hi_pd(s0, s2), u2 = lo_pd(s1, s3), u3 = hi_pd(s1, s3);
  const __m512 u4 = lo_pd(s4, s6), u5 = hi_pd(s4, s6), u6 = lo_pd(s5, s7), u7 = hi_pd(s5, s7);
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  // A = [u0.0, u4.0, u0.1, u4.1], B = the same of lanes 2 and 3; C, D of u1 and u5; and so on.
  const __m512 A = _mm512_permutex2var_ps(u0, first, u4), B = _mm512_permutex2var_ps(u0, second, u4);
  const __m512 C = _mm512_permutex2var_ps(u1, first, u5), D = _mm512_permutex2var_ps(u1, second, u5);
  const __m512 E = _mm512_permutex2var_ps(u2, first, u6), F = _mm512_permutex2var_ps(u2, second, u6);
  const __m512 G = _mm512_permutex2var_ps(u3, first, u7), H = _mm512_permutex2var_ps(u3, second, u7);
  constexpr int kLow = _MM_SHUFFLE(1, 0, 1, 0), kHigh = _MM_SHUFFLE(3, 2, 3, 2);
  _mm512_storeu_ps(out + 0 * kPx, _mm512_shuffle_f32x4(A, C, kLow));   // pixels 0, 1
  _mm512_storeu_ps(out + 1 * kPx, _mm512_shuffle_f32x4(E, G, kLow));   // 2, 3
  _mm512_storeu_ps(out + 2 * kPx, _mm512_shuffle_f32x4(A, C, kHigh));  // 4, 5
  _mm512_storeu_ps(out + 3 * kPx, _mm512_shuffle_f32x4(E, G, kHigh));  // 6, 7
  _mm512_storeu_ps(out + 4 * kPx, _mm512_shuffle_f32x4(B, D, kLow));   // 8, 9
  _mm512_storeu_ps(out + 5 * kPx, _mm512_shuffle_f32x4(F, H, kLow));   // 10, 11
  _mm512_storeu_ps(out + 6 * kPx, _mm512_shuffle_f32x4(B, D, kHigh));  // 12, 13
  _mm512_storeu_ps(out + 7 * kPx, _mm512_shuffle_f32x4(F, H, kHigh));  // 14, 15
}

// NV pixel vectors from band vector v0 by channels [k0, k0 + 8), C input channels.
template <int C, int NV, Act A>
[[gnu::always_inline]] inline void tile(const StemBand& b, int64_t v0, int64_t k0) {
  const int64_t vpr = b.OW / kPx, rec = record_floats(b.W), half = b.W / 2;
  const float* base[NV];
  int64_t at[NV];  // the vector's first output pixel in the output's plane
#pragma GCC unroll 4
  for (int p = 0; p < NV; ++p) {
    const int64_t r = (v0 + p) / vpr, px = (v0 + p) % vpr * kPx;
    base[p] = b.scratch + 2 * r * C * rec + kLead + px;  // odd column px of the vector's first window row
    at[p] = (b.oh0 + r - b.y_row0) * b.OW + px;
  }
  if (b.fetch_for_write) {  // the tile's output lines, before its K loop (StemBand::fetch_for_write)
    const float* o = b.y + k0 / kNK * b.out_rows() * b.OW * kNK;
#pragma GCC unroll 4
    for (int p = 0; p < NV; ++p)
#pragma GCC unroll 8
      for (int64_t l = 0; l < kPx * kNK; l += kPx) prefetch_for_write(o + at[p] * kNK + l);
  }
  const float* w = b.w + k0 / kPanel * (9 * C) * kPanel + k0 % kPanel;
  __m512 acc[kNK][NV];
#pragma GCC unroll 8
  for (int k = 0; k < kNK; ++k)
#pragma GCC unroll 4
    for (int p = 0; p < NV; ++p) acc[k][p] = _mm512_setzero_ps();
  // The direct tile's K order, which is the packed rows' order: (kh, kw, channel), or with
  // fewer channels than window columns (taps inner, conv_direct.cpp's plan) (kh, channel, kw).
  constexpr bool kTapsInner = 3 > C;
#pragma GCC unroll 3
  for (int kh = 0; kh < 3; ++kh)
#pragma GCC unroll 12
    for (int i = 0; i < 3 * C; ++i) {
      const int kw = kTapsInner ? i % 3 : i / C, c = kTapsInner ? i / 3 : i % C;
      const int64_t off = (kh * C + c) * rec + (kw == 0 ? -1 : kw == 1 ? half : 0);
      __m512 in[NV];
#pragma GCC unroll 4
      for (int p = 0; p < NV; ++p) in[p] = _mm512_loadu_ps(base[p] + off);
      const float* wq = w + (kh * 3 * C + i) * kPanel;  // row q = kh * 3C + i either way
#pragma GCC unroll 8
      for (int k = 0; k < kNK; ++k) {
        const __m512 wk = _mm512_set1_ps(wq[k]);
#pragma GCC unroll 4
        for (int p = 0; p < NV; ++p) acc[k][p] = _mm512_fmadd_ps(in[p], wk, acc[k][p]);
      }
    }
  const bool scale = b.alpha != 1.f;
  const __m512 alpha = _mm512_set1_ps(b.alpha), lo = _mm512_set1_ps(b.act_alpha), hi = _mm512_set1_ps(b.act_beta);
  float* out = b.y + k0 / kNK * b.out_rows() * b.OW * kNK;
#pragma GCC unroll 4
  for (int p = 0; p < NV; ++p) {
    __m512 ch[kNK];
#pragma GCC unroll 8
    for (int k = 0; k < kNK; ++k)
      ch[k] = finish<A>(acc[k][p], scale, alpha, b.bias ? b.bias + k0 + k : nullptr, lo, hi);
    store_transposed(ch, out + at[p] * kNK);
  }
}

template <int C, Act A>
void band(const StemBand& b) {
  const int64_t vectors = (b.oh1 - b.oh0) * (b.OW / kPx);
  for (int64_t k0 = 0; k0 < b.K; k0 += kNK) {
    int64_t v = 0;
    for (; v + kTileVecs <= vectors; v += kTileVecs) tile<C, kTileVecs, A>(b, v, k0);
    if (vectors - v == 2) tile<C, 2, A>(b, v, k0);
    else if (vectors - v == 1) tile<C, 1, A>(b, v, k0);
  }
}

template <int C>
void band_act(const StemBand& b) {
  switch (b.act) {
    case Act::Relu: return band<C, Act::Relu>(b);
    case Act::Clip: return band<C, Act::Clip>(b);
    default: return band<C, Act::None>(b);
  }
}

}  // namespace

size_t stem_band_scratch_floats(int64_t C, int64_t W, int64_t rows) {
  return static_cast<size_t>((2 * rows + 1) * C * record_floats(W));
}

void stem_band_avx512(const StemBand& b) {
  split_columns(b);
  switch (b.C) {
    case 1: return band_act<1>(b);
    case 2: return band_act<2>(b);
    case 3: return band_act<3>(b);
    default: return band_act<4>(b);
  }
}

}  // namespace kiln::kernels::detail

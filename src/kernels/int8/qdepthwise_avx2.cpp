// The channel-blocked INT8 depthwise kernel (QKernels::depthwise_block), AVX2 + FMA, built with
// -ffp-contract=off (CMakeLists.txt); the AVX-VNNI and AVX-512 tables use it too (VNNI's 4-byte
// dot products do not fit a window of one channel, and the work here is the transposes).
//
// A depthwise layer through the grouped GEMM runs one output channel per row tile (1 of 5-8 rows
// used) on a 1-channel im2col: mobilenet_v2's 17 depthwise layers took 25 of its 34 ms (1 thread,
// Zen 3). Here, as in the f32 kernel (simd/depthwise_blocked.inl), a vector holds one pixel's 8
// channels: the block's u8 planes are byte-transposed into a padded [Hp][Wp][8] plane of floats
// (x XOR flip, widened), and every tap is one aligned load times the tap's 8 weights. The f32
// sums of u8 x s8 products are exact integers for windows of up to qdepthwise_max_taps taps, so
// converting them to int32 gives the GEMM's accumulators. The per-channel part of the epilogue
// (int32 bias, scale, f32 bias) runs on those vectors (a lane is a channel); the values are then
// transposed back to channel-major into a buffer of whole output rows, and the rest (residual,
// clamp, quantize) runs along each channel's buffered values (qepilogue_ymm.h): the scalar
// formula's operations, bit for bit. The block's weights arrive packed as tap-major floats
// (qdepthwise_pack_weight).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/int8.h"
#include "qconv_internal.h"
#include "qepilogue_dispatch.h"
#include "qepilogue_ymm.h"

namespace kiln::kernels::int8 {
namespace {

using detail::Res;
constexpr int kLanes = 8;

// n < 8 bytes at p into the low bytes of a word, the rest zero, or the word's low n bytes to p:
// fixed-size pieces (4, 2, 1) the compiler inlines, where a memcpy of n bytes is a call.
inline uint64_t read_few(const uint8_t* p, int n) {
  uint64_t v = 0;
  int at = 0;
  if (n & 4) {
    uint32_t t;
    std::memcpy(&t, p, 4);
    v = t, at = 4;
  }
  if (n & 2) {
    uint16_t t;
    std::memcpy(&t, p + at, 2);
    v |= static_cast<uint64_t>(t) << (8 * at), at += 2;
  }
  if (n & 1) v |= static_cast<uint64_t>(p[at]) << (8 * at);
  return v;
}
inline void write_few(uint64_t v, int n, uint8_t* p) {
  int at = 0;
  if (n & 4) {
    const auto t = static_cast<uint32_t>(v);
    std::memcpy(p, &t, 4);
    at = 4;
  }
  if (n & 2) {
    const auto t = static_cast<uint16_t>(v >> (8 * at));
    std::memcpy(p + at, &t, 2);
    at += 2;
  }
  if (n & 1) p[at] = static_cast<uint8_t>(v >> (8 * at));
}

// Up to 8 bytes of a row (n of them) into the low half of a vector, the rest zero.
inline __m128i load_bytes(const uint8_t* p, int n) {
  if (n == 8) return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_cvtsi64_si128(static_cast<long long>(read_few(p, n)));
}

// n (<= 8) consecutive input pixels of the block at src (channel c's at src + c * x_plane) as
// 8 vectors of a pixel's 8 channels: 8 rows of 8 bytes transposed in registers (bytes, then
// 16-bit pairs, then 32-bit quads), each pixel's channel bytes widened to floats. Lanes past nc
// hold the flip byte (their weights are zero). Full: n == 8, every load a plain 8-byte one; the
// loops are unrolled so that every register is named (a loop over an array of them went through
// memory).
template <bool Full>
inline void input_group(const uint8_t* src, int64_t x_plane, int nc, int n, __m128i f, __m256 px[kLanes]) {
  __m128i r[kLanes];
#pragma GCC unroll 8
  for (int c = 0; c < kLanes; ++c) {
    __m128i v = _mm_setzero_si128();
    if (c < nc)
      v = Full ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + c * x_plane)) : load_bytes(src + c * x_plane, n);
    r[c] = _mm_xor_si128(v, f);
  }
  const __m128i a0 = _mm_unpacklo_epi8(r[0], r[1]), a1 = _mm_unpacklo_epi8(r[2], r[3]);
  const __m128i a2 = _mm_unpacklo_epi8(r[4], r[5]), a3 = _mm_unpacklo_epi8(r[6], r[7]);
  const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);  // channels 0-3
  const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);  // channels 4-7
  // Pixel p's 8 channel bytes: the low (p even) or high half of d[p / 2].
  const __m128i d[4] = {_mm_unpacklo_epi32(b0, b2), _mm_unpackhi_epi32(b0, b2), _mm_unpacklo_epi32(b1, b3),
                        _mm_unpackhi_epi32(b1, b3)};
#pragma GCC unroll 8
  for (int p = 0; p < kLanes; ++p) {
    const __m128i bytes = p % 2 == 0 ? d[p / 2] : _mm_unpackhi_epi64(d[p / 2], d[p / 2]);
    px[p] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  }
}

// The block's input (the band's g.H rows of g.W pixels per plane) into the padded plane's
// interior. Rows a multiple of 8 wide, or wider than 16, row by row; narrower ones (mobilenet_v2's
// 7 and 14) as one run of H * W pixels, 8 at a time, each stored at its row and column, so that
// they load whole groups instead of a short one per row: the 7x7 and 14x14 layers ran 0.65x and
// 0.85x the time (Zen 3, qconv_bench). Where rows are whole groups, or nearly (28 wide), the
// per-pixel addressing costs more than it saves (the 112-wide layers took 1.2-1.5x).
void input_plane(const DepthwisePlane& g, int64_t Wp, const uint8_t* x, int64_t x_plane, int nc, uint8_t flip,
                 float* plane) {
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  __m256 px[kLanes];
  if (g.W % kLanes == 0 || g.W > 16) {
    for (int64_t h = 0; h < g.H; ++h) {
      float* dst = plane + ((g.pad_top + h) * Wp + g.pad_left) * kLanes;
      const uint8_t* src = x + h * g.W;
      int64_t w0 = 0;
      for (; w0 + kLanes <= g.W; w0 += kLanes) {
        input_group<true>(src + w0, x_plane, nc, kLanes, f, px);
#pragma GCC unroll 8
        for (int p = 0; p < kLanes; ++p) _mm256_store_ps(dst + (w0 + p) * kLanes, px[p]);
      }
      if (w0 == g.W) continue;
      const int n = static_cast<int>(g.W - w0);
      input_group<false>(src + w0, x_plane, nc, n, f, px);
      for (int p = 0; p < n; ++p) _mm256_store_ps(dst + (w0 + p) * kLanes, px[p]);
    }
    return;
  }
  const int64_t total = g.H * g.W;
  int64_t h = 0, w = 0;  // the next pixel's row and column
  auto store = [&](int n) {
    for (int p = 0; p < n; ++p) {
      _mm256_store_ps(plane + ((g.pad_top + h) * Wp + g.pad_left + w) * kLanes, px[p]);
      if (++w == g.W) w = 0, ++h;
    }
  };
  int64_t i = 0;
  for (; i + kLanes <= total; i += kLanes) {
    input_group<true>(x + i, x_plane, nc, kLanes, f, px);
    store(kLanes);
  }
  if (i < total) {
    const int n = static_cast<int>(total - i);
    input_group<false>(x + i, x_plane, nc, n, f, px);
    store(n);
  }
}

// Transposes 8 vectors of 8 floats in place (r[i][j] -> r[j][i]).
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// The per-channel constants of the block, one lane per channel (zero past nc).
struct BlockConsts {
  __m256i bias;
  __m256 scale, bias_f;
  bool has_bias_f;
};

// NP (<= 8) consecutive output pixels of one output row: their window sums (exact integers),
// the per-channel epilogue, then channel-major into vrow (channel c's values at vrow + c * ld,
// 8 floats stored per channel: the caller's row has room past the last pixel). `row` is the
// padded plane at the window's top-left for the first pixel; SW the stride along the row (0:
// g.stride_w); K > 0 a K x K window without dilation, unrolled.
template <int NP, int SW, int K>
inline void block_pixels(const DepthwisePlane& g, int64_t Wp, const float* wb, const float* row, const BlockConsts& bc,
                         float* vrow, int64_t ld) {
  const int64_t step = (SW == 0 ? g.stride_w : SW) * kLanes;
  const int64_t R = K > 0 ? K : g.R, S = K > 0 ? K : g.S, dh = K > 0 ? 1 : g.dil_h, dw = K > 0 ? 1 : g.dil_w;
  __m256 r[kLanes];
#pragma GCC unroll 8
  for (int p = 0; p < kLanes; ++p) r[p] = _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int64_t kh = 0; kh < R; ++kh) {
    const float* in = row + kh * dh * Wp * kLanes;
#pragma GCC unroll 8
    for (int64_t kw = 0; kw < S; ++kw) {
      const __m256 wv = _mm256_load_ps(wb + (kh * S + kw) * kLanes);
      const float* px = in + kw * dw * kLanes;
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) r[p] = _mm256_fmadd_ps(wv, _mm256_load_ps(px + p * step), r[p]);
    }
  }
  // Exact integers: the conversion is exact whatever its rounding mode.
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
    const __m256i a = _mm256_add_epi32(_mm256_cvttps_epi32(r[p]), bc.bias);
    r[p] = bc.has_bias_f ? scaled_lanes8<true>(a, bc.scale, bc.bias_f) : scaled_lanes8<false>(a, bc.scale, bc.bias_f);
  }
  transpose8(r);
#pragma GCC unroll 8
  for (int c = 0; c < kLanes; ++c) _mm256_storeu_ps(vrow + c * ld, r[c]);
}

// Output values buffered per channel before the rest of the epilogue runs along them: whole rows,
// up to this many values (8 channels x 512 floats, 16 KiB: L1-resident), so that small maps
// (7x7, 14x14) finish each channel's plane in one run instead of a ragged run per row.
constexpr int64_t kChunkValues = 512;
inline int64_t chunk_rows(const DepthwisePlane& g) { return std::max<int64_t>(1, kChunkValues / g.OW); }
// The buffer's channel stride: a chunk, plus the 8 floats a group of fewer pixels stores.
inline int64_t chunk_stride(const DepthwisePlane& g) { return (chunk_rows(g) * g.OW + 8 + 7) / 8 * 8; }

// Every output row of the block: pixel groups of 8 (7 when that tiles the row exactly, as in
// the f32 kernel), then the row's remainder, into the channel-major buffer `vbuf`; after each
// chunk of rows, the rest of the epilogue along each channel's values (Fin::run).
template <int SW, int K, class Fin>
void block_rows(const DepthwisePlane& g, int64_t Wp, const float* wb, const float* plane, const BlockConsts& bc,
                float* vbuf, const Fin& fin) {
  const int64_t np = g.OW % 8 != 0 && g.OW % 7 == 0 ? 7 : 8;
  const int64_t step = (SW == 0 ? g.stride_w : SW) * kLanes, ld = chunk_stride(g), rows = chunk_rows(g);
  for (int64_t oh0 = 0; oh0 < g.OH; oh0 += rows) {
    const int64_t oh1 = std::min(g.OH, oh0 + rows);
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const float* row = plane + oh * g.stride_h * Wp * kLanes;
      float* vrow = vbuf + (oh - oh0) * g.OW;
      int64_t ow = 0;
      if (np == 7)
        for (; ow + 7 <= g.OW; ow += 7) block_pixels<7, SW, K>(g, Wp, wb, row + ow * step, bc, vrow + ow, ld);
      else
        for (; ow + 8 <= g.OW; ow += 8) block_pixels<8, SW, K>(g, Wp, wb, row + ow * step, bc, vrow + ow, ld);
      const float* r = row + ow * step;
      float* v = vrow + ow;
      switch (g.OW - ow) {
        case 0: break;
        case 1: block_pixels<1, SW, K>(g, Wp, wb, r, bc, v, ld); break;
        case 2: block_pixels<2, SW, K>(g, Wp, wb, r, bc, v, ld); break;
        case 3: block_pixels<3, SW, K>(g, Wp, wb, r, bc, v, ld); break;
        case 4: block_pixels<4, SW, K>(g, Wp, wb, r, bc, v, ld); break;
        case 5: block_pixels<5, SW, K>(g, Wp, wb, r, bc, v, ld); break;
        case 6: block_pixels<6, SW, K>(g, Wp, wb, r, bc, v, ld); break;
        default: block_pixels<7, SW, K>(g, Wp, wb, r, bc, v, ld); break;
      }
    }
    fin.run(vbuf, ld, oh0 * g.OW, (oh1 - oh0) * g.OW);
  }
}

// The residual, clamp and store of n consecutive output values per channel (from output index
// `at`), 8 at a time; the last n % 8 through buffers (the residual's lanes copied in, the valid
// outputs copied out).
template <QType Out, Res R>
struct FinishRuns {
  const QEpilogue& e;
  const EpiConstsY k;
  int nc;
  void* out;
  int64_t out_plane;
  FinishRuns(const QEpilogue& e_, int nc_, void* out_, int64_t out_plane_)
      : e(e_), k(e_), nc(nc_), out(out_), out_plane(out_plane_) {}
  void run(const float* vbuf, int64_t ld, int64_t at, int64_t n) const {
    const size_t osize = detail::out_size(Out), rsize = detail::res_size(R);
    for (int c = 0; c < nc; ++c) {
      const float* v = vbuf + c * ld;
      char* o = static_cast<char*>(out) + (c * out_plane + at) * osize;
      const char* rp = R == Res::None ? nullptr : static_cast<const char*>(e.residual) + (c * e.ldr + at) * rsize;
      int64_t j = 0;
      for (; j + 8 <= n; j += 8)
        finish_lanes8<Out, R>(k, _mm256_loadu_ps(v + j), R == Res::None ? nullptr : rp + j * rsize, o + j * osize);
      if (j == n) continue;
      const int tail = static_cast<int>(n - j);
      alignas(32) float res_lanes[8] = {}, out_lanes[8];
      if constexpr (R == Res::F32) {
        for (int l = 0; l < tail; ++l) res_lanes[l] = reinterpret_cast<const float*>(rp)[j + l];
      } else if constexpr (R != Res::None) {
        const uint64_t b = read_few(reinterpret_cast<const uint8_t*>(rp + j), tail);
        std::memcpy(res_lanes, &b, 8);
      }
      finish_lanes8<Out, R>(k, _mm256_loadu_ps(v + j), res_lanes, out_lanes);
      if constexpr (Out == QType::F32) {
        for (int l = 0; l < tail; ++l) reinterpret_cast<float*>(o)[j + l] = out_lanes[l];
      } else {
        uint64_t b;
        std::memcpy(&b, out_lanes, 8);
        write_few(b, tail, reinterpret_cast<uint8_t*>(o + j));
      }
    }
  }
};

template <class Fin>
void block_convolve(const DepthwisePlane& g, int64_t Wp, const float* wb, const float* plane, const BlockConsts& bc,
                    float* vbuf, const Fin& fin) {
  // 3x3 and 5x5 windows at stride 1 or 2 unrolled (mobilenet_v2's and efficientnet_b0's).
  const int k = g.R == g.S && g.dil_h == 1 && g.dil_w == 1 && (g.R == 3 || g.R == 5) ? static_cast<int>(g.R) : 0;
  if (g.stride_w == 1 && k == 3) return block_rows<1, 3>(g, Wp, wb, plane, bc, vbuf, fin);
  if (g.stride_w == 2 && k == 3) return block_rows<2, 3>(g, Wp, wb, plane, bc, vbuf, fin);
  if (g.stride_w == 1 && k == 5) return block_rows<1, 5>(g, Wp, wb, plane, bc, vbuf, fin);
  if (g.stride_w == 2 && k == 5) return block_rows<2, 5>(g, Wp, wb, plane, bc, vbuf, fin);
  if (g.stride_w == 1) return block_rows<1, 0>(g, Wp, wb, plane, bc, vbuf, fin);
  if (g.stride_w == 2) return block_rows<2, 0>(g, Wp, wb, plane, bc, vbuf, fin);
  block_rows<0, 0>(g, Wp, wb, plane, bc, vbuf, fin);
}

struct Run {
  const DepthwisePlane& g;
  int64_t Wp;
  const float* wb;
  const float* plane;
  const BlockConsts& bc;
  float* vbuf;
  int nc;
  void* out;
  int64_t out_plane;
};

struct RunBlock {
  template <QType Out, Res R>
  static void call(const QEpilogue* e, const Run* r) {
    block_convolve(r->g, r->Wp, r->wb, r->plane, r->bc, r->vbuf, FinishRuns<Out, R>(*e, r->nc, r->out, r->out_plane));
  }
};

}  // namespace

void detail::qdepthwise_block_avx2(const DepthwisePlane& g, const uint8_t* x, int64_t x_plane, int nc, uint8_t flip,
                                   const float* w, float* scratch, const QEpilogue& e_in, void* out,
                                   int64_t out_plane) {
  const QEpilogue e = e_in;  // a local copy: the output stores could alias the caller's struct
  const DepthwiseBlockScratch sb = depthwise_block_scratch(g, kLanes);
  // The block's packed weights (tap-major floats) at the scratch's aligned start.
  float* wb = scratch;
  std::memcpy(wb, w, static_cast<size_t>(g.R * g.S * kLanes) * sizeof(float));
  float* plane = scratch + sb.plane;
  input_plane(g, sb.Wp, x, x_plane, nc, flip, plane);
  alignas(32) int32_t bias[kLanes] = {};
  alignas(32) float scale[kLanes] = {}, bias_f[kLanes] = {};
  for (int c = 0; c < nc; ++c) {
    bias[c] = e.bias ? e.bias[c] : 0;
    scale[c] = e.scale[c];
    bias_f[c] = e.bias_f ? e.bias_f[c] : 0.f;
  }
  const BlockConsts bc{_mm256_load_si256(reinterpret_cast<const __m256i*>(bias)), _mm256_load_ps(scale),
                       _mm256_load_ps(bias_f), e.bias_f != nullptr};
  thread_local std::vector<float> vbuf;
  const auto vfloats = static_cast<size_t>(kLanes * chunk_stride(g));
  if (vbuf.size() < vfloats) vbuf.resize(vfloats);
  const Run run{g, sb.Wp, wb, plane, bc, vbuf.data(), nc, out, out_plane};
  detail::dispatch_epilogue<RunBlock>(e, &e, &run);
}

}  // namespace kiln::kernels::int8
#endif

// The pixel-major INT8 depthwise kernel (QKernels::depthwise_nhwc), AVX-512, built with
// -ffp-contract=off (CMakeLists.txt). Input and output are [N][H][W][C] bytes
// (Conv2dShape::x_nhwc and y_nhwc, lower/int8_nhwc_layout.cpp), so a vector of 16 lanes holds
// one pixel's 16 consecutive channels as they lie in memory: nothing is transposed, where the
// channel-blocked NCHW kernel (qdepthwise_avx2.cpp) transposes every input and output pixel.
//
// Per (image, block of 16 channels, band of output rows): each input row the band reads is
// widened once into a ring of R * dil_h + stride_h rows of [Wp][16] floats (x XOR flip, the
// padding columns and rows the zero point): the ring of a 3x3 layer on a 112-wide map is 29 KiB,
// L1-resident, where a whole padded plane of floats would not fit L2. Every tap is then one load
// times the tap's 16 weights, 8 output pixels at a time. The f32 sums of u8 x s8 products are
// exact integers for windows of up to qdepthwise_max_taps taps, so their conversion gives the
// GEMM's accumulators, and the epilogue (epilogue_lanes, channels as lanes) requantizes them
// straight into the pixel's 16 output bytes: the scalar formula's bytes.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"
#include "qconv_internal.h"
#include "qepilogue_dispatch.h"
#include "qepilogue_zmm.h"

namespace kiln::kernels::int8 {
namespace {

constexpr int kLanes = 16;

struct Geometry {
  int64_t C, H, W, OH, OW, R, S, sh, sw, dh, dw, pt, pl, Wp, ring;
  explicit Geometry(const Conv2dShape& s)
      : C(s.C), H(s.H), W(s.W), OH(s.out_h()), OW(s.out_w()), R(s.R), S(s.S), sh(s.stride_h), sw(s.stride_w),
        dh(s.dil_h), dw(s.dil_w), pt(s.pad_top), pl(s.pad_left),
        // Wide enough for every window of the output row, whatever the right padding says.
        Wp(std::max(s.pad_left + s.W + s.pad_right, (s.out_w() - 1) * s.stride_w + (s.S - 1) * s.dil_w + 1)),
        // Rows one output row's window spans, plus the stride: the next row's new rows never
        // land on a slot the current window still reads.
        ring((s.R - 1) * s.dil_h + 1 + s.stride_h) {}
};

// The ring slot of input row ih (a padding row when outside [0, H)) as [Wp][16] floats.
struct Ring {
  float* rows;
  int64_t* held;  // g.ring entries: the input row each slot holds (INT64_MIN: none)
  const float* row(const Geometry& g, const uint8_t* x, int nc, uint8_t flip, float pad, int64_t ih) {
    const int64_t slot = ((ih % g.ring) + g.ring) % g.ring;
    float* d = rows + slot * g.Wp * kLanes;
    if (held[slot] == ih) return d;
    held[slot] = ih;
    const __m512 padv = _mm512_set1_ps(pad);
    if (ih < 0 || ih >= g.H) {
      for (int64_t j = 0; j < g.Wp; ++j) _mm512_store_ps(d + j * kLanes, padv);
      return d;
    }
    for (int64_t j = 0; j < g.pl; ++j) _mm512_store_ps(d + j * kLanes, padv);
    for (int64_t j = g.pl + g.W; j < g.Wp; ++j) _mm512_store_ps(d + j * kLanes, padv);
    const __mmask16 m = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
    const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
    const uint8_t* src = x + ih * g.W * g.C;
    float* dst = d + g.pl * kLanes;
    for (int64_t iw = 0; iw < g.W; ++iw) {
      const __m128i b = _mm_xor_si128(_mm_maskz_loadu_epi8(m, src + iw * g.C), f);
      _mm512_store_ps(dst + iw * kLanes, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)));
    }
    return d;
  }
};

// NP (<= 8) output pixels of one row from column ow0: window sums, then the epilogue into each
// pixel's 16 output bytes (or floats) at out + pixel * C, the residual likewise.
// K > 0: a K x K window without dilation and SW the stride along the row, unrolled (3x3 and
// 5x5 at stride 1 or 2: mobilenet_v2's and efficientnet_b0's); K == 0: g's window and stride.
template <QType Out, detail::Res Rs, int NP, int K, int SW>
inline void pixels(const Geometry& g, const float* const* taps_rows, const float* wb, int64_t ow0, const EpiConsts& k,
                   const QEpilogue& e, __m512i bias, __m512 scale, __m512 bf, __mmask16 mask, int64_t p0, void* out) {
  const int64_t R = K > 0 ? K : g.R, S = K > 0 ? K : g.S, dw = K > 0 ? 1 : g.dw, sw = K > 0 ? SW : g.sw;
  __m512 acc[NP];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) acc[p] = _mm512_setzero_ps();
#pragma GCC unroll 5
  for (int64_t kh = 0; kh < R; ++kh) {
    const float* in = taps_rows[kh] + ow0 * sw * kLanes;
#pragma GCC unroll 5
    for (int64_t kw = 0; kw < S; ++kw) {
      const __m512 wv = _mm512_loadu_ps(wb + (kh * S + kw) * kLanes);
      const float* px = in + kw * dw * kLanes;
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[p] = _mm512_fmadd_ps(wv, _mm512_load_ps(px + p * sw * kLanes), acc[p]);
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
    // Exact integers: the conversion is exact whatever its rounding mode.
    const __m512i a = _mm512_add_epi32(_mm512_cvttps_epi32(acc[p]), bias);
    const int64_t at = (p0 + p) * g.C;
    const void* rp = Rs == detail::Res::None ? nullptr
                                             : static_cast<const char*>(e.residual) + at * detail::res_size(Rs);
    epilogue_lanes<Out, Rs>(k, a, scale, e.bias_f, bf, rp, static_cast<char*>(out) + at * detail::out_size(Out), mask);
  }
}

// One output row of the item: groups of 8 pixels (7 when that tiles the row exactly: 7- and
// 14-wide maps), then the rest as one group. A pixel's taps are a chain of dependent FMAs, so
// the pixels of a group are what keeps the FMA units busy (one at a time, 7x7 layers took 2x
// the time of the NCHW kernel).
template <QType Out, detail::Res Rs, int K, int SW>
void output_row(const Geometry& g, const float* const* tr, const float* wb, const EpiConsts& k, const QEpilogue& en,
                __m512i bias, __m512 scale, __m512 bf, __mmask16 mask, int64_t p0, void* yn) {
  const int64_t np = g.OW % 8 != 0 && g.OW % 7 == 0 ? 7 : 8;
  int64_t ow = 0;
  if (np == 7)
    for (; ow + 7 <= g.OW; ow += 7) pixels<Out, Rs, 7, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn);
  else
    for (; ow + 8 <= g.OW; ow += 8) pixels<Out, Rs, 8, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn);
  switch (g.OW - ow) {
    case 0: break;
    case 1: pixels<Out, Rs, 1, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
    case 2: pixels<Out, Rs, 2, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
    case 3: pixels<Out, Rs, 3, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
    case 4: pixels<Out, Rs, 4, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
    case 5: pixels<Out, Rs, 5, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
    case 6: pixels<Out, Rs, 6, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
    default: pixels<Out, Rs, 7, K, SW>(g, tr, wb, ow, k, en, bias, scale, bf, mask, p0 + ow, yn); break;
  }
}

struct Args {
  const Conv2dShape* s;
  const uint8_t* x;
  uint8_t flip, pad;
  const float* w16;  // qconv_pack_weight's blocks of 16 channels, [RS][16] each
  void* y;
  int threads;
};

template <QType Out, detail::Res Rs, int K, int SW>
void run(const QEpilogue& e, const Args& a) {
  const Geometry g(*a.s);
  const int64_t blocks = detail::ceil_div(g.C, kLanes), RS = g.R * g.S;
  // Bands of output rows: as few as leave about 4 items per thread (each band widens its first
  // window's rows again); items band-major, so threads mostly write whole pixel rows.
  const int threads = threads_for_work(static_cast<double>(a.s->N) * g.C * g.OH * g.OW * RS, a.threads);
  const int64_t bands = std::min(g.OH, std::max<int64_t>(1, detail::ceil_div(4 * threads, a.s->N * blocks)));
  const int64_t band = detail::ceil_div(g.OH, bands), items = a.s->N * bands * blocks;
  const size_t osize = detail::out_size(Out), rsize = detail::res_size(Rs);
  parallel_for(items, threads, [&](int64_t ib, int64_t ie) {
    // The thread's ring, slot tags and window rows, kept from run to run: no allocation once warm.
    thread_local std::vector<float> store;
    thread_local std::vector<int64_t> held;
    thread_local std::vector<const float*> taps_rows;
    const size_t need = static_cast<size_t>(g.ring * g.Wp * kLanes + 16);
    if (store.size() < need) store.resize(need);
    if (held.size() < static_cast<size_t>(g.ring)) held.resize(static_cast<size_t>(g.ring));
    if (taps_rows.size() < static_cast<size_t>(g.R)) taps_rows.resize(static_cast<size_t>(g.R));
    float* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(store.data()) + 63) & ~uintptr_t{63});
    Ring ring{base, held.data()};
    const EpiConsts k(e);
    for (int64_t item = ib; item < ie; ++item) {
      const int64_t n = item / (bands * blocks), bi = item / blocks % bands, cb = item % blocks;
      const int64_t c0 = cb * kLanes;
      const int nc = static_cast<int>(std::min<int64_t>(kLanes, g.C - c0));
      const __mmask16 mask = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
      const float* wb = a.w16 + cb * RS * kLanes;
      const __m512i bias = e.bias ? _mm512_maskz_loadu_epi32(mask, e.bias + c0) : _mm512_setzero_si512();
      const __m512 scale = _mm512_maskz_loadu_ps(mask, e.scale + c0);
      const __m512 bf = e.bias_f ? _mm512_maskz_loadu_ps(mask, e.bias_f + c0) : _mm512_setzero_ps();
      std::fill(held.begin(), held.begin() + g.ring, INT64_MIN);
      const uint8_t* xn = a.x + n * g.H * g.W * g.C + c0;
      QEpilogue en = e;  // the image's residual, from channel c0
      if (Rs != detail::Res::None)
        en.residual = static_cast<const char*>(e.residual) + (n * g.OH * g.OW * g.C + c0) * rsize;
      void* yn = static_cast<char*>(a.y) + (n * g.OH * g.OW * g.C + c0) * osize;
      for (int64_t oh = bi * band; oh < std::min(g.OH, (bi + 1) * band); ++oh) {
        for (int64_t kh = 0; kh < g.R; ++kh)
          taps_rows[static_cast<size_t>(kh)] =
              ring.row(g, xn, nc, a.flip, static_cast<float>(a.pad), oh * g.sh - g.pt + kh * g.dh);
        output_row<Out, Rs, K, SW>(g, taps_rows.data(), wb, k, en, bias, scale, bf, mask, oh * g.OW, yn);
      }
    }
  });
}

struct Depthwise {
  template <QType Out, detail::Res Rs>
  static void call(const QEpilogue* ep, const Args* a) {
    const Conv2dShape& s = *a->s;
    const int k = s.R == s.S && s.dil_h == 1 && s.dil_w == 1 && (s.R == 3 || s.R == 5) ? static_cast<int>(s.R) : 0;
    if (k == 3 && s.stride_w == 1) return run<Out, Rs, 3, 1>(*ep, *a);
    if (k == 3 && s.stride_w == 2) return run<Out, Rs, 3, 2>(*ep, *a);
    if (k == 5 && s.stride_w == 1) return run<Out, Rs, 5, 1>(*ep, *a);
    if (k == 5 && s.stride_w == 2) return run<Out, Rs, 5, 2>(*ep, *a);
    run<Out, Rs, 0, 0>(*ep, *a);
  }
};

}  // namespace

void detail::qdepthwise_nhwc_avx512(const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                                    const float* packed_w, const QEpilogue& e_in, void* y, int threads) {
  const QEpilogue e = e_in;  // a local copy: the output stores could alias the caller's struct
  const Args a{&s, x, flip, pad, packed_w, y, std::max(1, threads <= 0 ? default_threads() : threads)};  // packed_w: 16-channel blocks
  detail::dispatch_epilogue<Depthwise>(e, &e, &a);
}

}  // namespace kiln::kernels::int8

// The depthwise kernel on 16-channel blocks (depthwise_wide.h): compiled with the AVX-512 flags
// (CMakeLists.txt), reached only where depthwise_wide_unsupported said the table is AVX-512.
//
// The block's input rows that the call's output rows read are first copied into a zero-bordered
// plane (its padding zeros, rows above or below the image zero rows): every output pixel's window
// is then whole, and a row runs as runs of 8 output pixels (8 accumulators) with no border cases.
// For 3x3 and 5x5 windows without dilation each window row's input vectors are loaded once and
// used by every tap and pixel that reads them (10 loads for 24 FMAs at stride 1, 17 at stride 2).
// A row's last run takes the pixels left (1-7). The planes are small (input rows of up to 16
// pixels: depthwise_wide_unsupported), so the copy stays in L1.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "../depthwise_wide.h"
#include "simd/vec_avx512.h"

namespace kiln::kernels::depthwise_wide_avx512 {
using V = simd::Vec512;
using namespace simd;
using detail::kDepthwiseWideMaxTaps;
#include "simd/vecmath.inl"
#include "simd/fetch_lines.inl"

constexpr int64_t kB = 16;  // channels per block: a vector
constexpr int kRun = 8;     // output pixels a run: 8 accumulators

// The sums of P output pixels whose window rows start at rows[kh] (a padded row, at the run's
// first pixel's window) into acc: taps from zero, row by row, left to right. K > 0: a K x K
// window without dilation and SW the stride (the input vectors loaded once a row); else any.
template <int P, int K, int SW>
[[gnu::always_inline]] inline void run_sums(const float* const* rows, const float* wv, int64_t R, int64_t S,
                                            int64_t sw, int64_t dw, V (&acc)[P]) {
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) acc[p] = V::zero();
  if constexpr (K > 0) {
    constexpr int kLoads = (P - 1) * SW + K;
#pragma GCC unroll 5
    for (int kh = 0; kh < K; ++kh) {
      const float* r = rows[kh];
      V v[kLoads];
#pragma GCC unroll 32
      for (int j = 0; j < kLoads; ++j) v[j] = V::load(r + j * kB);
#pragma GCC unroll 5
      for (int kw = 0; kw < K; ++kw) {
        const V w = V::load(wv + (kh * K + kw) * kB);
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) acc[p] = fma(w, v[p * SW + kw], acc[p]);
      }
    }
  } else {
    for (int64_t kh = 0; kh < R; ++kh) {
      const float* r = rows[kh];
      for (int64_t kw = 0; kw < S; ++kw) {
        const V w = V::load(wv + (kh * S + kw) * kB);
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) acc[p] = fma(w, V::load(r + (p * sw + kw * dw) * kB), acc[p]);
      }
    }
  }
}

struct Finish {
  V alpha, bias, act_a, act_b;
  const float* residual;  // at the block's plane
};

// P pixels' sums (acc) into the output from pixel `pix` on: fma(sum, alpha, bias), the
// residual, the activation.
template <Act A, int P>
[[gnu::always_inline]] inline void finish(const V (&acc)[P], const Finish& fin, float* y, int64_t pix) {
  const Finish f = fin;  // in registers: read through the reference, each store (which may alias it) reloaded it
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    V out = fma(acc[p], f.alpha, f.bias);
    if (f.residual) out = out + V::load(f.residual + (pix + p) * kB);
    activate<A>(out, f.act_a, f.act_b).store(y + (pix + p) * kB);
  }
}

// n vectors from src to dst (a few dozen: a call to memmove cost more than the copy).
[[gnu::always_inline]] inline void copy_vectors(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) V::load(src + i * kB).store(dst + i * kB);
}
[[gnu::always_inline]] inline void zero_vectors(float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) V::zero().store(dst + i * kB);
}

// rows[kh]: window row kh's padded row at the row's first window (its column -pad_left).
template <Act A, int P, int K, int SW>
[[gnu::always_inline]] inline void run(const float* const* rows, int64_t ow, const float* wv, const DepthwisePlane& g,
                                       const Finish& f, float* y, int64_t pix) {
  const float* at[kDepthwiseWideMaxTaps];
  for (int64_t kh = 0; kh < g.R; ++kh) at[kh] = rows[kh] + ow * g.stride_w * kB;
  V acc[P];
  run_sums<P, K, SW>(at, wv, g.R, g.S, g.stride_w, g.dil_w, acc);
  finish<A, P>(acc, f, y, pix);
}

// fn(std::integral_constant<int, n>) for a run of n pixels, 1 <= n <= kRun: a row's last run with
// its count known at compile time.
template <class F>
[[gnu::always_inline]] inline void with_run_count(int64_t n, F&& fn) {
  switch (n) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 3: return fn(std::integral_constant<int, 3>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 5: return fn(std::integral_constant<int, 5>{});
    case 6: return fn(std::integral_constant<int, 6>{});
    case 7: return fn(std::integral_constant<int, 7>{});
    default: return fn(std::integral_constant<int, kRun>{});
  }
}

// One output row: full runs, then the rest as one run of P < 8.
template <Act A, int K, int SW>
void row_runs(const float* const* w, const float* wv, const DepthwisePlane& g, const Finish& f, float* y, int64_t oh) {
  const int64_t pix = oh * g.OW;
  int64_t ow = 0;
  for (; ow + kRun <= g.OW; ow += kRun) run<A, kRun, K, SW>(w, ow, wv, g, f, y, pix + ow);
  if (ow < g.OW)
    with_run_count(g.OW - ow, [&](auto p) { run<A, decltype(p)::value, K, SW>(w, ow, wv, g, f, y, pix + ow); });
}
using RowFn = void (*)(const float* const*, const float*, const DepthwisePlane&, const Finish&, float*, int64_t);

template <Act A>
RowFn row_fn(const DepthwisePlane& g) {
  const bool plain = g.dil_h == 1 && g.dil_w == 1 && g.R == g.S;
  if (plain && g.R == 3 && g.stride_w == 1) return row_runs<A, 3, 1>;
  if (plain && g.R == 3 && g.stride_w == 2) return row_runs<A, 3, 2>;
  if (plain && g.R == 5 && g.stride_w == 1) return row_runs<A, 5, 1>;
  if (plain && g.R == 5 && g.stride_w == 2) return row_runs<A, 5, 2>;
  return row_runs<A, 0, 0>;
}

RowFn row_fn(const DepthwisePlane& g, Act a) {
  RowFn fn = nullptr;
  with_act(a, [&]<Act A>() { fn = row_fn<A>(g); });
  return fn;
}

// The block's RS tap vectors into wv: channels 0-7 from the first 8-channel block's pair copy,
// 8-15 from the second's (the low half of each tap's 16 floats). The next block's weights (the
// two pair copies that follow: one run of lines) are fetched into L1 meanwhile: without it each
// block's weights came from L3 on every run of a model and held up these loads (two fifths of
// depthwise_wide_rows_avx512's time in mobilenet_v2, kiln bench under perf). (Past the last
// block these are lines the packed weight does not have; a prefetch there faults nothing.)
inline void tap_vectors(const float* pair_w, int64_t RS, float* wv) {
  const float* next_w = pair_w + 2 * RS * kB;
  for (int64_t i = 0; i < 2 * RS * kB; i += 16) _mm_prefetch(reinterpret_cast<const char*>(next_w + i), _MM_HINT_T0);
  for (int64_t t = 0; t < RS; ++t) {
    const __m512 v = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(pair_w + t * kB)),
                                        _mm256_loadu_ps(pair_w + (RS + t) * kB), 1);
    _mm512_store_ps(wv + t * kB, v);
  }
}

// depthwise_wide_in_place_avx512's rows: groups of kRun output pixels of a row read in place,
// each window row's input vectors loaded once a group (LEFT: the group at ow 0, its taps left of
// the row zeros known at compile time; CHECKED: taps outside the row found at run time). The
// sums in the 8-channel kernels' order: window rows outside the plane skipped, taps outside a row
// adding zeros (depthwise_halves in simd/depthwise_blocked.inl).
// OUT16: the output in 16-channel blocks at y_lo ([OH][OW][16]), else its halves at y_lo and y_hi.
template <Act A, int K, int S, bool OUT16>
void in_place_rows(const DepthwisePlane& g, const float* x, const float* wv, float* y_lo, float* y_hi,
                   const Finish& fin, bool fetch_for_write) {
  constexpr int kPad = K / 2;
  const Finish f = fin;
  const int64_t W = g.W, OW = g.OW;
  // The pixels whose taps all lie in the row: S ow - kPad + K - 1 < W.
  const int64_t inner_end = std::min<int64_t>(OW, (W - K + kPad) / S + 1);
  auto fetch_row = [&](int64_t oh) {
    if (!fetch_for_write || oh >= g.OH) return;
    constexpr int64_t kOut = OUT16 ? kB : 8;  // floats a pixel in each output plane
    fetch_lines_for_write(y_lo + oh * OW * kOut, OW * kOut);
    if (!OUT16) fetch_lines_for_write(y_hi + oh * OW * kOut, OW * kOut);
  };
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    if (oh == 0) fetch_row(0);
    fetch_row(oh + 1);
    const int64_t top = oh * S - g.pad_top;
    const int kh0 = top < 0 ? static_cast<int>(-top) : 0;
    const int kh1 = top + K > g.H ? static_cast<int>(g.H - top) : K;
    auto group = [&](auto np_count, auto left, auto checked, int64_t ow0) __attribute__((always_inline)) {
      constexpr int NP = decltype(np_count)::value;
      constexpr bool LEFT = decltype(left)::value, CHECKED = decltype(checked)::value;
      constexpr int NIN = S * (NP - 1) + K;
      V acc[NP];
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[p] = V::zero();
      for (int kh = kh0; kh < kh1; ++kh) {
        const float* row = x + (top + kh) * W * kB;
        V in[NIN];
#pragma GCC unroll 24
        for (int i = 0; i < NIN; ++i) {
          const int64_t j = S * (LEFT ? 0 : ow0) - kPad + i;
          const bool outside = (LEFT && i < kPad) || (CHECKED && (j < 0 || j >= W));
          in[i] = outside ? V::zero() : V::load(row + j * kB);
        }
#pragma GCC unroll 5
        for (int kw = 0; kw < K; ++kw) {
          const V w = V::load(wv + (kh * K + kw) * kB);
#pragma GCC unroll 8
          for (int p = 0; p < NP; ++p) acc[p] = fma(w, in[S * p + kw], acc[p]);
        }
      }
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        const V out = activate<A>(fma(acc[p], f.alpha, f.bias), f.act_a, f.act_b);
        if constexpr (OUT16) {
          out.store(y_lo + (oh * OW + ow0 + p) * kB);
        } else {
          const int64_t at = (oh * OW + ow0 + p) * 8;
          _mm256_storeu_ps(y_lo + at, _mm512_castps512_ps256(out.v));
          _mm256_storeu_ps(y_hi + at, _mm512_extractf32x8_ps(out.v, 1));
        }
      }
    };
    using Full = std::integral_constant<int, kRun>;
    using Yes = std::true_type;
    using No = std::false_type;
    int64_t ow = 0;
    if (kRun <= inner_end) group(Full{}, Yes{}, No{}, 0), ow = kRun;
    for (; ow > 0 && ow + kRun <= inner_end; ow += kRun) group(Full{}, No{}, No{}, ow);
    while (ow < OW) {
      const int64_t n = std::min<int64_t>(OW - ow, kRun);
      with_run_count(n, [&](auto np) { group(np, No{}, Yes{}, ow); });
      ow += n;
    }
  }
}

}  // namespace kiln::kernels::depthwise_wide_avx512

namespace kiln::kernels::detail {

void depthwise_wide_rows_avx512(const DepthwisePlane& g, const float* x, const float* pair_w, float* y, int64_t oh0,
                                int64_t oh1, const DepthwiseWideOut& e) {
  using namespace depthwise_wide_avx512;
  const int64_t RS = g.R * g.S;
  alignas(64) float wv[kDepthwiseWideMaxTaps * kB];
  tap_vectors(pair_w, RS, wv);
  const Finish f{V::set1(e.alpha), e.bias ? V::load(e.bias) : V::zero(), V::set1(e.act_alpha), V::set1(e.act_beta),
                 e.residual};
  // The padded plane of input rows [ih0, ih1): those the output rows [oh0, oh1) read.
  const RowFn row = row_fn(g, e.act);
  const int64_t Wp = std::max(g.pad_left + g.W, (g.OW - 1) * g.stride_w + (g.S - 1) * g.dil_w + 1);
  const int64_t ih0 = oh0 * g.stride_h - g.pad_top, ih1 = (oh1 - 1) * g.stride_h - g.pad_top + (g.R - 1) * g.dil_h + 1;
  // The plane lives in this thread's buffer, whose borders (the padding columns, the rows outside
  // the image) are zeroed only when the layout differs from the last call's on this thread: the
  // blocks of a call share it, and only their rows inside the image are copied. (Zeroing each
  // block's borders and copying its rows up front took about a quarter of the kernel's time on
  // 14x14 planes, most of it waiting on L2.)
  struct Layout {
    const float* plane;
    int64_t Wp, ih0, ih1, H, W, pad_left;
    bool operator==(const Layout&) const = default;
  };
  thread_local std::vector<float> plane_store;
  thread_local Layout zeroed{};
  const size_t need = static_cast<size_t>((ih1 - ih0) * Wp * kB + kB);
  if (plane_store.size() < need) plane_store.resize(need);
  float* const plane = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(plane_store.data()) + 63) & ~uintptr_t{63});
  const Layout layout{plane, Wp, ih0, ih1, g.H, g.W, g.pad_left};
  if (!(zeroed == layout)) {
    zero_vectors(plane, (ih1 - ih0) * Wp);
    zeroed = layout;
  }
  // Input rows are copied as the output rows first need them, each fetching the row after it
  // into L1, so that the copies' reads from L2 overlap the FMAs of the rows before (copied all
  // at once up front, the block's input was a fifth of the kernel's time, waiting on L2).
  int64_t copied = std::max<int64_t>(ih0, 0);  // input rows [ih0, copied) are in the plane
  const int64_t last = std::min(ih1, g.H);
  const float* rows[kDepthwiseWideMaxTaps];
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t top = oh * g.stride_h - g.pad_top;
    for (const int64_t need = std::min(top + (g.R - 1) * g.dil_h + 1, last); copied < need; ++copied) {
      const float* src = x + copied * g.W * kB;
      if (copied + 1 < last)
        for (int64_t i = 0; i < g.W; ++i) _mm_prefetch(reinterpret_cast<const char*>(src + (g.W + i) * kB), _MM_HINT_T0);
      copy_vectors(src, plane + ((copied - ih0) * Wp + g.pad_left) * kB, g.W);
    }
    for (int64_t kh = 0; kh < g.R; ++kh) rows[kh] = plane + (top + kh * g.dil_h - ih0) * Wp * kB;
    row(rows, wv, g, f, y, oh);
  }
}

void depthwise_wide_in_place_avx512(const DepthwisePlane& g, const float* x, const float* pair_w, float* y_lo,
                                    float* y_hi, const DepthwiseWideOut& e, bool fetch_for_write) {
  using namespace depthwise_wide_avx512;
  // The callers checked depthwise_wide_in_place_supports and that there is no residual (no
  // KILN_CHECK here: kiln::Error's inline members must not be emitted with the AVX-512 flags,
  // build.isa_objects_share_no_kiln_symbols).
  alignas(64) float wv[kDepthwiseWideMaxTaps * kB];
  tap_vectors(pair_w, g.R * g.S, wv);
  const Finish f{V::set1(e.alpha), e.bias ? V::load(e.bias) : V::zero(), V::set1(e.act_alpha), V::set1(e.act_beta),
                 nullptr};
  auto rows = [&]<Act A, bool OUT16>() {
    if (g.R == 3 && g.stride_w == 1) in_place_rows<A, 3, 1, OUT16>(g, x, wv, y_lo, y_hi, f, fetch_for_write);
    else if (g.R == 3) in_place_rows<A, 3, 2, OUT16>(g, x, wv, y_lo, y_hi, f, fetch_for_write);
    else if (g.stride_w == 1) in_place_rows<A, 5, 1, OUT16>(g, x, wv, y_lo, y_hi, f, fetch_for_write);
    else in_place_rows<A, 5, 2, OUT16>(g, x, wv, y_lo, y_hi, f, fetch_for_write);
  };
  with_act(e.act, [&]<Act A>() {
    if (y_hi) rows.template operator()<A, false>();
    else rows.template operator()<A, true>();
  });
}

}  // namespace kiln::kernels::detail

// Pooling on the stride-phase planes of conv_phase.h (pool.h): per (image, channel) plane the
// padded phase planes go into this thread's workspace slot (padding -inf for max, 0 for the
// average), the table's max_grid / depthwise_grid (all weights 1) computes the output grid, and
// the grid is compacted into the output with the 1/count scale.
#include "kiln/kernels/pool.h"

#include <algorithm>
#include <limits>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "conv_phase.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

// Small planes cost more in per-plane set-up than in pooling (digits_cnn: 8x8). When windows
// tile the rows exactly (no vertical padding or dilation, R == stride_h, H a multiple of it),
// G consecutive planes stacked are one plane of G*H rows with the same outputs: pool that.
constexpr int64_t kMinGridFloats = 2048;
struct Stacking {
  int64_t planes_per_unit = 1;
  Conv2dShape unit;  // the shape of one unit (N = C = 1)
};
Stacking stacking(const Conv2dShape& s) {
  Stacking st;
  st.unit = s;
  st.unit.N = 1, st.unit.C = st.unit.K = st.unit.group = 1;
  const bool tiles_rows = s.pad_top == 0 && s.pad_bottom == 0 && s.dil_h == 1 && s.R == s.stride_h && s.H % s.R == 0;
  const int64_t grid = s.out_h() * s.out_w();
  if (tiles_rows && grid < kMinGridFloats) {
    st.planes_per_unit = std::min<int64_t>(s.N * s.C, kMinGridFloats / std::max<int64_t>(grid, 1));
    st.unit.H = s.H * st.planes_per_unit;
  }
  return st;
}

size_t slot_floats(const Conv2dShape& s) {
  const detail::PhaseGeometry g = detail::phase_geometry(stacking(s).unit);
  return static_cast<size_t>(g.per_channel + g.grid);
}

// Taps of window position o in one dim that land inside [0, in): the average's divisor.
int64_t inside_taps(int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t k, int64_t in) {
  int64_t n = 0;
  for (int64_t t = 0; t < k; ++t) {
    const int64_t i = o * stride - pad + t * dil;
    n += i >= 0 && i < in;
  }
  return n;
}

// 2x2 windows at stride 2, unpadded, undilated (the usual max pool after a small conv): each
// output row is the pairwise maximum of two input rows. Through the phase planes this costs
// a strided row copy per 2-float phase row, which on 8x8 planes (digits_cnn) dominated: 2.2 ms
// for 3.7 MB.
bool is_plain_2x2(const Conv2dShape& s) {
  return s.R == 2 && s.S == 2 && s.stride_h == 2 && s.stride_w == 2 && s.dil_h == 1 && s.dil_w == 1 && !s.pad_top &&
         !s.pad_left && !s.pad_bottom && !s.pad_right;
}

// Output rows [r0, r1) of all planes as one stack (row r: plane r / OH, row r % OH). The
// comparisons keep max_grid's order and its NaN rule (acc > tap ? acc : tap).
void max_pool_2x2_rows(const Conv2dShape& s, const float* x, float* y, int64_t r0, int64_t r1) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  for (int64_t r = r0; r < r1; ++r) {
    const float* a = x + (r / OH) * s.H * s.W + (r % OH) * 2 * s.W;
    const float* b = a + s.W;
    float* o = y + r * OW;
    for (int64_t j = 0; j < OW; ++j) {
      float m = a[2 * j];
      m = m > a[2 * j + 1] ? m : a[2 * j + 1];
      m = m > b[2 * j] ? m : b[2 * j];
      o[j] = m > b[2 * j + 1] ? m : b[2 * j + 1];
    }
  }
}

// 3x3 windows at stride 2, undilated, padding up to 2 (resnet's max pool after the stem, 112x112
// -> 56x56 over 64 planes): the table's row kernel reads the input rows in place. Through the
// phase planes (a padded, deinterleaved copy, the grid, then its compaction) it took 0.40 ms
// on Zen 3 against onnxruntime's 0.13; in place, 0.36 with the border windows taking a quarter
// of it as generic bounds-checked windows; clamped to inside taps, 0.30. With the border
// columns and the row's tail inside the table's row kernel (a vertical maximum, then the
// horizontal one), 230 -> 125 us on Zen 5 (conv_bench MaxPool, one thread).
bool is_3x3_stride2(const Conv2dShape& s) {
  return s.R == 3 && s.S == 3 && s.stride_h == 2 && s.stride_w == 2 && s.dil_h == 1 && s.dil_w == 1 &&
         std::max({s.pad_top, s.pad_bottom, s.pad_left, s.pad_right}) <= 2;
}

// Output rows [h0, h1) of planes [p0, p1). A window's padding taps read its nearest inside tap
// instead of -inf: the same maximum (with padding up to 2, every window holds an inside tap),
// though with a NaN in the window which value wins can differ from max_grid's order.
void max_pool_3x3s2_rows(const KernelTable& t, const Conv2dShape& s, const float* x, float* y, int64_t p0,
                         int64_t p1, int64_t h0, int64_t h1) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t r = h0; r < h1; ++r) {
      const float* plane = x + p * s.H * s.W;
      const int64_t ih = r * 2 - s.pad_top;
      const float* rows[3];
      for (int i = 0; i < 3; ++i) rows[i] = plane + std::clamp<int64_t>(ih + i, 0, s.H - 1) * s.W;
      t.max_pool_3x3s2_row(rows, OW, s.W, s.pad_left, y + (p * OH + r) * OW);
    }
}

}  // namespace

bool pool2d_runs_rows(PoolKind kind, const Conv2dShape& s) {
  return kind == PoolKind::Max && (is_plain_2x2(s) || is_3x3_stride2(s));
}

size_t pool2d_workspace_floats_on(const KernelTable&, const Conv2dShape& s, int threads) {
  if (threads <= 0) threads = default_threads();
  return static_cast<size_t>(threads) * slot_floats(s);
}

void pool2d_on(const KernelTable& t, PoolKind kind, const Conv2dShape& s, bool count_include_pad, const float* x,
               float* y, float* workspace, int threads) {
  std::string bad = conv_tactic_unsupported(ConvTactic::Depthwise, s);
  KILN_CHECK(bad.empty(), "pool2d: ", bad);
  if (threads <= 0) threads = default_threads();
  if (kind == PoolKind::Max && is_plain_2x2(s)) {
    const int64_t rows = s.N * s.C * s.out_h();
    parallel_for(rows, threads_for_work(static_cast<double>(rows) * s.out_w() * 4, threads),
                 [&](int64_t r0, int64_t r1) { max_pool_2x2_rows(s, x, y, r0, r1); });
    return;
  }
  if (kind == PoolKind::Max && is_3x3_stride2(s)) {
    const int64_t planes = s.N * s.C, OH = s.out_h();
    threads = threads_for_work(static_cast<double>(planes * OH) * s.out_w() * 9, threads);
    // Each thread takes the same band of rows in every plane, not a share of the planes: the
    // convolution before it wrote its output that way (a band of pixels per thread, all
    // channels; conv_direct.cpp), and so does the one after it read its input. By planes, half
    // of each thread's input came from the other core: resnet18's pool (64 x 112 x 112) 125 ->
    // 150 us at 2 threads once the stem went direct; by bands, median 96 against 104 us over 5
    // pairs (kiln profile).
    if (threads > 1 && OH >= 2 * threads)
      parallel_for(OH, threads, [&](int64_t h0, int64_t h1) { max_pool_3x3s2_rows(t, s, x, y, 0, planes, h0, h1); });
    else
      parallel_for(planes, threads, [&](int64_t p0, int64_t p1) { max_pool_3x3s2_rows(t, s, x, y, p0, p1, 0, OH); });
    return;
  }
  const Stacking stack = stacking(s);
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.N * s.C, RS = s.R * s.S, G = stack.planes_per_unit;
  const int64_t units = (planes + G - 1) / G;
  const size_t slot = slot_floats(s);
  const bool is_max = kind == PoolKind::Max;
  const float pad = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
  // Without padding every window holds R*S inputs; otherwise an average that leaves padding
  // out divides each output by its own count of inside taps.
  const bool padded = s.padded();
  const bool per_position = !is_max && !count_include_pad && padded;
  threads = threads_for_work(static_cast<double>(planes) * OH * OW * RS, threads);
  auto run_units = [&](int64_t b, int64_t e, int64_t part) {
    thread_local std::vector<float> own;
    thread_local std::vector<const float*> taps;
    thread_local std::vector<float> ones;
    float* phases;
    if (workspace) {
      phases = workspace + part * slot;
    } else {
      if (own.size() < slot) own.resize(slot);
      phases = own.data();
    }
    for (int64_t u = b; u < e; ++u) {
      // The last unit may hold fewer planes: its own (shorter) geometry.
      Conv2dShape us = stack.unit;
      const int64_t first = u * G, count = std::min(G, planes - first);
      us.H = s.H * count;
      const detail::PhaseGeometry geo = detail::phase_geometry(us);
      float* grid = phases + geo.per_channel;
      if (u == b || count != G) {
        taps.resize(RS);
        ones.assign(RS, 1.f);
        for (int64_t q = 0; q < RS; ++q) taps[q] = detail::phase_row(us, geo, phases, 1, q);
        std::fill(phases, phases + geo.per_channel, pad);
      }
      detail::build_phase_planes(t, us, geo, x + first * s.H * s.W, 1, phases, /*borders_filled=*/true, pad);
      const int64_t UH = OH * count;  // output rows of the unit
      float* out = y + first * OH * OW;
      float* g = geo.compact ? grid : out;
      if (is_max) t.max_grid(taps.data(), RS, geo.grid, g);
      else t.depthwise_grid(taps.data(), ones.data(), RS, geo.grid, g);
      TileEpilogue te;
      if (!is_max && !per_position) te.alpha = 1.f / static_cast<float>(RS);
      if (geo.compact) t.epilogue_copy(g, geo.Wg, out, OW, UH, OW, te);
      else if (te.alpha != 1.f) t.epilogue_tile(out, OW, UH, OW, te);
      if (per_position)
        for (int64_t i = 0; i < UH; ++i)
          for (int64_t j = 0; j < OW; ++j)
            out[i * OW + j] /= static_cast<float>(inside_taps(i % OH, s.stride_h, s.pad_top, s.dil_h, s.R, s.H) *
                                                  inside_taps(j, s.stride_w, s.pad_left, s.dil_w, s.S, s.W));
    }
  };
  // One contiguous range of units per part; part i uses workspace slot i.
  const int64_t parts = std::min<int64_t>(threads, units);
  parallel_for(parts, static_cast<int>(parts), [&](int64_t pb, int64_t pe) {
    for (int64_t part = pb; part < pe; ++part) run_units(units * part / parts, units * (part + 1) / parts, part);
  });
}

void global_average_pool_on(const KernelTable& t, const float* x, int64_t planes, int64_t size, float* y,
                            int threads) {
  if (threads <= 0) threads = default_threads();
  const double count = static_cast<double>(size);
  parallel_for(planes, threads_for_pass(static_cast<double>(planes) * size, threads), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) y[p] = static_cast<float>(t.sum_row(x + p * size, size) / count);
  });
}

namespace {

// The plain 2x2 stride-2 window (digits_cnn's and VGG's pools): per lane the max of two pixels
// of two rows, without the general path's padded row and its two table calls a row, which
// for digits_cnn's 4-pixel output rows cost more than the maxima.
bool plain_2x2(const Conv2dShape& s) {
  return s.R == 2 && s.S == 2 && s.stride_h == 2 && s.stride_w == 2 && s.dil_h == 1 && s.dil_w == 1 && !s.padded() &&
         2 * s.out_h() <= s.H && 2 * s.out_w() <= s.W;
}

void max_2x2_row(const float* r0, const float* r1, int64_t OW, float* out) {
  constexpr int64_t B = kConvBlock;
  for (int64_t ow = 0; ow < OW; ++ow, r0 += 2 * B, r1 += 2 * B, out += B) {
    int64_t l = 0;
#if defined(__SSE2__)
    // Four lanes a step (the build's -O2 left the loop scalar: out may alias the rows for it).
    for (; l < B; l += 4)
      _mm_storeu_ps(out + l, _mm_max_ps(_mm_max_ps(_mm_loadu_ps(r0 + l), _mm_loadu_ps(r0 + B + l)),
                                        _mm_max_ps(_mm_loadu_ps(r1 + l), _mm_loadu_ps(r1 + B + l))));
#endif
    for (; l < B; ++l) out[l] = std::max(std::max(r0[l], r0[B + l]), std::max(r1[l], r1[B + l]));
  }
}

}  // namespace

void max_pool_blocked_on(const KernelTable& t, const Conv2dShape& s, const float* x, float* y, int threads,
                         bool planar_out) {
  KILN_CHECK(s.C % kConvBlock == 0, "channel-blocked max pool: ", s.C, " channels, not a multiple of ", kConvBlock);
  if (threads <= 0) threads = default_threads();
  const int64_t OH = s.out_h(), OW = s.out_w(), OHW = OH * OW, blocks = s.N * (s.C / kConvBlock);
  const bool two = plain_2x2(s);
  // Each output row: the window rows' maximum into a row padded with -inf on both sides, then
  // the horizontal maximum of its windows.
  const int64_t right = std::max<int64_t>(0, (OW - 1) * s.stride_w + (s.S - 1) * s.dil_w + 1 - s.pad_left - s.W);
  const int64_t padded = (s.pad_left + s.W + right) * kConvBlock;
  auto pool_row = [&](int64_t blk, int64_t oh, float* out, std::vector<float>& row, std::vector<const float*>& taps) {
    const float* plane = x + blk * s.H * s.W * kConvBlock;
    if (two) {
      const float* r0 = plane + 2 * oh * s.W * kConvBlock;
      max_2x2_row(r0, r0 + s.W * kConvBlock, OW, out);
      return;
    }
    int64_t n = 0;
    for (int64_t kh = 0; kh < s.R; ++kh) {
      const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dil_h;
      if (ih >= 0 && ih < s.H) taps[n++] = plane + ih * s.W * kConvBlock;
    }
    KILN_CHECK(n > 0, "channel-blocked max pool: output row ", oh, " has no input row in its window");
    t.max_grid(taps.data(), n, s.W * kConvBlock, row.data() + s.pad_left * kConvBlock);
    t.max_blocked_row(row.data(), OW, s.S, s.stride_w, s.dil_w, out);
  };
  // A thread's row (kept from run to run: no allocation once warm) with this shape's -inf ends.
  auto prepare = [&](std::vector<float>& row, std::vector<const float*>& taps) {
    if (two) return;
    if (static_cast<int64_t>(row.size()) < padded) row.resize(padded);
    if (static_cast<int64_t>(taps.size()) < s.R) taps.resize(static_cast<size_t>(s.R));
    std::fill(row.begin(), row.begin() + s.pad_left * kConvBlock, -std::numeric_limits<float>::infinity());
    std::fill(row.begin() + (s.pad_left + s.W) * kConvBlock, row.begin() + padded,
              -std::numeric_limits<float>::infinity());
  };
  const double work = static_cast<double>(blocks) * OHW * kConvBlock * s.R * s.S;
  threads = threads_for_work(work, threads);
  if (!planar_out) {
    parallel_for(blocks * OH, threads, [&](int64_t b, int64_t e) {
      thread_local std::vector<float> row;
      thread_local std::vector<const float*> taps;
      prepare(row, taps);
      for (int64_t i = b; i < e; ++i) pool_row(i / OH, i % OH, y + i * OW * kConvBlock, row, taps);
    });
    return;
  }
  // NCHW output (a Flatten reads it: digits_cnn): each block pooled into a thread's buffer, then
  // transposed into its kConvBlock planes, which lie back to back in y.
  parallel_for(blocks, threads, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> row, pooled;
    thread_local std::vector<const float*> taps;
    prepare(row, taps);
    if (static_cast<int64_t>(pooled.size()) < OHW * kConvBlock) pooled.resize(OHW * kConvBlock);
    for (int64_t blk = b; blk < e; ++blk) {
      for (int64_t oh = 0; oh < OH; ++oh) pool_row(blk, oh, pooled.data() + oh * OW * kConvBlock, row, taps);
      t.transpose(pooled.data(), kConvBlock, OHW, kConvBlock, y + blk * kConvBlock * OHW, OHW);
    }
  });
}

namespace {

// acc[l] += p[i * ld + l] for i < rows, l < n, in double, row by row (double sums of floats
// round so rarely that every layout's averages come out the same floats in practice, whatever
// the order). Four lanes a step with SSE2 (the build's -O2 leaves the loop scalar).
void sum_columns_f64(const float* p, int64_t ld, int64_t rows, int64_t n, double* acc) {
  const int64_t quads = n / 4 * 4;
  for (int64_t i = 0; i < rows; ++i, p += ld) {
    int64_t l = 0;
#if defined(__SSE2__)
    for (; l < quads; l += 4) {
      const __m128 v = _mm_loadu_ps(p + l);
      _mm_storeu_pd(acc + l, _mm_add_pd(_mm_loadu_pd(acc + l), _mm_cvtps_pd(v)));
      _mm_storeu_pd(acc + l + 2, _mm_add_pd(_mm_loadu_pd(acc + l + 2), _mm_cvtps_pd(_mm_movehl_ps(v, v))));
    }
#endif
    for (; l < n; ++l) acc[l] += p[l];
  }
}

}  // namespace

void global_average_pool_blocked_on(const KernelTable& t, const float* x, int64_t N, int64_t C, int64_t size, float* y,
                                    int threads) {
  KILN_CHECK(C % kConvBlock == 0, "channel-blocked average: ", C, " channels, not a multiple of ", kConvBlock);
  if (threads <= 0) threads = default_threads();
  const int64_t blocks = N * (C / kConvBlock);
  const double count = static_cast<double>(size);
  static_assert(kConvBlock == 8, "sum_block_rows sums rows of 8 lanes");
  parallel_for(blocks, threads_for_pass(static_cast<double>(N) * C * size, threads), [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      double acc[kConvBlock];
      t.sum_block_rows(x + blk * size * kConvBlock, size, acc);
      for (int64_t l = 0; l < kConvBlock; ++l) y[blk * kConvBlock + l] = static_cast<float>(acc[l] / count);
    }
  });
}

void global_average_pool_blocked(const float* x, int64_t N, int64_t C, int64_t size, float* y, int threads) {
  global_average_pool_blocked_on(kernel_table(), x, N, C, size, y, threads);
}

void global_average_pool_pixel_major(const float* x, int64_t N, int64_t C, int64_t size, float* y, int threads) {
  if (threads <= 0) threads = default_threads();
  // Pieces of (image, 64 channels): each channel's sum in double, pixel by pixel in order.
  constexpr int64_t kPiece = 64;
  const int64_t pieces = (C + kPiece - 1) / kPiece;
  const double count = static_cast<double>(size);
  parallel_for(N * pieces, threads_for_work(static_cast<double>(N) * C * size, threads), [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t n = item / pieces, c0 = item % pieces * kPiece, nc = std::min(kPiece, C - c0);
      double acc[kPiece] = {};
      sum_columns_f64(x + n * size * C + c0, C, size, nc, acc);
      for (int64_t l = 0; l < nc; ++l) y[n * C + c0 + l] = static_cast<float>(acc[l] / count);
    }
  });
}

void max_pool_blocked(const Conv2dShape& s, const float* x, float* y, int threads, bool planar_out) {
  max_pool_blocked_on(kernel_table(), s, x, y, threads, planar_out);
}

size_t pool2d_workspace_floats(const Conv2dShape& s, int threads) {
  return pool2d_workspace_floats_on(kernel_table(), s, threads);
}
void pool2d(PoolKind kind, const Conv2dShape& s, bool count_include_pad, const float* x, float* y, float* workspace,
            int threads) {
  pool2d_on(kernel_table(), kind, s, count_include_pad, x, y, workspace, threads);
}
void global_average_pool(const float* x, int64_t planes, int64_t size, float* y, int threads) {
  global_average_pool_on(kernel_table(), x, planes, size, y, threads);
}

}  // namespace kiln::kernels

// BF16 convolution (NCHW f32 activations, bf16 weights, group 1) as an implicit GEMM, in one of
// two orientations chosen from the shape (include/kiln/kernels/bf16.h):
//   panels: weights = rows operand, output positions = cols (32 per panel) — the usual one;
//   pixels: output positions = rows (k.mr_px per tile), output channels = cols — for small images,
//           where 32-column panels would mostly compute dropped columns (resnet50's 7x7 stage:
//           49 positions in 64 columns, or 61 on the padded grid).
#include <algorithm>
#include <cstring>
#include <vector>

#include "../gemm_driver.h"
#include "kiln/kernels/bf16.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::bf16 {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
}  // namespace

// ---- the panels orientation ---------------------------------------------------------------------
// Implicit GEMM one cols panel at a time: a thread packs the nr GEMM columns of its panel for
// every k pair (two kernel taps) into its own buffer, which stays in cache while every row tile of
// the weights passes over it, then stores and applies the epilogue to those output positions.
//
// Every tap is a contiguous row at an offset, for any stride, padding and dilation: the input is
// copied once per image into zero-padded *phase planes* — plane (c, ph, pw)[i][j] is the padded
// input at row i * stride_h + ph, column j * stride_w + pw, of Hq x Wq = ceil(Hp / stride_h) x
// ceil(Wp / stride_w) — and the GEMM runs over the phase-plane grid: column j = oh * Wq + ow
// (N = (OH - 1) * Wq + OW columns; those with j % Wq >= OW are computed and dropped). Tap (kh, kw)
// of output (oh, ow) is padded row oh * stride_h + kh * dil_h, i.e. phase (kh * dil_h) % stride_h,
// phase row oh + (kh * dil_h) / stride_h: plane offset ((kh*dil_h)/stride_h) * Wq + (kw*dil_w)/stride_w
// from column j. Only the phases some tap reads are filled. A stride-1 unpadded convolution reads
// the input planes themselves (one phase, Hq x Wq = H x W).

namespace {

struct Geometry {
  int64_t C, P, OH, OW, Kc, kpairs, Hp, Wp, Hq, Wq, N;
  bool copy;  // phase planes are built (else the input planes are the only phase)
  explicit Geometry(const Conv2dShape& s)
      : C(s.C), P(s.out_h() * s.out_w()), OH(s.out_h()), OW(s.out_w()), Kc(s.C * s.R * s.S), kpairs(ceil_div(Kc, 2)),
        Hp(s.H + s.pad_top + s.pad_bottom), Wp(s.W + s.pad_left + s.pad_right) {
    copy = !(s.stride_h == 1 && s.stride_w == 1 && !s.padded());
    Hq = copy ? ceil_div(Hp, s.stride_h) : s.H;
    Wq = copy ? ceil_div(Wp, s.stride_w) : s.W;
    N = (OH - 1) * Wq + OW;
  }
  int64_t plane_floats() const { return Hq * Wq; }
  int64_t planes_floats(const Conv2dShape& s) const { return copy ? C * s.stride_h * s.stride_w * Hq * Wq : 0; }
  int64_t panel_words(const BKernels& k) const { return round_up(kpairs * k.nr, 16); }
};

// Fills the phase planes a tap reads (zeros where the padded input is padding).
void fill_phase_planes(const Conv2dShape& s, const Geometry& g, const float* x, float* planes, int threads) {
  std::vector<char> used_h(static_cast<size_t>(s.stride_h), 0), used_w(static_cast<size_t>(s.stride_w), 0);
  for (int64_t kh = 0; kh < s.R; ++kh) used_h[static_cast<size_t>(kh * s.dil_h % s.stride_h)] = 1;
  for (int64_t kw = 0; kw < s.S; ++kw) used_w[static_cast<size_t>(kw * s.dil_w % s.stride_w)] = 1;
  const int64_t phases = s.stride_h * s.stride_w;
  parallel_for(s.C * phases, threads_for_work(static_cast<double>(s.C) * g.Hp * g.Wp, threads), [&](int64_t b, int64_t e) {
    for (int64_t cp = b; cp < e; ++cp) {
      const int64_t c = cp / phases, ph = cp % phases / s.stride_w, pw = cp % s.stride_w;
      if (!used_h[static_cast<size_t>(ph)] || !used_w[static_cast<size_t>(pw)]) continue;
      float* d = planes + cp * g.plane_floats();
      // Phase columns j whose input column j * stride_w + pw - pad_left lies in [0, W).
      const int64_t first = pw - s.pad_left;  // input column of j = 0
      const int64_t j_lo = std::min(g.Wq, first >= 0 ? 0 : ceil_div(-first, s.stride_w));
      const int64_t j_hi = std::max(j_lo, std::min(g.Wq, s.W - 1 - first >= 0 ? (s.W - 1 - first) / s.stride_w + 1 : 0));
      for (int64_t i = 0; i < g.Hq; ++i, d += g.Wq) {
        const int64_t ih = i * s.stride_h + ph - s.pad_top;
        if (ih < 0 || ih >= s.H) {
          std::fill(d, d + g.Wq, 0.f);
          continue;
        }
        const float* row = x + (c * s.H + ih) * s.W;
        std::fill(d, d + j_lo, 0.f);
        if (s.stride_w == 1)
          std::memcpy(d + j_lo, row + j_lo + first, static_cast<size_t>(j_hi - j_lo) * sizeof(float));
        else
          for (int64_t j = j_lo; j < j_hi; ++j) d[j] = row[j * s.stride_w + first];
        std::fill(d + j_hi, d + g.Wq, 0.f);
      }
    }
  });
}

// offsets[kk] = where tap kk's row starts relative to column 0 (kk < Kc); -1 pads an odd Kc.
void tap_offsets(const Conv2dShape& s, const Geometry& g, int64_t* offsets) {
  for (int64_t kk = 0; kk < g.Kc; ++kk) {
    const int64_t c = kk / (s.R * s.S), kh = kk % (s.R * s.S) / s.S, kw = kk % s.S;
    const int64_t dh = kh * s.dil_h, dw = kw * s.dil_w;
    const int64_t plane = (c * s.stride_h + dh % s.stride_h) * s.stride_w + dw % s.stride_w;
    offsets[kk] = plane * g.plane_floats() + dh / s.stride_h * g.Wq + dw / s.stride_w;
  }
  if (g.Kc % 2) offsets[g.Kc] = -1;
}

// Calls fn(column in the panel, output position, length) for each run of the panel's GEMM columns
// [j0, j0 + count) that are output positions.
template <typename Fn>
void for_each_output_run(const Geometry& g, int64_t j0, int64_t count, Fn&& fn) {
  if (g.Wq == g.OW) {
    fn(int64_t{0}, j0, count);
    return;
  }
  for (int64_t j = j0; j < j0 + count;) {
    const int64_t oh = j / g.Wq, ow = j % g.Wq, run = std::min(j0 + count - j, g.Wq - ow);
    if (ow < g.OW) fn(j - j0, oh * g.OW + ow, std::min(run, g.OW - ow));
    j += run;
  }
}

}  // namespace

namespace {

// Pixels when panels would compute over 15 % more multiply-adds (dropped columns, ragged tiles).
bool use_pixels(const BKernels& k, const Conv2dShape& s, const Geometry& g) {
  if (k.mr_px <= 0) return false;
  const double panels = static_cast<double>(round_up(g.N, k.nr)) * round_up(s.K, k.mr);
  const double pixels = static_cast<double>(round_up(g.P, k.mr_px)) * round_up(s.K, k.nr);
  return panels > 1.15 * pixels;
}

// Packed panels a thread keeps at once: the weights stream once per chunk of panels (row tiles
// outer, the chunk's panels inner), so a chunk is as many panels as fit in about half an L2.
constexpr int64_t kChunkBytes = 256 << 10;
int64_t chunk_panels(const BKernels& k, const Geometry& g) {
  return std::clamp<int64_t>(kChunkBytes / (g.panel_words(k) * 4), 1, ceil_div(g.N, k.nr));
}

// Workspace: [phase planes][tap offsets][panels: per thread one chunk of packed panels |
// pixels: the packed im2col rows of every position tile, then each tile's positions]
struct Layout {
  bool pixels;
  int64_t planes_bytes, offsets_bytes, per_thread_bytes = 0, rows_bytes = 0;
  Layout(const BKernels& k, const Conv2dShape& s, const Geometry& g)
      : pixels(use_pixels(k, s, g)), planes_bytes(round_up(g.planes_floats(s) * 4, 64)),
        offsets_bytes(round_up((g.Kc + 1) * 8, 64)) {
    if (pixels) rows_bytes = round_up(ceil_div(g.P, k.mr_px) * g.kpairs * k.mr_px * 4, 64);
    else per_thread_bytes = chunk_panels(k, g) * g.panel_words(k) * 4;
  }
  int64_t total(int threads) const { return planes_bytes + offsets_bytes + rows_bytes + threads * per_thread_bytes; }
};

// The epilogue of one image's output as a [K, P] matrix: bias per channel (row), the residual
// in the output's layout; tiles take their part of it with detail::tile_epilogue.
Epilogue per_channel_epilogue(const Epilogue& epi, const float* residual_n, const Geometry& g) {
  Epilogue e = epi;
  e.bias_per_row = true;
  if (e.residual) e.residual = residual_n, e.ldr = g.P;
  return e;
}

// ---- the panels orientation ----
// Work is split over threads by panels when there are plenty (each thread streams the weights
// once per chunk of its panels), else by row tiles (each thread packs every panel — cheap next to
// the weights — and streams only its share of the weights).
void conv_panels(const BKernels& k, const Conv2dShape& s, const Geometry& g, const Layout& l, const float* base,
                 const int64_t* offsets, const uint32_t* packed_w, float* yn, const Epilogue& epi,
                 const float* residual_n, char* slots_base, int threads) {
  const int64_t nt = ceil_div(g.N, k.nr), mt = ceil_div(s.K, k.mr), kp = g.kpairs, chunk = chunk_panels(k, g);
  const int64_t panel_words = g.panel_words(k);
  const int work_threads = threads_for_work(static_cast<double>(s.K) * g.N * g.Kc / 2, threads);
  // By panels only when they split evenly enough: resnet50's 14x14 layers have 7 panels, 4 to one
  // thread and 3 to the other, where their 32 row tiles split 16 / 16.
  const bool by_panels = nt >= 2 * work_threads && (nt % work_threads == 0 || nt >= 8 * work_threads);
  const int64_t slots = std::min<int64_t>(work_threads, by_panels ? nt : mt);
  const Epilogue e = per_channel_epilogue(epi, residual_n, g);
  const KernelTable& table = kernel_table();
  parallel_for(slots, static_cast<int>(slots), [&](int64_t sb, int64_t se) {
    for (int64_t slot = sb; slot < se; ++slot) {
      uint32_t* panels = reinterpret_cast<uint32_t*>(slots_base + slot * l.per_thread_bytes);
      alignas(64) float acc[16 * 64];  // mr * nr <= 16 * 64 for every table
      const int64_t p_begin = by_panels ? nt * slot / slots : 0, p_end = by_panels ? nt * (slot + 1) / slots : nt;
      const int64_t t_begin = by_panels ? 0 : mt * slot / slots, t_end = by_panels ? mt : mt * (slot + 1) / slots;
      for (int64_t c0 = p_begin; c0 < p_end; c0 += chunk) {
        const int64_t c1 = std::min(p_end, c0 + chunk);
        for (int64_t p = c0; p < c1; ++p) {
          const int64_t j0 = p * k.nr;
          k.pack_panel(base + j0, offsets, kp, std::min<int64_t>(k.nr, g.N - j0), panels + (p - c0) * panel_words);
        }
        for (int64_t t = t_begin; t < t_end; ++t) {
          const int64_t row0 = t * k.mr, rows_here = std::min<int64_t>(k.mr, s.K - row0);
          for (int64_t p = c0; p < c1; ++p) {
            k.tile(kp, packed_w + t * kp * k.mr, panels + (p - c0) * panel_words, acc);
            // The tile holds whole sums: its output runs go through the epilogue on the way out
            // of the (L1) accumulators, not in a later pass over the output.
            const int64_t j0 = p * k.nr;
            for_each_output_run(g, j0, std::min<int64_t>(k.nr, g.N - j0), [&](int64_t col, int64_t pos, int64_t len) {
              table.epilogue_copy(acc + col, k.nr, yn + row0 * g.P + pos, g.P, rows_here, len,
                                  detail::tile_epilogue(e, row0, pos));
            });
          }
        }
      }
    }
  });
}

// ---- the pixels orientation ----
// The im2col rows of every tile of k.mr_px output positions are packed once per image (pack_rows_px,
// positions at their phase-grid columns), then each thread takes output-channel panels of the
// weights (packed as cols, nr channels each) and runs every position tile over its panel: acc is
// positions x channels, stored transposed into the NCHW output; the epilogue runs on the panel's
// channel rows when they are complete.
void conv_pixels(const BKernels& k, const Conv2dShape& s, const Geometry& g, const Layout& l, const float* base,
                 const int64_t* offsets, const uint32_t* packed_w, float* yn, const Epilogue& epi,
                 const float* residual_n, uint32_t* rows, int threads) {
  const int64_t pt = ceil_div(g.P, k.mr_px), ct = ceil_div(s.K, k.nr), kp = g.kpairs;
  const int64_t tile_words = kp * k.mr_px;
  parallel_for(pt, threads_for_work(static_cast<double>(g.P) * g.Kc, threads), [&](int64_t b, int64_t e) {
    std::vector<int64_t> cols(static_cast<size_t>(k.mr_px));
    for (int64_t t = b; t < e; ++t) {
      const int64_t pos0 = t * k.mr_px, count = std::min<int64_t>(k.mr_px, g.P - pos0);
      for (int64_t r = 0; r < count; ++r) cols[r] = (pos0 + r) / g.OW * g.Wq + (pos0 + r) % g.OW;
      k.pack_rows_px(base, offsets, kp, cols.data(), static_cast<int>(count), rows + t * tile_words);
    }
  });
  const Epilogue ep = per_channel_epilogue(epi, residual_n, g);
  const KernelTable& table = kernel_table();
  parallel_for(ct, threads_for_work(static_cast<double>(s.K) * g.P * g.Kc / 2, threads), [&](int64_t b, int64_t e) {
    alignas(64) float acc[16 * 64];
    for (int64_t c = b; c < e; ++c) {
      const int64_t ch0 = c * k.nr, chans = std::min<int64_t>(k.nr, s.K - ch0);
      const uint32_t* wpanel = packed_w + c * kp * k.nr;
      for (int64_t t = 0; t < pt; ++t) {
        k.tile_px(kp, rows + t * tile_words, wpanel, acc);
        // positions x channels, transposed into the channels' NCHW rows with the epilogue.
        const int64_t pos0 = t * k.mr_px, count = std::min<int64_t>(k.mr_px, g.P - pos0);
        table.transpose_epilogue(acc, k.nr, count, chans, yn + ch0 * g.P + pos0, g.P,
                                 detail::tile_epilogue(ep, ch0, pos0));
      }
    }
  });
}

}  // namespace

bool conv_uses_pixels(const BKernels& k, const Conv2dShape& s) { return use_pixels(k, s, Geometry(s)); }

size_t conv_packed_weight_words(const BKernels& k, const Conv2dShape& s) {
  const Geometry g(s);
  return use_pixels(k, s, g) ? packed_cols_words(k, g.Kc, s.K) : packed_rows_words(k, s.K, g.Kc);
}

void conv_pack_weight(const BKernels& k, const Conv2dShape& s, const uint16_t* w, uint32_t* packed) {
  const Geometry g(s);
  if (use_pixels(k, s, g)) pack_cols_bf16(k, w, g.Kc, true, g.Kc, s.K, packed);  // element (kk, ch) at w[ch * Kc + kk]
  else pack_rows_bf16(k, w, g.Kc, s.K, g.Kc, packed);
}

size_t conv_workspace_bytes(const BKernels& k, const Conv2dShape& s, int threads) {
  const Geometry g(s);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  return static_cast<size_t>(Layout(k, s, g).total(threads));
}

void conv2d(const BKernels& k, const Conv2dShape& s, const float* x, const uint32_t* packed_w, float* y,
            const Epilogue& epi, void* workspace, int threads) {
  const Geometry g(s);
  const Layout l(k, s, g);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  char* ws = static_cast<char*>(workspace);
  float* planes = reinterpret_cast<float*>(ws);
  int64_t* offsets = reinterpret_cast<int64_t*>(ws + l.planes_bytes);
  char* rest = ws + l.planes_bytes + l.offsets_bytes;
  tap_offsets(s, g, offsets);
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.H * s.W;
    float* yn = y + n * s.K * g.P;
    const float* residual_n = epi.residual ? epi.residual + n * s.K * g.P : nullptr;
    if (g.copy) fill_phase_planes(s, g, xn, planes, threads);
    const float* base = g.copy ? planes : xn;
    if (l.pixels)
      conv_pixels(k, s, g, l, base, offsets, packed_w, yn, epi, residual_n, reinterpret_cast<uint32_t*>(rest), threads);
    else
      conv_panels(k, s, g, l, base, offsets, packed_w, yn, epi, residual_n, rest, threads);
  }
}

}  // namespace kiln::kernels::bf16

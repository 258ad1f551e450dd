// The pixel-gemm convolution tactic (conv_pixel.h).
//
// im2col row q (K order (tap, channel) as in conv_phase.h) at pixel p is a read of one phase
// plane row at the pixel's grid offset (p / OW) * Wg + p % OW; a 1x1 stride-1 unpadded
// convolution reads the input plane of channel q at p directly. Consecutive pixels of one
// output row are consecutive offsets, so an A panel of mr pixels is a few runs of plain vector
// copies per im2col row (KernelTable::pack_a_runs).
#include "conv_pixel.h"

#include <algorithm>
#include <vector>

#include "conv_phase.h"
#include "gemm_driver.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::detail {
namespace {

// 1x1, stride 1, no padding: im2col row c is input plane c, no phase planes needed.
bool reads_input_planes(const Conv2dShape& s) {
  return s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && !s.pad_top && !s.pad_left && !s.pad_bottom &&
         !s.pad_right;
}

struct PixelWorkspace {
  size_t phases = 0, result = 0;  // phase planes of all channels; C [OH*OW, K]
};
PixelWorkspace pixel_workspace(const Conv2dShape& s) {
  PixelWorkspace w;
  if (!reads_input_planes(s)) w.phases = static_cast<size_t>(s.C * phase_geometry(s).per_channel);
  w.result = static_cast<size_t>(s.out_h() * s.out_w() * s.K);
  return w;
}

}  // namespace

GemmProblem::Split conv_split(const Conv2dShape& s, bool pixels_on_rows) {
  const int64_t weight = s.K * (s.C / s.group) * s.R * s.S;
  const bool cut_pixels = weight <= s.N * (s.C * s.H * s.W + s.K * s.out_h() * s.out_w());
  return cut_pixels == pixels_on_rows ? GemmProblem::Split::Rows : GemmProblem::Split::Cols;
}

size_t weight_panel_floats(const Conv2dShape& s, int nr) {
  return static_cast<size_t>(round_up(s.K, nr) * s.C * s.R * s.S);
}

void pack_weight_panels(const Conv2dShape& s, const float* w, int nr, float* packed, bool taps_inner) {
  // B[q][k] = w[k][c][kh][kw], q = (kh * S + kw) * C + c, or (kh * C + c) * S + kw taps_inner.
  const int64_t RS = s.R * s.S, KK = s.C * RS;
  std::vector<float> reordered(s.K * KK);
  for (int64_t k = 0; k < s.K; ++k)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t tap = 0; tap < RS; ++tap) {
        const int64_t kh = tap / s.S, kw = tap % s.S;
        const int64_t q = taps_inner ? (kh * s.C + c) * s.S + kw : tap * s.C + c;
        reordered[k * KK + q] = w[(k * s.C + c) * RS + tap];
      }
  pack_b_panels(reordered.data(), KK, /*trans=*/true, s.K, 0, KK, 0, s.K, nr, packed);
}

size_t pixel_packed_weight_floats(const KernelTable& t, const Conv2dShape& s) {
  return weight_panel_floats(s, t.gemm.nr);
}

void pixel_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed) {
  pack_weight_panels(s, w, t.gemm.nr, packed);
}

size_t pixel_workspace_floats(const KernelTable&, const Conv2dShape& s) {
  const PixelWorkspace w = pixel_workspace(s);
  return w.phases + w.result;
}

void conv_pixel_gemm(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                     const Epilogue& epi, float* workspace, int threads) {
  const int64_t OH = s.out_h(), OW = s.out_w(), OHW = OH * OW, KK = s.C * s.R * s.S, HW = s.H * s.W;
  const bool direct = reads_input_planes(s);
  const PhaseGeometry geo = direct ? PhaseGeometry{} : phase_geometry(s);
  const PixelWorkspace wl = pixel_workspace(s);
  thread_local std::vector<float> own;
  if (!workspace) {
    if (own.size() < wl.phases + wl.result) own.resize(wl.phases + wl.result);
    workspace = own.data();
  }
  float* phases = workspace;
  float* result = workspace + wl.phases;
  const int mr = t.gemm.mr;
  // One output pixel read in place (squeeze-and-excitation's 1x1 convolutions on a pooled
  // [N, C, 1, 1]): per image a row of C floats times the packed weight, which gemv_run streams
  // once, panel by panel, on one thread when small. Through the GEMM driver a 1152 -> 48 of
  // efficientnet_b0 took 27 us (a 14-row A panel packed for one row, C transposed after).
  if (direct && OHW == 1 && t.gemv_panels) {
    Epilogue e = epi;
    e.bias_per_row = false;  // the channels are the row's columns
    for (int64_t n = 0; n < s.N; ++n) {
      if (epi.residual) e.residual = epi.residual + n * s.K;
      gemv_run(t, s.K, KK, x + n * s.C, packed_w, y + n * s.K, &e, threads);
    }
    return;
  }
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * HW;
    float* yn = y + n * s.K * OHW;
    if (!direct) {
      const double work = static_cast<double>(s.C) * geo.per_channel;
      parallel_for(s.C, threads_for_work(work, threads), [&](int64_t b, int64_t e) {
        build_phase_planes(t, s, geo, xn + b * HW, e - b, phases + b * geo.per_channel);
      });
    }
    // A block: pixels [i0, i0+mc) x im2col rows [p0, p0+kc), mr pixels per panel.
    auto pack = [&](int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
      thread_local std::vector<const float*> rows;
      rows.resize(kc);
      for (int64_t q = 0; q < kc; ++q)
        rows[q] = direct ? xn + (p0 + q) * HW : phase_row(s, geo, phases, s.C, p0 + q);
      PixelRun runs[32];
      for (int64_t ip = 0; ip < mc; ip += mr, out += kc * mr) {
        const int64_t first = i0 + ip, last = std::min(first + mr, OHW);
        int nruns = 0;
        for (int64_t p = first; p < last;) {
          // A run ends at the end of an output row (the grid skips Wg - OW columns there).
          const int64_t row_end = direct ? last : std::min(last, (p / OW + 1) * OW);
          PixelRun& r = runs[nruns++];
          r.src = static_cast<int32_t>(direct ? p : (p / OW) * geo.Wg + p % OW);
          r.dst = static_cast<int32_t>(p - first);
          r.len = static_cast<int32_t>(row_end - p);
          p = row_end;
        }
        t.pack_a_runs(rows.data(), kc, runs, nruns, static_cast<int>(last - first), mr, out);
      }
    };
    // NCHW output: each part's rows of C (its pixels, all channels) transposed and put through
    // the epilogue (bias per channel, residual NCHW) by the thread that computed them, while
    // they are in cache, 16 channels at a time.
    Epilogue e = epi;
    e.bias_per_row = true;
    if (e.residual) e.residual += n * s.K * OHW, e.ldr = OHW;
    const bool apply = !epilogue_is_identity(e);
    auto to_nchw = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      constexpr int64_t kBlock = 16;
      for (int64_t k0 = j0; k0 < j1; k0 += kBlock) {
        const int64_t nk = std::min(kBlock, j1 - k0);
        float* out = yn + k0 * OHW + i0;
        if (apply) t.transpose_epilogue(result + i0 * s.K + k0, s.K, i1 - i0, nk, out, OHW, tile_epilogue(e, k0, i0));
        else t.transpose(result + i0 * s.K + k0, s.K, i1 - i0, nk, out, OHW);
      }
    };
    GemmProblem p;
    p.M = OHW, p.N = s.K, p.K = KK;
    p.pack_a = pack;
    p.b_packed = packed_w;
    p.C = result, p.ldc = s.K;
    p.split = conv_split(s, /*pixels_on_rows=*/true);
    p.part_done = to_nchw;
    gemm_run(t, p, threads);
  }
}

}  // namespace kiln::kernels::detail

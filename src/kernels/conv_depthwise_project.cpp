// A depthwise convolution and the 1x1 projection after it, band by band (depthwise_project.h).
// The kernels are the two tactics' own (KernelTable::depthwise_block on the band's rows, the
// direct tactic's 1x1 on the band), so each output is the same sum over the same channels.
#include "kiln/kernels/depthwise_project.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "conv_direct.h"
#include "depthwise_parts.h"
#include "depthwise_project_band.h"
#include "depthwise_wide.h"
#include "gemm_driver.h"
#include "line_scratch.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

using detail::ceil_div;

// Depthwise bytes a band keeps (its rows x every channel): within L2 (1-2 MiB on the hosts
// measured) beside the band's input rows and output. mobilenet_v2's 14 pairs on the 2-vCPU Zen 5
// host, two threads, against the two calls (kiln profile, three alternated rounds, summed): bands
// of 128 / 256 / 512 KiB 0.842 / 0.807 / 0.785 of the time; 512 KiB makes 112x112 x 32 channels 4
// bands of 28 rows, 56x56 x 144 4 of 14, and every 14x14 and 7x7 layer one band a thread.
constexpr double kBandBytes = 512 << 10;

// Output rows per band: as many as keep the band's depthwise rows (every channel) within
// kBandBytes.
int64_t band_rows(const Conv2dShape& d) {
  const double row_bytes = 4.0 * static_cast<double>(d.K) * static_cast<double>(d.out_w());
  return std::max<int64_t>(1, static_cast<int64_t>(kBandBytes / row_bytes));
}

// A pair whose plane is too short for bands of kCloseBandMinRows rows a thread, whose
// projection the direct tactic sums in two K blocks (mobilenet_v2's 7x7 pairs: 960 channels, two
// blocks of 480): the rows cut 4 : 3 at two threads, each thread reading all the weights.
// Cut by input channels instead, each half is the same work and reads half the weights, and
// the halves' sums are the two blocks' partial sums (project_halves). Where the bands pay
// (expand_bands_pay: the cores far apart, or pinned on): with the cores close the pair runs the
// two calls apart, and the halves measured 1.0050-1.0058 of that there (mobilenet_v2, in
// process, 200 pairs), against 0.988-0.994 of the bands far.
int64_t k_split_channels(const Conv2dShape& d, const Conv2dShape& p, const Epilogue& epi_p, int threads) {
  if (!detail::depthwise_project_k_split_enabled || threads < 2 || d.N != 1 || p.p64) return 0;
  if (!expand_bands_pay(threads)) return 0;
  if (d.out_h() >= kCloseBandMinRows * threads) return 0;
  const KernelTable& t = kernel_table();
  // The blocks as every other path sums them: one band's or the whole layer's projection on one
  // thread, or the whole layer on `threads`.
  Conv2dShape band = p;
  band.whole_out_h = p.H;
  const detail::DirectKBlocks one = detail::direct_k_blocks(t, p, epi_p, 1);
  if (one.kblocks != 2 || one.kc % d.y_block != 0) return 0;
  for (const detail::DirectKBlocks& other :
       {detail::direct_k_blocks(t, p, epi_p, threads), detail::direct_k_blocks(t, band, epi_p, 1)})
    if (other.kblocks != one.kblocks || other.kc != one.kc) return 0;
  return one.kc;
}

}  // namespace

namespace detail {
bool depthwise_project_k_split_enabled = env_switch_on("KILN_DW_PROJECT_KSPLIT");
}  // namespace detail

int64_t depthwise_project_k_split(const Conv2dShape& d, const Conv2dShape& p, const Epilogue& epi_p, int threads) {
  if (!depthwise_project_unsupported(d, p).empty()) return 0;
  return k_split_channels(d, p, epi_p, threads <= 0 ? default_threads() : threads);
}

std::string depthwise_project_unsupported(const Conv2dShape& d, const Conv2dShape& p) {
  if (std::string why = conv_tactic_unsupported(ConvTactic::Depthwise, d); !why.empty())
    return "the depthwise convolution: " + why;
  if (std::string why = conv_tactic_unsupported(ConvTactic::Direct, p); !why.empty()) return "the projection: " + why;
  if (d.C != d.K || d.group != d.C) return "the first convolution is not depthwise (group == C == K)";
  if (!d.x_blocked || !d.y_blocked || d.x_block != d.y_block)
    return "the depthwise convolution does not read and write channel blocks of one size";
  if (p.R != 1 || p.S != 1 || p.stride_h != 1 || p.stride_w != 1 || p.padded() || p.group != 1)
    return "the projection is not a 1x1, stride-1, unpadded convolution of one group";
  if (p.x_padded || p.y_padded() || p.x_nhwc || p.y_nhwc || p.winograd || !p.x_blocked || !p.y_blocked ||
      p.x_block != d.y_block)
    return "the projection does not read the depthwise output's blocks and write unpadded blocked planes";
  if (p.N != d.N || p.C != d.K || p.H != d.out_h() || p.W != d.out_w())
    return "the projection does not read the depthwise output";
  if (!detail::depthwise_blocked(kernel_table())) return "this CPU's table has no channel-blocked depthwise kernel";
  return "";
}

size_t depthwise_project_workspace_floats(const Conv2dShape& d, const Conv2dShape& p, int threads) {
  const size_t mid = static_cast<size_t>(d.N * d.K * d.out_h() * d.out_w());
  return mid + kLineFloats + std::max(conv_workspace_floats(ConvTactic::Depthwise, d, threads),
                                      conv_workspace_floats(ConvTactic::Direct, p, threads));
}

void depthwise_project(const Conv2dShape& d, const Conv2dShape& p, const float* x, const float* wd,
                       const Epilogue& epi_d, const float* wp, const Epilogue& epi_p, float* y, float* workspace,
                       int threads) {
  std::string bad = depthwise_project_unsupported(d, p);
  KILN_CHECK(bad.empty(), "depthwise + projection: ", bad);
  KILN_CHECK(!epi_d.residual && !epi_d.channel_means && !epi_p.channel_means,
             "depthwise + projection: no residual on the depthwise convolution, no channel means on either");
  if (threads <= 0) threads = default_threads();
  const KernelTable& t = kernel_table();
  const int64_t OH = d.out_h(), OW = d.out_w();
  int64_t bands = ceil_div(OH, band_rows(d));
  if (threads > 1) bands = std::min(OH, detail::round_up(std::max<int64_t>(bands, threads), threads));
  const int64_t parts = d.N * bands;
  // As expand_depthwise: bands pay where the cores are far apart (each its own L3) and cost where
  // they share one. mobilenet_v2 at two threads against ORT, the Zen 5 host: far 0.63-0.73 with
  // the pairs banded against 0.71-0.79 apart; close (fork-join under 0.5 us before and after)
  // 0.80-0.85 banded against 0.77-0.79 apart (a handful of samples: close minutes are short and
  // rare). One thread banded: 1.021 of the two calls' time. On the Zen 4 host, where the cores
  // were mostly close, a pair of one band per thread still paid there (depthwise_project_bands_pay).
  // Halves of the channels in place of the bands (k_split_channels says where).
  if (const int64_t kc = k_split_channels(d, p, epi_p, threads)) {
    detail::project_halves(t, d, p, x, wd, epi_d, wp, epi_p, y, kc, threads);
    return;
  }
  if ((parts == 1 || !depthwise_project_bands_pay(bands, OH, threads)) && workspace) {
    float* mid = workspace;
    float* rest = mid + static_cast<size_t>(d.N * d.K * OH * OW) + kLineFloats;
    conv2d(ConvTactic::Depthwise, d, x, wd, mid, epi_d, rest, threads);
    conv2d(ConvTactic::Direct, p, mid, wp, y, epi_p, rest, threads);
    return;
  }
  const DepthwisePlane whole = detail::depthwise_geometry(d);
  Epilogue e2 = epi_p;
  e2.bias_per_row = true;
  // Output rows [oh0, oh1) of image n.
  auto run_band = [&](int64_t n, int64_t oh0, int64_t oh1) {
    // This thread's: the band's depthwise rows and the depthwise block's scratch. Kept between
    // calls.
    thread_local detail::LineScratch own_mid, own_scratch;
    const int64_t rows = oh1 - oh0;
    const detail::DepthwiseBand bd = detail::depthwise_band(whole, oh0, oh1);
    const float* xn = x + n * d.C * d.H * d.W;
    float* mid = own_mid.floats(static_cast<size_t>(d.K * rows * OW));  // [K / bi][rows][OW][bi]
    detail::depthwise_channel_rows(t, d, bd, xn, wd, epi_d, own_scratch, mid, 0, d.K);
    detail::project_band(p, n, oh0, rows, mid, wp, e2, y);
  };
  // One image: the threads' shares of the rows, sized by their measured speeds on this pair
  // (keyed by its depthwise weights), one band a thread on the 28x28 and smaller planes, two on
  // 56x56. Else bands of even rows, stolen by whoever is free.
  if (d.N == 1 && bands % threads == 0) {
    detail::for_share_bands(OH, bands, threads, wd, [&](int64_t oh0, int64_t oh1) { run_band(0, oh0, oh1); });
    return;
  }
  parallel_for(parts, std::min<int64_t>(threads, parts), [&](int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t b = part % bands;
      run_band(part / bands, OH * b / bands, OH * (b + 1) / bands);
    }
  });
}

namespace detail {

void depthwise_band_rows(const KernelTable& t, const Conv2dShape& d, const DepthwiseBand& bd, const float* in,
                         int64_t in_plane, const float* wd, const Epilogue& epi_d, float* scratch, float* mid) {
  depthwise_band_rows(t, d, bd, in, in_plane, wd, epi_d, scratch, mid, 0, d.K);
}

void depthwise_band_rows(const KernelTable& t, const Conv2dShape& d, const DepthwiseBand& bd, const float* in,
                         int64_t in_plane, const float* wd, const Epilogue& epi_d, float* scratch, float* mid,
                         int64_t c_begin, int64_t c_end) {
  const int64_t rows = bd.g.OH, OW = bd.g.OW, RS = d.R * d.S, lanes = t.simd_width;
  const int64_t mid_plane = kConvBlock * rows * OW;  // floats between the band's 8-channel blocks
  bool padding_zeroed = false;
  for (int64_t c0 = c_begin; c0 < c_end; c0 += lanes) {
    const int nc = static_cast<int>(std::min(lanes, c_end - c0));
    TileEpilogue te = depthwise_epilogue(epi_d, c0, TileEpilogue::Bias::PerRow, 0, mid_plane);
    if (depthwise_has_pair_copy(d)) te.pair_weights = depthwise_pair_weights(d, wd, c0);
    t.depthwise_block(bd.g, in + c0 / kConvBlock * in_plane, in_plane, nc, wd + c0 * RS, scratch, &padding_zeroed,
                      mid + (c0 - c_begin) * rows * OW, mid_plane, te, true, true);
  }
}

void depthwise_channel_rows(const KernelTable& t, const Conv2dShape& d, const DepthwiseBand& bd, const float* xn,
                            const float* wd, const Epilogue& epi_d, LineScratch& scratch, float* mid, int64_t c_begin,
                            int64_t c_end) {
  const int64_t rows = bd.g.OH, OW = bd.g.OW, bi = d.x_block;
  if (bi == kConvBlockWide) {
    // 16-channel blocks (small planes, depthwise_wide.h): each block's band from the input rows
    // its windows reach, as a plane of its own.
    for (int64_t c0 = c_begin; c0 < c_end; c0 += bi)
      depthwise_wide_block_rows(bd.g, xn + c0 * d.H * d.W + bd.x_offset * bi, depthwise_pair_weights(d, wd, c0),
                                mid + (c0 - c_begin) * rows * OW, 0, rows, depthwise_wide_out(epi_d, c0));
    return;
  }
  float* s = scratch.floats(static_cast<size_t>(depthwise_block_scratch(bd.g, static_cast<int>(t.simd_width)).floats));
  depthwise_band_rows(t, d, bd, xn + bd.x_offset * kConvBlock, kConvBlock * d.H * d.W, wd, epi_d, s, mid, c_begin,
                      c_end);
}

void project_halves(const KernelTable& t, const Conv2dShape& d, const Conv2dShape& p, const float* x, const float* wd,
                    const Epilogue& epi_d, const float* wp, const Epilogue& epi_p, float* y, int64_t kc, int threads) {
  const int64_t OHW = p.H * p.W, C = d.K, NR = t.conv_shape.nr;
  const DepthwiseBand bd = depthwise_band(depthwise_geometry(d), 0, d.out_h());  // the whole plane
  // Each half's partial sums, [K / y_block][OH][OW][y_block], in a scratch of its own index (two
  // halves run on one thread when one steals the other).
  float* partial[2] = {};
  parallel_for(2, threads, [&](int64_t h0, int64_t h1) {
    thread_local LineScratch own_mid, own_scratch, own_partial[2];
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t c0 = h ? kc : 0, c1 = h ? C : kc;
      float* mid = own_mid.floats(static_cast<size_t>((c1 - c0) * OHW));
      depthwise_channel_rows(t, d, bd, x, wd, epi_d, own_scratch, mid, c0, c1);
      // The half's projection: rows [c0, c1) of each packed panel, its sums from zero as the
      // direct tactic's K block of those rows sums them.
      Conv2dShape ph = p;
      ph.C = c1 - c0, ph.w_panel_rows = C;
      float* part = own_partial[h].floats(static_cast<size_t>(p.K * OHW));
      conv2d(ConvTactic::Direct, ph, mid, wp + c0 * NR, part, Epilogue{}, nullptr, 1);
      partial[h] = part;
    }
  });
  // y = epilogue(second + first): the direct tactic's last K block adds the blocks before it to
  // its sums and then applies the epilogue (scale, bias, residual, activation), as
  // epilogue_copy's rows do. Into the second half's scratch first, so that y may be written over
  // its residual (in_place_input).
  const int64_t B = p.y_block, plane = OHW * B;
  parallel_for(p.K / B, threads, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* sum = partial[1] + b * plane;
      TileEpilogue add;
      add.residual = partial[0] + b * plane;
      t.epilogue_copy(sum, plane, sum, plane, 1, plane, add);
      TileEpilogue e;
      e.alpha = epi_p.alpha;
      if (epi_p.bias) e.bias = epi_p.bias + b * B, e.bias_mode = TileEpilogue::Bias::PerCol;
      if (epi_p.residual) e.residual = epi_p.residual + b * plane, e.ldr = B;
      e.act = epi_p.act, e.act_alpha = epi_p.act_alpha, e.act_beta = epi_p.act_beta;
      t.epilogue_copy(sum, B, y + b * plane, B, OHW, B, e);
    }
  });
}

void project_band(const Conv2dShape& p, int64_t n, int64_t oh0, int64_t rows, const float* mid, const float* wp,
                  const Epilogue& epi_p, float* y) {
  const int64_t OH = p.H, OW = p.W;
  Conv2dShape pb = p;
  pb.N = 1, pb.H = rows, pb.y_plane_rows = pb.whole_out_h = OH;
  const int64_t at = n * p.K * OH * OW + oh0 * OW * p.y_block;
  Epilogue eb = epi_p;
  if (epi_p.residual) eb.residual = epi_p.residual + at;
  conv2d(ConvTactic::Direct, pb, mid, wp, y + at, eb, nullptr, 1);
}

}  // namespace detail

}  // namespace kiln::kernels

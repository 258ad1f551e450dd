// The depthwise tactic on 16-channel blocks (depthwise_wide.h): the checks and the split over
// threads; the kernel is src/kernels/avx512/depthwise_wide_avx512.cpp.
#include "depthwise_wide.h"

#include <algorithm>

#include "conv_direct.h"
#include "depthwise_parts.h"
#include "gemm_driver.h"
#include "kiln/ir/env.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::detail {

bool depthwise_wide_in_place_enabled = env_switch_on("KILN_DW_WIDE_IN_PLACE");

bool depthwise_wide_in_place_supports(const DepthwisePlane& g) {
  return g.R == g.S && (g.R == 3 || g.R == 5) && g.dil_h == 1 && g.dil_w == 1 && g.pad_left == g.S / 2 &&
         (g.stride_w == 1 || g.stride_w == 2) && g.stride_h == g.stride_w;
}

void depthwise_wide_block_rows(const DepthwisePlane& g, const float* x, const float* pair_w, float* y, int64_t oh0,
                               int64_t oh1, const DepthwiseWideOut& e) {
  if (!depthwise_wide_in_place_enabled || e.residual || !depthwise_wide_in_place_supports(g)) {
    depthwise_wide_rows_avx512(g, x, pair_w, y, oh0, oh1, e);
    return;
  }
  const DepthwiseBand bd = depthwise_band(g, oh0, oh1);
  depthwise_wide_in_place_avx512(bd.g, x + bd.x_offset * kConvBlockWide, pair_w, y + bd.out_offset * kConvBlockWide,
                                 nullptr, e, false);
}

std::string depthwise_wide_unsupported(const KernelTable& t, const Conv2dShape& s) {
  if (t.isa != Isa::Avx512) return "16-channel depthwise blocks need AVX-512 (a pixel's block one vector)";
  if (!s.x_blocked || !s.y_blocked || s.x_block != kConvBlockWide || s.y_block != kConvBlockWide)
    return "16-channel depthwise blocks take 16-channel blocks in and out";
  if (s.group != s.C || s.C != s.K || s.K % kConvBlockWide != 0)
    return "16-channel depthwise blocks need group == C == K, a multiple of 16";
  if (s.R * s.S > kDepthwiseWideMaxTaps) return "16-channel depthwise blocks take windows of up to 49 taps";
  if (s.W > kDepthwiseWideMaxInWidth)
    return "16-channel depthwise blocks take input rows of up to 16 pixels (wider ones run faster on 8-channel blocks)";
  return "";
}

void depthwise_wide(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                    const Epilogue& epi, int threads) {
  const std::string bad = depthwise_wide_unsupported(t, s);
  KILN_CHECK(bad.empty(), "depthwise convolution: ", bad);
  KILN_CHECK(!epi.channel_means, "depthwise convolution: channel means of 16-channel blocks are not supported");
  const DepthwisePlane g = depthwise_geometry(s);
  const int64_t RS = s.R * s.S, OHW = g.OH * g.OW, HW = s.H * s.W, blocks = s.K / kConvBlockWide;
  threads = threads_for_work(static_cast<double>(s.N * s.K) * (OHW * RS + HW), threads);
  // Planes of kBandInputRowsPerThread input rows a thread or more: one band of output rows a
  // thread, band-major (thread t, owning the t-th share of the pieces, computes band t of every
  // block), so that each thread reads the rows the 1x1 before it wrote on that thread
  // (conv_direct_1x1 cuts pixels) and writes those the 1x1 after it reads there. Else blocks of
  // every image, each one piece; with fewer blocks than pieces for the threads (a layer of 16
  // or 32 channels) each block cut into bands of rows. Zen 5, two threads, with the 1x1s'
  // pixel split (conv_direct_1x1.cpp): mobilenet_v2's 14x14 depthwise layers 0.81-0.85 of the
  // time in the model (one of six 1.10), while its 7x7 ones (3- and 4-row bands plus halo rows)
  // ran 1.33-1.50, so those keep the blocks.
  constexpr int64_t kBandInputRowsPerThread = 7;
  const int64_t units = s.N * blocks;
  const int64_t want = threads > 1 ? int64_t{threads} * kPiecesPerThread : 1;
  const bool band_major = threads > 1 && s.H >= kBandInputRowsPerThread * threads && g.OH >= threads;
  const int64_t bands = band_major ? threads : units >= want ? 1 : std::min(g.OH, ceil_div(want, units));
  // Each piece claims its rows of the output before it writes them (claim_output_pays): its
  // run of whole planes at once, or each block's band.
  const int64_t out_floats = s.N * s.K * OHW;
  const bool claim = claim_output_pays(static_cast<int>(std::min<int64_t>(threads, units * bands))) &&
                     !ranges_overlap(y, out_floats, x, s.N * s.C * HW) &&
                     !(epi.residual && ranges_overlap(y, out_floats, epi.residual, out_floats));
  parallel_for(units * bands, threads, [&](int64_t i0, int64_t i1) {
    const bool claimed_run = claim && bands == 1 &&
                             claim_for_write(y + i0 * kConvBlockWide * OHW,
                                             static_cast<int64_t>(sizeof(float)) * (i1 - i0) * kConvBlockWide * OHW);
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t unit = band_major ? i % units : i / bands, band = band_major ? i / units : i % bands;
      const int64_t n = unit / blocks, c0 = unit % blocks * kConvBlockWide;
      DepthwiseWideOut out = depthwise_wide_out(epi, c0);
      if (epi.residual) out.residual = epi.residual + (n * s.K + c0) * OHW;
      const int64_t oh0 = g.OH * band / bands, oh1 = g.OH * (band + 1) / bands;
      float* const yb = y + (n * s.K + c0) * OHW;
      if (claim && !claimed_run)
        claim_for_write(yb + oh0 * g.OW * kConvBlockWide,
                        static_cast<int64_t>(sizeof(float)) * (oh1 - oh0) * g.OW * kConvBlockWide);
      depthwise_wide_block_rows(g, x + (n * s.C + c0) * HW, depthwise_pair_weights(s, packed_w, c0), yb, oh0, oh1,
                                out);
    }
  });
}

}  // namespace kiln::kernels::detail

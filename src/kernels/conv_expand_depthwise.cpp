// An expanding 1x1 convolution and the depthwise convolution after it, band by band (conv.h,
// expand_depthwise). Apart, the 1x1 writes its whole expanded output (mobilenet_v2's 112x112 x
// 96 channels: 4.8 MB) and the depthwise layer reads it back from L3 or DRAM; here each band of
// depthwise output rows expands the input rows its windows reach into the thread's own scratch
// and the depthwise windows read them from there, in L2. The kernels are the two tactics' own
// (KernelTable's direct 1x1 tiles, depthwise_block), called on a band at a time, so the floats
// are theirs: each expanded value is the same sum over the same channels, each window the same
// taps in the same order.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conv_direct.h"
#include "depthwise_parts.h"
#include "depthwise_wide.h"
#include "expand_kept_rows.h"
#include "gemm_driver.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

using detail::ceil_div;

// v's floats from its first 64-byte line on, grown to hold `floats` past it.
float* aligned_floats(std::vector<float>& v, int64_t floats) {
  if (static_cast<int64_t>(v.size()) < floats + kLineFloats) v.resize(floats + kLineFloats);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

// Expanded bytes a band keeps (its input rows x all the expanded channels): under L2 (1-2 MiB
// on the hosts measured) beside the depthwise block's scratch. mobilenet_v2 on the 2-vCPU Zen 5
// host, two threads, against the two calls (median of 100-200 alternated pairs, in process):
// 112 -> 56 (96 channels) in bands of 2 / 4 / 7 output rows 0.83 / 0.72 / 0.75; 56 -> 28 (144)
// in 4 / 7 / 14 0.72 / 0.79 / 0.82; 28 -> 14 (192) in 7 0.69. 384 KiB makes those 4, 5 and 8.
constexpr double kBandBytes = 384 << 10;

// Output rows per band: as many as keep the band's expanded input rows within kBandBytes.
int64_t band_rows(const Conv2dShape& d) {
  const double row_bytes = 4.0 * static_cast<double>(d.C) * static_cast<double>(d.W);
  const int64_t rows_in = std::max<int64_t>(1, static_cast<int64_t>(kBandBytes / row_bytes));
  const int64_t reach = (d.R - 1) * d.dil_h + 1;  // input rows one output row's windows read
  return std::max<int64_t>(1, (rows_in - reach) / d.stride_h + 1);
}

// Floats between the 8-channel blocks (or planes) of an input in its own layout, and how many.
struct InputBlocks {
  int64_t count = 0, lanes = 1;  // lanes: channels per block (1: planar)
};
InputBlocks input_blocks(const Conv2dShape& e) {
  InputBlocks b;
  b.lanes = e.x_blocked ? e.x_block : 1;
  b.count = ceil_div(e.C, b.lanes);
  return b;
}

// Whether the expanded tensor goes into 16-channel blocks (detail::expand_wide_mid_enabled).
// conv_bench DepthwiseWideInPlace, one thread, against the 8-channel kernels on the same values
// (Zen 5): mobilenet_v2's 112 -> 56 0.82, 56 -> 28 0.69, 28 -> 14 0.70; efficientnet_b0's 5x5
// 56 -> 28 0.66, 3x3 28 -> 14 0.72. No channel means (the in-place kernel does not sum).
bool wide_mid(const KernelTable& t, const Conv2dShape& d, const Epilogue& epi2) {
  return detail::expand_wide_mid_enabled && t.isa == Isa::Avx512 && d.C % kConvBlockWide == 0 &&
         !epi2.channel_means && detail::depthwise_wide_in_place_supports(detail::depthwise_geometry(d));
}

// The depthwise windows of 16-channel blocks [c0, c0 + 16) of one image's expanded rows `mid`
// (band geometry g, x_plane floats between blocks) into the 8-channel output blocks at y (the
// first of the two; out_plane floats between blocks).
void wide_block(const DepthwisePlane& g, const float* mid, const float* w2, const Conv2dShape& d,
                const Epilogue& epi2, int64_t c0, float* y, int64_t out_plane, bool fetch_for_write) {
  detail::depthwise_wide_in_place_avx512(g, mid, detail::depthwise_pair_weights(d, w2, c0), y, y + out_plane,
                                         detail::depthwise_wide_out(epi2, c0), fetch_for_write);
}

// Claims (claim_for_write) `blocks` output blocks' bands of `bytes` each, `plane` floats apart
// from y; true when every one was claimed (a run too short is not, and is then fetched for
// writing instead).
bool claim_blocks(float* y, int64_t blocks, int64_t plane, int64_t bytes) {
  bool claimed = true;
  for (int64_t b = 0; b < blocks; ++b) claimed = claim_for_write(y + b * plane, bytes) && claimed;
  return claimed;
}

}  // namespace

namespace detail {
bool expand_keeps_rows = env_switch_on("KILN_EXPAND_KEEP_ROWS");
bool expand_wide_mid_enabled = env_switch_on("KILN_EXPAND_WIDE");
uint64_t next_banded_call() {
  static std::atomic<uint64_t> calls{0};
  return calls.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace detail

std::string expand_depthwise_unsupported(const Conv2dShape& e, const Conv2dShape& d) {
  if (std::string why = conv_tactic_unsupported(ConvTactic::Direct, e); !why.empty()) return "the expand: " + why;
  if (std::string why = conv_tactic_unsupported(ConvTactic::Depthwise, d); !why.empty())
    return "the depthwise convolution: " + why;
  if (e.R != 1 || e.S != 1 || e.stride_h != 1 || e.stride_w != 1 || e.padded() || e.group != 1)
    return "the expand is not a 1x1, stride-1, unpadded convolution of one group";
  if (e.x_padded || e.y_padded() || e.x_nhwc || e.y_nhwc || e.winograd || e.p64)
    return "the expand reads or writes padded planes or pixel-major activations";
  if (!e.y_blocked || e.y_block != kConvBlock || !d.x_blocked || !d.y_blocked || d.x_block != kConvBlock ||
      d.y_block != kConvBlock)
    return "the expanded tensor and the depthwise output are not in 8-channel blocks";
  if (e.N != d.N || e.K != d.C || e.H != d.H || e.W != d.W || d.C != d.K || d.group != d.C)
    return "the depthwise convolution does not read the expand's output channel by channel";
  if (!detail::depthwise_blocked(kernel_table())) return "this CPU's table has no channel-blocked depthwise kernel";
  return "";
}

// Two threads against the two calls (the pairs in kBandBytes's comment, same runs): strided
// layers gain 0.69-0.83 on maps of 28 rows or more; mobilenet_v2's 14 -> 7 (576 channels)
// 0.92-1.01. At stride 1 the bands re-expanded the rows their windows share with the next
// band's, and 56x56 (144 channels) in bands of 4 / 7 / 14 rows ran 1.07 / 1.05 / 1.03; 28x28 (192)
// 1.04. (Measured before the bands kept those rows, detail::KeptRows; an earlier carry of them
// left the model at 0.993 with the stride-1 pairs fused, BENCHMARKS.md.)
bool expand_depthwise_pays(const Conv2dShape& e, const Conv2dShape& d) {
  (void)e;
  return d.stride_h >= 2 && d.H >= 28;
}

size_t expand_depthwise_workspace_floats(const Conv2dShape& e, const Conv2dShape& d, int threads) {
  const size_t mid = static_cast<size_t>(e.N * e.K * e.H * e.W);
  // The expand may write 16-channel blocks instead (wide_mid, decided per call).
  Conv2dShape e16 = e;
  if (e.K % kConvBlockWide == 0) e16.y_block = kConvBlockWide;
  return mid + kLineFloats + std::max({conv_workspace_floats(ConvTactic::Direct, e, threads),
                                       conv_workspace_floats(ConvTactic::Direct, e16, threads),
                                       conv_workspace_floats(ConvTactic::Depthwise, d, threads)});
}

void expand_depthwise(const Conv2dShape& e, const Conv2dShape& d, const float* x, const float* w1,
                      const Epilogue& epi1, const float* w2, const Epilogue& epi2, float* y, float* workspace,
                      int threads) {
  std::string bad = expand_depthwise_unsupported(e, d);
  KILN_CHECK(bad.empty(), "expand + depthwise: ", bad);
  KILN_CHECK(!epi1.residual && !epi1.channel_means && !epi2.residual,
             "expand + depthwise: no residual on either convolution, no channel means on the expand");
  if (threads <= 0) threads = default_threads();
  const KernelTable& t = kernel_table();
  const int64_t OH = d.out_h(), OW = d.out_w();
  const int64_t rows_each = band_rows(d);
  // Bands a multiple of the threads, so that each takes as many.
  int64_t bands = ceil_div(OH, rows_each);
  if (threads > 1 && bands > 1) bands = std::min(OH, detail::round_up(bands, threads));
  const int64_t parts = d.N * bands;
  const int64_t expanded_bytes = static_cast<int64_t>(sizeof(float)) * e.N * e.K * e.H * e.W;
  const bool wide = wide_mid(t, d, epi2);
  if ((parts == 1 || !expand_depthwise_bands_pay(expanded_bytes, threads)) && workspace) {
    // The two calls, the expanded tensor in the workspace (expand_depthwise_workspace_floats): on
    // one thread, and where the cores share an L3 and the threads' L2s hold the expanded tensor
    // (expand_depthwise_bands_pay).
    float* mid = workspace;
    float* rest = mid + static_cast<size_t>(e.N * e.K * e.H * e.W) + kLineFloats;
    if (!wide) {
      conv2d(ConvTactic::Direct, e, x, w1, mid, epi1, rest, threads);
      conv2d(ConvTactic::Depthwise, d, mid, w2, y, epi2, rest, threads);
      return;
    }
    Conv2dShape e16 = e;
    e16.y_block = kConvBlockWide;
    conv2d(ConvTactic::Direct, e16, x, w1, mid, epi1, rest, threads);
    // The 16-channel blocks of every image, on more than one thread each cut into two or more
    // bands of rows: pieces of half a block or less, so that an odd count of blocks (mobilenet_v2's
    // 56 -> 28 has 9) still shares out evenly. Each piece claims its two output bands or fetches
    // them for writing where that pays, as the bands below do.
    const DepthwisePlane g = detail::depthwise_geometry(d);
    const int64_t units = d.N * (d.C / kConvBlockWide), OHW = OH * OW, HW = d.H * d.W;
    const int64_t want = int64_t{threads} * kPiecesPerThread;
    const int64_t row_bands = threads == 1 ? 1 : std::min(OH, std::max<int64_t>(2, ceil_div(want, units)));
    const bool fetch = write_prefetch_pays(threads), claim = claim_output_pays(threads);
    parallel_for(units * row_bands, std::min<int64_t>(threads, units * row_bands), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t unit = i / row_bands, band = i % row_bands;
        const int64_t n = unit / (d.C / kConvBlockWide), c0 = unit % (d.C / kConvBlockWide) * kConvBlockWide;
        const detail::DepthwiseBand bd = detail::depthwise_band(g, OH * band / row_bands, OH * (band + 1) / row_bands);
        float* yb = y + (n * d.K + c0) * OHW + bd.out_offset * kConvBlock;
        const bool claimed = claim && claim_blocks(yb, kConvBlockWide / kConvBlock, kConvBlock * OHW,
                                                   static_cast<int64_t>(sizeof(float)) * kConvBlock * bd.g.OH * OW);
        wide_block(bd.g, mid + (n * d.C + c0) * HW + bd.x_offset * kConvBlockWide, w2, d, epi2, c0, yb,
                   kConvBlock * OHW, fetch && !claimed);
      }
    });
    return;
  }
  const DepthwisePlane whole = detail::depthwise_geometry(d);
  const InputBlocks in = input_blocks(e);
  const int64_t lanes = t.simd_width, RS = d.R * d.S;
  const int64_t out_plane = kConvBlock * OH * OW;  // floats between the output's 8-channel blocks
  const bool fetch_out = write_prefetch_pays(threads), claim = claim_output_pays(threads);
  Epilogue e1 = epi1;
  e1.bias_per_row = true;
  // epi2.channel_means: each part's sums of its band's outputs, per channel, in double
  // (TileEpilogue::sums, the kernel adding as it writes), sums[part][k]; the bands of each image
  // are added in order after the region. (The calling thread's vector, through a plain pointer.)
  thread_local std::vector<double> own_sums;
  if (epi2.channel_means) own_sums.assign(static_cast<size_t>(parts * d.K), 0.0);
  double* const sums = own_sums.data();
  // The tallest band's input rows: every band's expanded rows sit in planes of this many rows, so
  // that the rows two bands share stay where they are in each block's plane, moved up only.
  // On shares (below) the bands follow the threads' speeds: planes for the tallest such band.
  const bool by_shares = d.N == 1 && bands % threads == 0 && !epi2.channel_means;
  int64_t plane_rows = 0;
  for (int64_t b = 0; b < bands; ++b)
    plane_rows = std::max(plane_rows, detail::depthwise_band(whole, OH * b / bands, OH * (b + 1) / bands).g.H);
  if (by_shares) {
    // The input rows the tallest share band's windows can reach (an inner band's: edge bands
    // reach fewer).
    const int64_t tallest = detail::share_band_max_rows(OH, bands, threads);
    plane_rows = std::max(plane_rows, std::min(d.H, (tallest - 1) * d.stride_h + (d.R - 1) * d.dil_h + 1));
  }
  const int64_t mb = wide ? kConvBlockWide : kConvBlock;  // channels per expanded block
  const int64_t mid_blocks = ceil_div(e.K, mb);
  const int64_t x_plane = mb * plane_rows * e.W;  // floats between the expanded blocks
  const int64_t row_floats = e.W * mb;            // one expanded row of one block
  const uint64_t call = detail::next_banded_call();
  // Output rows [oh0, oh1) of image n, band `part` of the sums.
  auto run_band = [&](int64_t part, int64_t n, int64_t oh0, int64_t oh1) {
    // This thread's: the band's input rows (when the input has more than one block), its
    // expanded rows, and the depthwise block's scratch. Kept between calls.
    thread_local std::vector<float> own_in, own_mid, own_scratch;
    thread_local detail::KeptRows kept_rows;
    float* mid = aligned_floats(own_mid, mid_blocks * x_plane);
    detail::DepthwiseBand bd = detail::depthwise_band(whole, oh0, oh1);
    const int64_t r0 = bd.x_offset / d.W, rows = bd.g.H;
    // The rows this band shares with the one this thread ran before it (a pool thread runs its
    // own parts in order): moved up to the top of each block's plane instead of expanded again.
    // At stride 2 a band's first input row is the previous band's last (mobilenet_v2's 112 ->
    // 56 in bands of 7 input rows: 1 in 7 expanded twice).
    const int64_t kept =
        kept_rows.take(call, n, mid, r0, rows, mid_blocks, x_plane, row_floats, detail::expand_keeps_rows);
    if (kept < rows) {
      // The expand's input rows [r0 + kept, r0 + rows): in place when they are one run.
      const int64_t fresh = rows - kept;
      const float* xn = x + n * e.x_image_floats();
      const int64_t run = fresh * e.W * in.lanes;
      const float* xb = xn + (r0 + kept) * e.W * in.lanes;
      if (in.count > 1) {
        float* copy = aligned_floats(own_in, in.count * run);
        for (int64_t k = 0; k < in.count; ++k)
          std::memcpy(copy + k * run, xb + k * e.H * e.W * in.lanes, sizeof(float) * run);
        xb = copy;
      }
      Conv2dShape eb = e;
      eb.N = 1, eb.H = fresh, eb.whole_out_h = e.out_h(), eb.y_plane_rows = plane_rows, eb.y_block = mb;
      conv2d(ConvTactic::Direct, eb, xb, w1, mid + kept * row_floats, e1, nullptr, 1);
    }
    float* yn = y + n * d.K * OH * OW;
    // Each output block's band: claimed when long enough, else fetched for writing as the kernel goes.
    const int64_t band_bytes = static_cast<int64_t>(sizeof(float)) * kConvBlock * bd.g.OH * OW;
    if (wide) {
      for (int64_t c0 = 0; c0 < d.K; c0 += kConvBlockWide) {
        const int64_t yo = c0 * OH * OW + bd.out_offset * kConvBlock;
        const bool claimed = claim && claim_blocks(yn + yo, kConvBlockWide / kConvBlock, out_plane, band_bytes);
        wide_block(bd.g, mid + c0 / kConvBlockWide * x_plane, w2, d, epi2, c0, yn + yo, out_plane,
                   fetch_out && !claimed);
      }
      return;
    }
    // The band's depthwise windows over the expanded rows (depthwise_blocks, on one band).
    float* scratch = aligned_floats(own_scratch, depthwise_block_scratch(bd.g, static_cast<int>(lanes)).floats);
    bool padding_zeroed = false;
    for (int64_t c0 = 0; c0 < d.K; c0 += lanes) {
      const int nc = static_cast<int>(std::min(lanes, d.K - c0));
      const int64_t yo = c0 * OH * OW + bd.out_offset * kConvBlock;
      TileEpilogue te = detail::depthwise_epilogue(epi2, c0, TileEpilogue::Bias::PerRow, yo, out_plane);
      if (detail::depthwise_has_pair_copy(d)) te.pair_weights = detail::depthwise_pair_weights(d, w2, c0);
      const bool claimed = claim && claim_blocks(yn + yo, ceil_div(nc, kConvBlock), out_plane, band_bytes);
      te.fetch_for_write = fetch_out && !claimed;
      if (epi2.channel_means) te.sums = sums + part * d.K + c0;
      t.depthwise_block(bd.g, mid + c0 / kConvBlock * x_plane, x_plane, nc, w2 + c0 * RS, scratch,
                        &padding_zeroed, yn + yo, out_plane, te, true, true);
    }
  };
  if (by_shares) {
    // One image: the threads' shares of the rows, sized by their measured speeds on this pair
    // (keyed by its expand weights), each thread's bands run in order (the rows two of them
    // share kept). Not with channel means: their sums would then follow the cut, and the cut
    // the measured speeds.
    detail::for_share_bands(OH, bands, threads, w1, [&](int64_t oh0, int64_t oh1) { run_band(0, 0, oh0, oh1); });
  } else {
    parallel_for(parts, std::min<int64_t>(threads, parts), [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t b = part % bands;
        run_band(part, part / bands, OH * b / bands, OH * (b + 1) / bands);
      }
    });
  }
  if (epi2.channel_means) {
    const double count = static_cast<double>(OH * OW);
    for (int64_t n = 0; n < d.N; ++n)
      for (int64_t k = 0; k < d.K; ++k) {
        double total = 0;
        for (int64_t b = 0; b < bands; ++b) total += sums[(n * bands + b) * d.K + k];
        epi2.channel_means[n * d.K + k] = static_cast<float>(total / count);
      }
  }
}

}  // namespace kiln::kernels

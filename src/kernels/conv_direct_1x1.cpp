// The direct tactic's 1x1 schedule (conv_direct_1x1.h).
//
// Why a schedule of its own: the general one (conv_direct.cpp) runs a 14 x 32 tile over all of
// K at once, its weight block in L2, and reads two weight lines from L2 per step. Here a 7 x 64
// tile (28 accumulators, four weight vectors per step) runs over 128 input channels at a time,
// so the batch's weight rows stay in L1 across the tiles, and the tile adds into the partial
// sums it stored in the output for the batch before. In-process A/B on the Ice Lake server (one
// thread, resnet50's 1x1 layers with their epilogues, 150 call-by-call pairs, time ratios
// against the general schedule): 0.91-0.96 from 56x56 to 14x14, 64 to 1024 input channels;
// mobilenet_v2's 0.85-0.89. (Batches of 64 or 256 channels, a 6 x 64 tile, a 14 x 32 tile on
// the same schedule and a software prefetch of the weight rows measured the same or slower;
// see docs/kernels.md.)
//
// Numerics: the sums run batch by batch, ((batch 1 + bias) + residual) + batch 2 + ..., where
// the general schedule adds its K steps in one chain and then the bias and the residual: the
// same floats for one batch (up to 128 input channels), plain fp32 sums of the same products
// beyond, well inside the 1e-4 relative tolerance.
#include "conv_direct_1x1.h"

#include <algorithm>

#include "conv_direct.h"
#include "gemm_driver.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::detail {
namespace {

constexpr int64_t kCols = 64;             // output channels per tile: two NR = 32 panels
constexpr int64_t kBatchChannels = 128;   // input channels per batch
constexpr int64_t kRows = kConv1x1Rows;   // pixels per full tile
// Fewest tiles an image: on 7x7 outputs (7 tiles) a batch's weight rows serve 7 tiles before
// the next batch's come in, where the general schedule streams its weight block from L2 with a
// prefetch: 2048 -> 512 at 7x7 1.04, 512 -> 2048 1.01, mobilenet_v2's 160 -> 960 1.00 (one
// thread, in-process pairs), against 0.91-0.96 from 14x14 up.
constexpr int64_t kMinTiles = 16;
// Weights up to which the threads split the pixels even where the weight is the larger operand
// (conv_1x1_splits_groups). Split by pixels, each thread writes the output rows that the layers
// after it read on the same thread (the next 1x1 cuts pixels too, depthwise_wide row bands),
// where split by output channels half of every pixel's channels came from the other core.
// mobilenet_v2's 14x14 expands (64 -> 384 .. 96 -> 576: 96-216 KiB of weights on 0.2-0.3 MiB
// of input) cut pixels; resnet50's layer3 and layer4 1x1s (1-4 MiB on 0.2-0.8 MiB of input)
// keep the groups: cut by pixels there, each thread reading all of the weights, resnet50 ran
// 1.036 of the time (docs/kernels.md). Zen 5,
// two threads, with the row bands of depthwise_wide, the new and old binary alternated:
// mobilenet_v2's 14x14 blocks' kernels 1.185 -> 1.126 ms (kiln profile), the model 0.982 of
// the time (median of 10 pairs of 100 runs), efficientnet_b0 1.00 and resnet50 1.004 (even).
constexpr int64_t kTileSplitMaxWeightBytes = 512 << 10;

}  // namespace

bool direct_1x1_enabled = env_switch_on("KILN_DIRECT_1X1");

bool conv_1x1_splits_groups(const Conv2dShape& s) {
  return s.K >= s.H * s.W && s.C * s.K * static_cast<int64_t>(sizeof(float)) > kTileSplitMaxWeightBytes;
}

int conv_1x1_slot(const Conv2dShape& s) {
  return (s.x_block == kConvBlockWide ? 2 : 0) + static_cast<int>(s.stride_w) - 1;
}

bool direct_1x1_applies(const KernelTable& t, const Conv2dShape& s, const Epilogue& e) {
  if (!direct_1x1_enabled) return false;
  return t.conv_1x1_blk[conv_1x1_slot(s)][kRows - 1] && t.conv_shape.nr * 2 == kCols && s.group == 1 && s.R == 1 && s.S == 1 &&
         s.stride_h >= 1 && s.stride_h <= 2 && s.stride_w >= 1 && s.stride_w <= 2 && !s.padded() && s.x_blocked &&
         s.y_blocked && s.K % kCols == 0 &&
         (s.whole_out_h ? s.whole_out_h : s.out_h()) * ceil_div(s.out_w(), kRows) >= kMinTiles &&
         e.alpha == 1.f && ConvTileOut::fused_act(e.act);
}

void conv_direct_1x1_image(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                           const Epilogue& e, int threads) {
  const int64_t NR = t.conv_shape.nr, KK = s.C;
  const int64_t OH = s.out_h(), OW = s.out_w(), OHW = OH * OW;
  const int64_t bi = s.x_block, bo = s.y_block;  // channels per input / output block
  const int64_t in_block = s.H * s.W * bi;       // floats between the input's channel blocks (unpadded)
  const int64_t out_row = OW + s.y_pad_left + s.y_pad_right;
  const int64_t out_plane = (s.y_plane_rows ? s.y_plane_rows : OH + s.y_pad_top + s.y_pad_bottom) * out_row;
  const int64_t res_plane = s.y_plane_rows ? out_plane : OHW;  // the residual's (never padded)
  // Tiles run along output rows (a row's last one may be short), so none crosses a row of
  // padded planes.
  const int64_t tiles_per_row = ceil_div(OW, kRows), tiles = OH * tiles_per_row;
  const int64_t batch_blocks = kBatchChannels / bi;
  const int64_t groups = s.K / kCols, batches = ceil_div(KK / bi, batch_blocks);
  const Conv1x1Kernel* const kernels = t.conv_1x1_blk[conv_1x1_slot(s)];
  // Threads split the tiles (each then reads its share of the input, once per 64 channels,
  // from its own L2, and writes the pixels the next layers read on that thread) unless the
  // weight is the larger operand and large (resnet50's layer3 and layer4: 1-4 MiB of weights on
  // 0.2-0.8 MiB of input): then the 64-channel groups, each read once (conv_1x1_splits_groups).
  int64_t tile_parts = 1, group_parts = 1;
  const UnitShares shares{groups, tiles, threads};
  bool split_rest = false;
  if (threads > 1) {
    const int64_t want = threads * kPiecesPerThread;
    if (conv_1x1_splits_groups(s)) group_parts = std::min(groups, want);
    else tile_parts = std::min(tiles, want);
    // Groups the threads cannot share evenly (9 groups: 4 for one thread and 5 for the other):
    // shared out as UnitShares says. Two threads, in-process pairs (Xeon 5th gen), when
    // mobilenet_v2's 96 -> 576 expands at 14x14 still split groups: those expands 0.90-0.94
    // inside mobilenet_v2, the depthwise layers after them 1.05-1.07 (they read more of the
    // other core's output), the model 0.982 (100 pairs); alone, hot in cache, 0.996-1.004.
    split_rest = group_parts > 1 && shares.uneven();
  }
  // Weights not in L2 when the layer starts (resnet50's layer3 and layer4 1x1s from DRAM,
  // mobilenet_v2's 14x14 ones from L3; conv_direct's kStreamWeightBytes): the tiles of each
  // batch fetch the batch this item runs next into L2.
  const bool stream = streams_weights(s);
  const int64_t items = split_rest ? shares.items() : tile_parts * group_parts;
  // The first group of an item (its tiles' fetches of the next batch end with the item's last).
  auto first_group = [&](int64_t item) {
    return split_rest ? shares.item(item).unit : tapered_start(groups, group_parts, threads, item / tile_parts);
  };
  // next_item: the item this thread runs after this one (-1: none), whose first batch the last
  // batch's tiles fetch (without it each item began on weights in L3: at two threads
  // mobilenet_v2's 14x14 expands 0.95-0.955 with it, its 64 -> 384 ones 0.97, the models 0.995
  // (mobilenet_v2, 100 pairs) and 0.989 (resnet50); in-process pairs, Xeon 5th gen).
  const bool fetch_out = write_prefetch_pays(threads);
  auto run_item = [&](int64_t item, int64_t next_item) {
    const int64_t gp = item / tile_parts, tp = item % tile_parts;
    // (One of tile_parts and group_parts is 1: the items are the parts of the other, each a
    // piece, cut smaller toward the end of each thread's share: tapered_start.)
    int64_t g0 = tapered_start(groups, group_parts, threads, gp);
    int64_t g1 = tapered_start(groups, group_parts, threads, gp + 1);
    int64_t t0 = tapered_start(tiles, tile_parts, threads, tp), t1 = tapered_start(tiles, tile_parts, threads, tp + 1);
    if (split_rest) {  // a whole group, or a thread's share of a group left over
      const UnitShares::Item it = shares.item(item);
      g0 = it.unit, g1 = g0 + 1, t0 = it.t0, t1 = it.t1;
    }
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t k0 = g * kCols;
      const float* w = packed_w + (k0 / NR) * KK * NR;  // the group's first panel; the second KK * NR on
      for (int64_t bt = 0; bt < batches; ++bt) {
        const int64_t b0 = bt * batch_blocks, nb = std::min(batch_blocks, KK / bi - b0);
        const bool first = bt == 0, last = bt + 1 == batches;
        // The next batch's weight rows in both panels (this group's next batch, or the next
        // group's first), shared out among this batch's tiles.
        const float* next_w = nullptr;
        int64_t next_rows = 0;
        if (stream && bt + 1 < batches) {
          next_w = w + (b0 + nb) * bi * NR, next_rows = std::min(batch_blocks, KK / bi - b0 - nb) * bi;
        } else if (stream && g + 1 < g1) {
          next_w = packed_w + ((k0 + kCols) / NR) * KK * NR, next_rows = std::min(batch_blocks, KK / bi) * bi;
        } else if (stream && next_item >= 0 && first_group(next_item) != g) {
          next_w = packed_w + (first_group(next_item) * kCols / NR) * KK * NR;
          next_rows = std::min(batch_blocks, KK / bi) * bi;
        }
        L2Shares shares(next_w, next_rows * NR / kLineFloats, 2, KK * NR, t1 - t0);
        // Tile ti's output row and its place there, stepped rather than divided per tile.
        int64_t oh = t0 / tiles_per_row, col = t0 % tiles_per_row;
        for (int64_t ti = t0; ti < t1; ++ti, col = col + 1 == tiles_per_row ? 0 : col + 1, oh += col == 0) {
          const ConvL2Lines l2 = shares.next();
          const int64_t ow = col * kRows;
          const int64_t rows = std::min(kRows, OW - ow), pix = oh * OW + ow;
          ConvTileOut o;
          o.dst = y + k0 * out_plane + ((oh + s.y_pad_top) * out_row + ow + s.y_pad_left) * bo;
          o.block_stride = bo * out_plane, o.block = bo;
          if (e.bias) o.bias = e.bias + k0;
          if (e.residual) o.residual = e.residual + k0 * res_plane + pix * bo;  // never padded
          o.act = e.act, o.act_alpha = e.act_alpha, o.act_beta = e.act_beta;
          o.fetch_for_write = fetch_out;
          const float* a = x + b0 * in_block + (oh * s.stride_h * s.W + ow * s.stride_w) * bi;
          kernels[rows - 1](a, in_block, nb, w + b0 * bi * NR, KK * NR, first, last, o, l2.count > 0 ? &l2 : nullptr);
        }
      }
    }
  };
  parallel_for(items, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      run_item(i, i + 1 < items && parallel_owner(items, threads, i + 1) == parallel_owner(items, threads, i) ? i + 1
                                                                                                              : -1);
  });
}

}  // namespace kiln::kernels::detail

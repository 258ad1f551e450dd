// The direct convolution tactic (conv_direct.h).
#include "conv_direct.h"
#include "conv_winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "conv_direct_1x1.h"
#include "conv_pixel.h"
#include "conv_stem.h"
#include "gemm_driver.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"
#include "pair_tail.h"

namespace kiln::kernels::detail {
namespace {

// Input bytes one chunk of tiles reads: the share of L2 left to it next to the weight block.
constexpr double kChunkInputBytes = 256 << 10;
// Channels per block of the blocked copy of a planar input (Plan::blocked).
constexpr int64_t kBlock = kConvBlock;
// Output rows from which windows take the table's 6 x 64 tile (KernelTable::conv_tile_p64).
// In-process pairs against the 14 x 32 tile (64-byte aligned buffers, 3x3, 16-channel padded
// planes unless said; Xeon 5th gen, one / two threads): 56x56 0.937 / 0.955, 28x28 0.941 /
// 0.932, 14x14 (256 channels) 0.958 / 0.986, 7x7 (512) 1.079 (6 + 1 pixels a row: kept on
// 14 x 32); from a copy of 8-channel blocks at stride 2, to 28x28 0.923 (two threads), to 14x14
// 0.924 / 0.930; the 7x7/2 stem 0.905 / 0.924. But inside resnet18 (profiles of the two
// artifacts alternated, one thread) layer3's 14x14 convolutions that copy their input (cold
// 8-channel block outputs, weights from L3) ran 1.05-1.09x on it, the ones on padded planes
// 0.975-0.98: a net loss, so rows from 24 (56, 28; 14 and 7 stay). Narrower layers (under 64
// channels) keep 14 x 32: a 16-column 6-row tile has 6 accumulators, too few for the FMA latency
// (mobilenet_v2's 16- to 32-channel projections ran 1.22-1.31x slower on it, on Ice Lake). 1x1
// layers keep theirs (their own schedule, conv_direct_1x1.cpp, runs 64 columns over two
// 32-column panels).
constexpr int64_t kP64MinRow = 24;


// Whether wrap tiles may write s's padded output planes: a vector of the tile is one pixel's
// block (16-channel blocks on 16 lanes, 8 on 8), so the second row's pixels move as a whole
// (ConvTileOut::row_jump). 8-channel blocks on 16 lanes store two pixels a vector.
bool wraps_into_padded(const KernelTable& t, const Conv2dShape& s) {
  return s.y_blocked && s.y_block == t.simd_width;
}

// Where everything is, for one shape on one table.
struct Plan {
  int mr = 0, nr = 0;            // the register tile: the table's conv_shape, or conv_shape_p64
  bool p64 = false;              // on conv_tile_p64 / conv_wrap_p64
  bool flat = false;             // 1x1, stride 1, unpadded: the image's pixels are one row
  bool copy = false;             // padded, not x_padded: the kernel reads a zero-padded copy of
                                 // the input (x_padded: the input's own padded planes, in place)
  int64_t Hp = 0, Wp = 0, plane = 0;  // the planes the kernel reads (the input's own unless copy)
  int64_t OH = 0, OW = 0, OHW = 0;
  int sw = 1;                    // input floats between consecutive output pixels
  // The copy is channel-blocked, [C/kBlock][Hp][Wp][kBlock]: a tile's pixels for the kBlock
  // channels of one tap lie in a few consecutive lines (6 pixels: 3 lines for 8 steps), where
  // plane by plane each step reads a line of its own. resnet50's 3x3 layers on Zen 3 went
  // 82-88 -> 90-92 GFLOP/s at stride 1 and 54-78 -> 64-86 at stride 2, copy included.
  // Blocked activations (Conv2dShape::x_blocked) are read the same way: in place when the
  // convolution does not pad, else through the padded copy, whose rows are then plain copies.
  bool blocked = false;
  // Planar input of fewer channels than window columns (the RGB stems: 3 channels, 7 or 3
  // columns): K runs (window row, channel, window column), so that a segment is one channel's
  // window row, S steps dil_w floats apart, not one tap's C channels (the 7x7/2 stem's 147
  // steps were 49 segments of 3, now 21 of 7: 0.96 of the time in process and inside resnet18
  // at one and two threads, Xeon 5th gen; cutting its K in two or three blocks to keep the
  // weights in L1 measured 1.04 / 1.09).
  bool taps_inner = false;
  int64_t bi = kBlock;           // channels per block of the blocked input or copy (x_block)
  int64_t row_step = 0;          // input floats between consecutive output rows
  bool wide = false;             // tiles of up to mr/2 pixels by 2*nr channels
  bool wrap = false;             // tiles of mr consecutive pixels, wrapping to the next row
  int tile = 0;                  // pixels per full tile
  int64_t tiles_per_row = 0, tiles = 0;
  int64_t unit_cols = 0, units = 0;  // output channels per column unit (nr or 2 nr), units
  int64_t KK = 0, kc = 0, kblocks = 0;
  int64_t panel = 0;  // rows between the packed weight's panels (Conv2dShape::w_panel_rows)
  int64_t chunk_tiles = 0, chunks = 0;
  // Finished tiles transposed into NCHW together, up to this many consecutive ones: one 6-pixel
  // tile (AVX2's mr) wrote each channel's 6 floats with a masked store, 3-9% of resnet50's 3x3
  // layers; 4 tiles are 24 pixels, three whole vectors per channel.
  int64_t group_tiles = 1;
  size_t copy_floats() const { return copy ? static_cast<size_t>(plane) : 0; }  // per channel
  size_t slot_floats() const {  // one thread's C tiles: the chunk's when K is blocked
    return static_cast<size_t>(std::max(kblocks > 1 ? chunk_tiles : 1, group_tiles) * tile * unit_cols);
  }
};

// Whether the kernel reads the input (or its padded copy) in channel blocks, and of how many
// channels; and the K blocks that follows from it (plan_for's, direct_k_blocks's).
struct InputBlocks {
  bool blocked = false;
  int64_t bi = kBlock;
};
InputBlocks input_blocks(const KernelTable& t, const Conv2dShape& s) {
  const bool copy = s.padded() && !s.x_padded;  // an x_padded input already lies in the padded planes
  InputBlocks b{s.x_blocked || (copy && s.C % kBlock == 0), s.x_blocked ? s.x_block : kBlock};
  // The 6 x 64 tile's padded copy at stride 1 is made of 16-channel blocks whatever the input's
  // (a pixel's 16 channels on one line, 16-step segments): in-process pairs on one core (Xeon,
  // 5th gen), 3x3 64 -> 64 at 56x56 from a copy of 8-channel blocks, 6 x 64 against 14 x 32
  // 0.999; from a copy of 16-channel blocks 0.944. resnet18's block outputs (8-channel blocks:
  // the next stage's stride-2 readers take no 16) are copied this way by each block's conv1.
  if (copy && s.p64 && s.stride_w == 1 && t.simd_width == kConvBlockWide && s.C % kConvBlockWide == 0)
    b = {true, kConvBlockWide};
  return b;
}
DirectKBlocks k_blocks(int64_t KK, const InputBlocks& b) {
  DirectKBlocks k;
  k.kblocks = ceil_div(KK, kDirectKc);
  k.kc = ceil_div(KK, k.kblocks);
  if (b.blocked) k.kc = round_up(k.kc, b.bi), k.kblocks = ceil_div(KK, k.kc);  // blocks end on whole channel blocks
  return k;
}

Plan plan_for(const KernelTable& t, const Conv2dShape& s, bool flat = true) {
  Plan p;
  p.p64 = s.p64;
  const ConvTileShape shape = p.p64 ? t.conv_shape_p64 : t.conv_shape;
  p.mr = shape.mr, p.nr = shape.nr;
  p.OH = s.out_h(), p.OW = s.out_w(), p.OHW = p.OH * p.OW;
  p.copy = s.padded() && !s.x_padded;  // an x_padded input already lies in the padded planes
  p.flat = flat && s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && !s.padded();
  p.Hp = s.H + s.pad_top + s.pad_bottom, p.Wp = s.W + s.pad_left + s.pad_right, p.plane = p.Hp * p.Wp;
  p.sw = p.flat ? 1 : static_cast<int>(s.stride_w);
  p.row_step = s.stride_h * p.Wp;
  const InputBlocks ib = input_blocks(t, s);
  p.blocked = ib.blocked, p.bi = ib.bi;
  if (p.blocked) p.sw *= static_cast<int>(p.bi), p.row_step *= p.bi;
  p.taps_inner = !p.blocked && s.S > s.C;
  const int64_t row_len = p.flat ? p.OHW : p.OW;
  const int mr = p.mr;
  // Rows whose width is not a multiple of mr would end in a short tile whose few accumulators
  // leave the FMA units waiting on latency (AVX2's mr = 6 on 7- to 56-wide rows: 7 = 6 + 1):
  // tiles then take the next mr pixels in output order, wrapping to the next row
  // (conv_tile_wrap), as long as no tile spans three rows. Rows too short for that get half
  // the pixels and twice the channels instead.
  // Into padded output planes (whose rows lie apart) a wrap tile stores its second row's pixels
  // past the border (ConvTileOut::row_jump), where a vector is one pixel's block; else the
  // 6 x 64 tile (which has no wide form) ends each row in a short tile there (56 = 9 x 6 + 2).
  // Wrapped, 3x3 64 -> 64 at 56x56 into padded planes ran 0.96-0.99 of the time and resnet18
  // 0.989 / 0.991 at one / two threads (in-process pairs, Xeon 5th gen).
  p.wrap = !p.flat && !(p.p64 && s.y_padded() && !wraps_into_padded(t, s)) && conv_direct_wraps(mr, p.OH, p.OW);
  p.wide = !p.p64 && !p.wrap && conv_direct_wide(mr, row_len);
  p.tile = static_cast<int>(p.wrap ? mr : std::min<int64_t>(p.wide ? mr / 2 : mr, row_len));
  p.tiles_per_row = p.wrap ? 0 : ceil_div(row_len, p.tile);
  p.tiles = p.wrap ? ceil_div(p.OHW, mr) : (p.flat ? 1 : p.OH) * p.tiles_per_row;
  p.unit_cols = (p.wide ? 2 : 1) * p.nr;
  p.units = ceil_div(s.K, p.unit_cols);
  p.KK = s.C * s.R * s.S;
  p.panel = s.w_panel_rows ? s.w_panel_rows : p.KK;
  const DirectKBlocks kb = k_blocks(p.KK, ib);
  p.kc = kb.kc, p.kblocks = kb.kblocks;
  // Input bytes a tile brings in: its pixels' channels (flat), or its share of the stride_h
  // new input rows each output row reads.
  const double per_tile = p.flat   ? 4.0 * p.tile * s.C
                          : p.wrap ? 4.0 * s.stride_h * p.Wp * s.C * p.tile / p.OW
                                   : 4.0 * s.stride_h * p.Wp * s.C / p.tiles_per_row;
  // Each chunk reads the whole weight again: weights larger than the input (resnet50's layer4:
  // 8 MiB against 0.8 MiB) make one chunk of every tile, so they stream from DRAM once.
  const double weight_bytes = 4.0 * p.KK * s.K, input_bytes = 4.0 * s.C * p.plane;
  p.chunk_tiles = weight_bytes >= input_bytes
                      ? p.tiles
                      : std::clamp<int64_t>(static_cast<int64_t>(kChunkInputBytes / per_tile), 1, p.tiles);
  p.chunks = ceil_div(p.tiles, p.chunk_tiles);
  p.chunk_tiles = ceil_div(p.tiles, p.chunks);  // equal chunks
  // Tiles whose pixels make whole vectors: simd_width / gcd(tile, simd_width).
  p.group_tiles = t.simd_width / std::gcd<int64_t>(p.tile, t.simd_width);
  // Into padded output planes a flat tile must end where a row ends. Where it does not (AVX2's
  // 6 pixels on 56-, 28-, 14- and 7-wide rows) the 1x1 runs row tiles instead, which wrap past
  // the border like any window's: else the producer refused the planes and its reader copied
  // them padded.
  if (p.flat && s.y_padded() && p.OW % p.tile != 0) return plan_for(t, s, false);
  return p;
}

// The K block [q0, q1) as runs of channels within one tap, offsets from a tile's input base,
// into `out` (cleared first; its capacity is kept, so a warm caller does not allocate).
void segments(const Conv2dShape& s, const Plan& p, int64_t q0, int64_t q1, std::vector<ConvSegment>& out) {
  out.clear();
  for (int64_t q = q0; q < q1;) {
    if (p.taps_inner) {  // one channel's window row: consecutive taps dil_w floats apart
      const int64_t kh = q / (s.C * s.S), c = q / s.S % s.C, kw = q % s.S;
      const int64_t n = std::min(s.S - kw, q1 - q);
      out.push_back({kh * s.dil_h * p.Wp + kw * s.dil_w + c * p.plane, n});
      q += n;
      continue;
    }
    const int64_t tap = q / s.C, c = q % s.C;
    const int64_t kh = tap / s.S, kw = tap % s.S;
    if (p.blocked) {  // one channel block's run: consecutive floats (a_step 1)
      const int64_t B = p.bi;
      const int64_t n = std::min(B - c % B, q1 - q);
      const int64_t tap_off = (kh * s.dil_h * p.Wp + kw * s.dil_w) * B;
      out.push_back({(c / B) * p.plane * B + tap_off + c % B, n});
      q += n;
      continue;
    }
    const int64_t n = std::min(s.C - c, q1 - q);
    out.push_back({kh * s.dil_h * p.Wp + kw * s.dil_w + c * p.plane, n});
    q += n;
  }
}

// Rows [r0, r1) of every padded plane: planes[c] = x[c] with the convolution's zero padding
// around it. Cut by rows, like the tiles that read them (see conv_direct), so that each thread
// copies (and then reads) the rows of its own share of the output. `borders`: also write the
// padding (the first image of a call; the later ones reuse it, since only the interior changes:
// for small images, e.g. digits_cnn's 8x8, the padding took as long as the copy). `claim`:
// each group's rows are claimed first (claim_for_write; their padding is zeros either way).
void copy_padded_rows(const KernelTable& t, const Conv2dShape& s, const Plan& p, const float* x, int64_t r0,
                      int64_t r1, float* planes, bool borders, bool claim) {
  // Planar: groups of one channel, one float per pixel. Blocked: groups of p.bi channels,
  // whose rows are transposed pixel-major.
  const int64_t lanes = p.blocked ? p.bi : 1, row = p.Wp * lanes;
  for (int64_t g = 0; g < s.C / lanes; ++g) {
    if (claim) claim_for_write(planes + (g * p.Hp + r0) * row, static_cast<int64_t>(sizeof(float)) * (r1 - r0) * row);
    for (int64_t r = r0; r < r1; ++r) {
      float* dst = planes + (g * p.Hp + r) * row;
      const int64_t h = r - s.pad_top;
      if (h < 0 || h >= s.H) {
        if (borders) std::fill(dst, dst + row, 0.f);
        continue;
      }
      if (borders) {
        std::fill(dst, dst + s.pad_left * lanes, 0.f);
        std::fill(dst + (s.pad_left + s.W) * lanes, dst + row, 0.f);
      }
      const float* src = x + (g * lanes * s.H + h) * s.W;
      float* const at = dst + s.pad_left * lanes;
      if (s.x_blocked && s.x_block == lanes) {
        std::memcpy(at, x + (g * s.H + h) * s.W * lanes, sizeof(float) * s.W * lanes);
      } else if (s.x_blocked) {  // two 8-channel blocks' rows interleaved into one of 16 (Plan::bi)
        const int64_t B = s.x_block;
        const float* lo = x + (2 * g * s.H + h) * s.W * B;
        const float* hi = lo + s.H * s.W * B;
        for (int64_t w = 0; w < s.W; ++w) {
          std::memcpy(at + w * lanes, lo + w * B, sizeof(float) * B);
          std::memcpy(at + w * lanes + B, hi + w * B, sizeof(float) * B);
        }
      } else if (p.blocked) {
        t.transpose(src, s.H * s.W, lanes, s.W, at, lanes);
      } else {
        std::memcpy(at, src, sizeof(float) * s.W);
      }
    }
  }
}

// epilogue_blocks for outputs of `block` channels per block: 8 as the table writes them; 16
// (kConvBlockWide) one pixel's 16 columns at a time, as an 8-channel write whose second block
// lies 8 floats on. Only the tiles the fused store cannot take come here (those whose last K
// block has no step, e.g. a 3x3's bottom output row when its K blocks are window rows).
void epilogue_into_blocks(const KernelTable& t, const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst,
                          int64_t block, int64_t block_stride, const TileEpilogue& e) {
  if (block == kConvBlock) {
    t.epilogue_blocks(src, lds, rows, cols, dst, block_stride, e);
    return;
  }
  for (int64_t j = 0; j < cols; j += block) {
    TileEpilogue ej = e;
    if (e.bias) ej.bias = e.bias + j;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = (j / block) * block_stride + r * block;
      if (e.residual) ej.residual = e.residual + at;
      t.epilogue_blocks(src + r * lds + j, lds, 1, block, dst + at, kConvBlock, ej);
    }
  }
}

// A 16-channel blocked input to a 1x1 of stride 2 that the 1x1 schedule does not take (there are
// no tiles of pixel stride 32): its strided pixels are gathered into compact blocks and the
// convolution runs at stride 1 on them (on 8-channel blocks the same took 1.07, 0.98 and 0.98 of
// the strided tiles' time at 256, 512 and 1024 channels: BENCHMARKS.md). Only resnet50's 7x7
// downsample and layers past the 1x1 schedule's rules come here.
bool subsampled(const Conv2dShape& s) { return s.x_blocked && s.x_block == kConvBlockWide && s.stride_w != 1; }
Conv2dShape subsampled_shape(const Conv2dShape& s) {
  Conv2dShape s1 = s;
  s1.H = s.out_h(), s1.W = s.out_w(), s1.stride_h = s1.stride_w = 1;
  return s1;
}
void gather_subsampled(const Conv2dShape& s, const float* x, float* out, int threads) {
  const int64_t B = s.x_block, OH = s.out_h(), OW = s.out_w(), rows = s.N * (s.C / B) * OH;
  parallel_for(rows, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / OH, oh = r % OH;  // plane: image and channel block
      const float* src = x + (plane * s.H + oh * s.stride_h) * s.W * B;
      float* dst = out + r * OW * B;
      for (int64_t ow = 0; ow < OW; ++ow) std::memcpy(dst + ow * B, src + ow * s.stride_w * B, sizeof(float) * B);
    }
  });
}

// Whether a tile may hold pixels of two output rows that it cannot store into padded planes
// (y_pad_*), whose rows lie apart: flat tiles on rows they do not divide (they store their
// pixels consecutively), and wrap tiles where a vector holds two pixels (wraps_into_padded).
bool tiles_cross_rows(const KernelTable& t, const Conv2dShape& s, const Plan& p) {
  return (p.wrap && !wraps_into_padded(t, s)) || (p.flat && p.OW % p.tile != 0);
}

// The zero border of padded output planes (Conv2dShape::y_pad_*) in channel blocks [b0, b1) of
// one image: the rows above and below the output and the columns beside each of its rows. The
// reader takes them as its padding, so they are written on every call: the arena bytes under
// them belong to other tensors between runs.
void zero_output_border(const Conv2dShape& s, const Plan& p, float* yn, int64_t b0, int64_t b1) {
  const int64_t B = s.y_block;
  const int64_t OHp = p.OH + s.y_pad_top + s.y_pad_bottom, row = (p.OW + s.y_pad_left + s.y_pad_right) * B;
  const int64_t plane_rows = s.y_plane_rows ? s.y_plane_rows : OHp;  // a band's planes: the whole output's
  for (int64_t b = b0; b < b1; ++b) {
    float* plane = yn + b * plane_rows * row;
    std::fill(plane, plane + s.y_pad_top * row, 0.f);
    std::fill(plane + (s.y_pad_top + p.OH) * row, plane + OHp * row, 0.f);
    for (int64_t r = s.y_pad_top; r < s.y_pad_top + p.OH; ++r) {
      float* line = plane + r * row;
      std::fill(line, line + s.y_pad_left * B, 0.f);
      std::fill(line + (s.y_pad_left + p.OW) * B, line + row, 0.f);
    }
  }
}

}  // namespace

bool direct_stream_weights = env_switch_on("KILN_DIRECT_STREAM_WEIGHTS");
bool direct_flat_runs = env_switch_on("KILN_DIRECT_FLAT_RUNS");
bool three_quarter_pairs_enabled = env_switch("KILN_PAIR_TAIL", !cpu_fma512_double_pumped());
bool direct_p64 = env_switch_on("KILN_DIRECT_P64");

bool direct_takes_p64(const KernelTable& t, const Conv2dShape& s) {
  return direct_p64 && t.conv_shape_p64.nr > 0 && s.group == 1 && s.R * s.S > 1 && s.K % t.conv_shape_p64.nr == 0 &&
         s.out_w() >= kP64MinRow;
}

bool streams_weights(const Conv2dShape& s) {
  return direct_stream_weights &&
         static_cast<double>(sizeof(float)) * s.C / s.group * s.R * s.S * s.K >= kStreamWeightBytes;
}

std::string direct_unsupported(const Conv2dShape& s) {
  if (s.winograd) return winograd_unsupported(kernel_table(), s);
  if (s.group != 1) return "grouped";
  for (const int64_t b : {s.x_block, s.y_block})
    if (b != kConvBlock && b != kConvBlockWide) return "channel blocks of " + std::to_string(b) + " (8 or 16)";
  if (s.x_blocked && s.C % s.x_block != 0)
    return "channel-blocked input with channels not a multiple of " + std::to_string(s.x_block);
  if (s.y_blocked && s.K % s.y_block != 0)
    return "channel-blocked output with channels not a multiple of " + std::to_string(s.y_block);
  if ((s.x_blocked && s.x_block == kConvBlockWide) || (s.y_blocked && s.y_block == kConvBlockWide)) {
    if (kernel_table().simd_width != kConvBlockWide) return "16-channel blocks need a table of 16 lanes (AVX-512)";
    if (s.x_blocked && s.x_block == kConvBlockWide && s.stride_w != 1 && !(s.R == 1 && s.S == 1 && !s.padded()))
      return "a 16-channel blocked input at stride_w 2 only to an unpadded 1x1 (no tiles of pixel stride 32)";
  }
  if (s.stride_w > 2) return "stride_w above 2 (the micro-kernel's pixel strides are 1 and 2)";
  if (s.y_plane_rows &&
      (s.y_plane_rows < s.out_h() + s.y_pad_top + s.y_pad_bottom || s.N != 1 || !s.y_blocked))
    return "a band of a taller output (y_plane_rows) needs one image, at least its own rows and blocked planes";
  if (s.p64) {
    const int nr = kernel_table().conv_shape_p64.nr;
    if (nr == 0) return "the 6 x 64 tile (p64) needs AVX-512";
    if (s.R * s.S == 1) return "the 6 x 64 tile (p64) is for windows, not 1x1";
    if (s.K % nr != 0) return "the 6 x 64 tile (p64) needs output channels a multiple of " + std::to_string(nr);
  }
  if (s.x_padded && !(s.x_blocked && s.padded()))
    return "padded input planes need a channel-blocked input to a padded convolution";
  if (s.w_panel_rows && (s.w_panel_rows < s.C * s.R * s.S || s.p64 || s.winograd || s.N != 1))
    return "a slice of a packed weight (w_panel_rows) needs at least the slice's rows, one image, and no p64 "
           "or Winograd weights";
  if (s.y_padded()) {
    if (!s.y_blocked) return "padded output planes need a channel-blocked output";
    if (tiles_cross_rows(kernel_table(), s, plan_for(kernel_table(), s)))
      return "tiles that cross output rows cannot write padded planes";
  }
  return "";
}

size_t direct_packed_weight_floats(const KernelTable& t, const Conv2dShape& s) {
  if (s.winograd) return winograd_packed_weight_floats(t, s);
  return weight_panel_floats(s, plan_for(t, s).nr);
}

void direct_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed) {
  if (s.winograd) return winograd_pack_weight(t, s, w, packed);
  const Plan p = plan_for(t, s);
  pack_weight_panels(s, w, p.nr, packed, p.taps_inner);  // Wᵀ, K order (tap, channel) or taps inner
}

size_t direct_workspace_floats(const KernelTable& t, const Conv2dShape& s, int threads) {
  if (s.winograd) return 0;  // each thread's transformed tiles live in its own scratch
  if (subsampled(s))  // either schedule may run (direct_1x1_applies reads the epilogue too)
    return static_cast<size_t>(s.N * s.C * s.out_h() * s.out_w()) +
           direct_workspace_floats(t, subsampled_shape(s), threads);
  const Plan p = plan_for(t, s);
  return static_cast<size_t>(s.C) * p.copy_floats() +
         static_cast<size_t>(std::max(threads, 1) * kPiecesPerThread) * p.slot_floats();
}

DirectRoute direct_route(const KernelTable& t, const Conv2dShape& s, const Epilogue& epi, int threads) {
  if (s.winograd) return DirectRoute::Winograd;
  if (s.w_panel_rows) return DirectRoute::General;  // the only schedule that reads a weight's slice
  if (subsampled(s) && !direct_1x1_applies(t, s, epi)) return DirectRoute::Subsampled;
  if (direct_stem_applies(t, s, epi)) return DirectRoute::Stem;
  if (direct_bands_apply(s, epi, threads)) return DirectRoute::Bands;
  if (direct_edge_rows_apply(t, s, epi)) return DirectRoute::EdgeRows;
  if (!s.y_padded() && direct_1x1_applies(t, s, epi)) return DirectRoute::OneByOne;
  return DirectRoute::General;
}

DirectKBlocks direct_k_blocks(const KernelTable& t, const Conv2dShape& s, const Epilogue& epi, int threads) {
  if (direct_route(t, s, epi, threads) != DirectRoute::General) return {};
  return k_blocks(s.C * s.R * s.S, input_blocks(t, s));
}

void conv_direct(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                 const Epilogue& epi, float* workspace, int threads) {
  const DirectRoute route = direct_route(t, s, epi, threads);
  if (route == DirectRoute::Winograd) return winograd_conv(t, s, x, packed_w, y, epi, threads);
  if (route == DirectRoute::Subsampled) {
    const Conv2dShape s1 = subsampled_shape(s);
    const size_t gathered = static_cast<size_t>(s.N * s.C * s1.H * s1.W);
    thread_local std::vector<float> own_gathered;
    if (!workspace) {
      own_gathered.resize(direct_workspace_floats(t, s, threads));
      workspace = own_gathered.data();
    }
    gather_subsampled(s, x, workspace, threads);
    conv_direct(t, s1, workspace, packed_w, y, epi, workspace + gathered, threads);
    return;
  }
  KILN_CHECK(!s.y_padded() || (!epi.residual && !epi.channel_means),
             "direct convolution: a padded output takes no residual or channel means");
  // The 1x1 schedule plans its own tiles: none of what follows (the general schedule's tiles,
  // row classes, K segments and groups) is used by it. Skipping it took 0.16-0.50 us off the
  // serial time of each of mobilenet_v2's 14 such layers (kiln profile --balance, two threads,
  // four alternated rounds). Outputs into padded planes take the path below (their borders are
  // zeroed there).
  if (route == DirectRoute::Stem) return conv_direct_stem(t, s, x, packed_w, y, epi, threads);
  if (route == DirectRoute::Bands) return conv_direct_bands(t, s, x, packed_w, y, epi, threads);
  if (route == DirectRoute::EdgeRows) return conv_direct_edge_rows(t, s, x, packed_w, y, epi, threads);
  if (route == DirectRoute::OneByOne) {
    const int64_t OHW = s.out_h() * s.out_w();
    threads = gemm_threads(OHW, s.K, s.C * s.R * s.S, false, threads);  // as below, with plan_for's OHW and KK
    for (int64_t n = 0; n < s.N; ++n) {
      Epilogue e = epi;
      e.bias_per_row = true;
      if (e.residual) e.residual += n * s.K * OHW, e.ldr = OHW;
      conv_direct_1x1_image(t, s, x + n * s.x_image_floats(), packed_w, y + n * s.y_image_floats(), e, threads);
    }
    return;
  }
  Plan p = plan_for(t, s);
  KILN_CHECK(!s.y_padded() || !tiles_cross_rows(t, s, p),
             "direct convolution: tiles that cross output rows cannot write padded planes on this table");
  const int NR = p.nr;
  threads = gemm_threads(p.OHW, s.K, p.KK, false, threads);
  const bool one_by_one = direct_1x1_applies(t, s, epi);
  // Chunks enough for kPiecesPerThread pieces a thread (a chunk's tiles re-read only the
  // weight block, which stays in L2), when the input, not the weight, sets the chunks.
  const int64_t want = threads > 1 ? threads * kPiecesPerThread : 1;
  if (p.chunks > 1 && p.chunks < want && p.tiles >= want) {
    p.chunk_tiles = ceil_div(p.tiles, want);
    p.chunks = ceil_div(p.tiles, p.chunk_tiles);
  }
  // Whole chunks per thread: resnet50's layer2.0 3x3/2 (131 tiles in 7 chunks) ran 3 against 4
  // on 2 threads; 8 chunks took 1.59-1.64 -> 1.45 ms (Zen 3, conv_bench).
  if (p.chunks > 1 && p.chunks % threads != 0 && p.tiles >= round_up(p.chunks, threads)) {
    p.chunk_tiles = ceil_div(p.tiles, round_up(p.chunks, threads));
    p.chunks = ceil_div(p.tiles, p.chunk_tiles);
  }
  const size_t copy_total = static_cast<size_t>(s.C) * p.copy_floats(), slot = p.slot_floats();
  thread_local std::vector<float> own;
  if (!workspace) {
    const size_t need = copy_total + static_cast<size_t>(threads * kPiecesPerThread) * slot;
    if (own.size() < need) own.resize(need);
    workspace = own.data();
  }
  float* planes = workspace;
  float* slots = workspace + copy_total;
  // Output rows whose window reaches into the top or bottom padding skip those taps: K runs
  // (kh, kw, channel) or (kh, channel, kw), so the window rows inside the image are one range
  // of K, and a row class is that range (class 0: all of K). The left and right padding cannot
  // be skipped: a tile's pixels share its K loop. digits_cnn's 8x8 3x3 layer spent 1/12 of its FMAs on zero rows,
  // a 7x7 layer (resnet50's layer4) 2/21.
  // (Kept in this thread's vectors, like the segments below; local references because the
  // pool's threads read them, and a thread_local named inside the lambda would be each one's own.)
  thread_local std::vector<std::pair<int64_t, int64_t>> own_classes;
  thread_local std::vector<int64_t> own_row_class;
  std::vector<std::pair<int64_t, int64_t>>& classes = own_classes;
  std::vector<int64_t>& row_class = own_row_class;
  classes.assign(1, {0, p.KK});
  row_class.assign(p.flat ? 0 : p.OH, 0);
  if (s.padded() && !p.flat && (s.pad_top > 0 || s.pad_bottom > 0)) {
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      // Window row kh reads input row oh * stride_h - pad_top + kh * dil_h.
      const int64_t top = oh * s.stride_h - s.pad_top;
      const int64_t kh0 = top >= 0 ? 0 : ceil_div(-top, s.dil_h);
      const int64_t kh1 = top >= s.H ? 0 : std::min<int64_t>(s.R, (s.H - 1 - top) / s.dil_h + 1);
      if (kh0 >= kh1 || (kh0 == 0 && kh1 == s.R)) continue;  // all rows (or none: leave it whole)
      const std::pair<int64_t, int64_t> range{kh0 * s.S * s.C, kh1 * s.S * s.C};
      auto it = std::find(classes.begin(), classes.end(), range);
      row_class[oh] = it - classes.begin();
      if (it == classes.end()) classes.push_back(range);
    }
  }
  const int64_t nclasses = static_cast<int64_t>(classes.size());
  // Per (class, K block): the segments of the block's part of the class's range, the K steps
  // skipped at the block's start, and per class the first block with any step.
  struct Block {
    std::vector<ConvSegment> seg;
    int64_t skip = 0;
  };
  thread_local std::vector<Block> own_blocks;
  thread_local std::vector<int64_t> own_first_block;
  std::vector<Block>& blocks = own_blocks;
  std::vector<int64_t>& first_block = own_first_block;
  if (static_cast<int64_t>(blocks.size()) < nclasses * p.kblocks) blocks.resize(nclasses * p.kblocks);
  first_block.assign(nclasses, p.kblocks);
  for (int64_t cl = 0; cl < nclasses; ++cl)
    for (int64_t b = 0; b < p.kblocks; ++b) {
      const int64_t q0 = b * p.kc, q1 = std::min(p.KK, (b + 1) * p.kc);
      const int64_t lo = std::max(q0, classes[cl].first), hi = std::min(q1, classes[cl].second);
      Block& blk = blocks[cl * p.kblocks + b];
      blk.seg.clear();
      blk.skip = lo - q0;
      if (lo >= hi) continue;
      segments(s, p, lo, hi, blk.seg);
      first_block[cl] = std::min(first_block[cl], b);
    }
  // Work items: chunks of tiles, each with all column units or (fewer chunks than pieces
  // wanted) with a share of them. Pieces: runs of consecutive items, one slot each.
  int64_t groups = p.chunks >= want ? 1 : std::min<int64_t>(p.units, ceil_div(want, p.chunks));
  // Few items that the threads cannot share evenly (a weight-heavy 7x7 layer is one chunk;
  // efficientnet_b0's 1152 -> 192 has 3 units of 64 channels, 2 for one thread and 1 for the
  // other): groups become ranges of NR-channel panels instead, as many as a multiple of the
  // threads, each run as wide units and a narrow one at its end. Those layers scaled 1.49x
  // from 1 thread to 2; 1152 -> 192 at 2 threads 134 -> 98 us (conv_bench, paired).
  const int64_t panels = ceil_div(s.K, NR);
  // One chunk whose units the threads cannot share evenly (mobilenet_v2's 960 -> 160 at 7x7:
  // units of 64, 64 and 32 channels on 2 threads; efficientnet_b0's 1152 -> 192): each thread
  // takes as many whole units as the others, over every tile, and a 1/threads share of the
  // tiles of each unit left over; a thread's items lie in one run (the pool runs a thread's own
  // run first). Every tile keeps its unit's width, and one thread reads each whole unit's
  // weights. (by_panels / panel_major below cut such layers into 32-channel panels, whose
  // tiles hold 14 accumulators, and both threads read every panel.) Two threads, in-process
  // pairs against that (Xeon 5th gen): 960 -> 160 at 7x7 0.814, 576 -> 160 0.839, 960 -> 320
  // 0.825, 1152 -> 192 0.937, 160 -> 960 0.983; mobilenet_v2's projections 0.85-0.88 inside it.
  const UnitShares shares{p.units, p.tiles, threads};
  const bool split_rest = p.chunks == 1 && shares.uneven();
  const bool by_panels = !split_rest && threads > 1 && p.chunks * groups < want && (p.chunks * groups) % threads != 0 &&
                         round_up(groups, threads) <= panels;
  if (by_panels) groups = round_up(groups, threads);
  // One chunk whose panels the threads cannot share evenly either (mobilenet_v2's 960 -> 160 at
  // 7x7: 5 panels, groups of 1, 1, 1 and 2, so 2 + 3 panels on 2 threads): the tiles go into a
  // chunk per thread as well and the items run panel by panel, each panel's rows split.
  const bool panel_major = by_panels && p.chunks == 1 && panels % threads != 0 && p.tiles >= threads;
  if (panel_major) {
    p.chunk_tiles = ceil_div(p.tiles, threads);
    p.chunks = ceil_div(p.tiles, p.chunk_tiles);
    groups = panels;
  }
  // Group g's output channels [first, end).
  auto group_cols = [&](int64_t g) -> std::pair<int64_t, int64_t> {
    if (by_panels) return {panels * g / groups * NR, std::min(s.K, panels * (g + 1) / groups * NR)};
    return {p.units * g / groups * p.unit_cols, std::min(s.K, p.units * (g + 1) / groups * p.unit_cols)};
  };
  const int64_t items = split_rest ? shares.items() : p.chunks * groups;
  const int64_t parts = std::min<int64_t>(threads * kPiecesPerThread, items);
  const bool apply = !epilogue_is_identity(epi);
  // Weights that one chunk reads once an image and that are not in L2 when the layer starts
  // (kStreamWeightBytes: resnet50's layer3 3x3s and layer4 from DRAM, mobilenet_v2's 7x7 layers
  // from L3) come in block by block: the tiles of each block fetch the next into L2.
  const bool stream_weights = p.chunks == 1 && streams_weights(s);
  // Floats between a segment's consecutive channels, and the micro-kernels for the layout.
  const int64_t a_step = p.blocked ? 1 : p.taps_inner ? s.dil_w : p.plane;
  // Blocked slots by pixel stride: 8 * stride_w on 8-channel blocks, 16 on 16-channel ones (32:
  // a 1x1 downsample on the 1x1 schedule, which takes no tile).
  const int64_t blk_slot = std::min<int64_t>(p.sw / kBlock - 1, 1);
  const auto& tiles = p.blocked ? t.conv_tile_blk[blk_slot] : t.conv_tile[p.sw - 1];
  const auto& wraps = p.blocked ? t.conv_tile_wrap_blk[blk_slot] : t.conv_tile_wrap[p.sw - 1];
  // The one-row tiles ([rows - 1]) and wrap tiles ([split - 1]) this shape runs: the 6 x 64
  // family (conv_tile_p64's slots: planar 1, 2; blocked 8, 16), else the table's mr x NR ones.
  const int64_t p64_slot = p.blocked ? 2 + blk_slot : p.sw - 1;
  const ConvTileKernel* row_tiles = p.p64 ? t.conv_tile_p64[p64_slot] : tiles[0];
  const auto* wrap_tiles = p.p64 ? &t.conv_wrap_p64[p64_slot][0] : &wraps[0];
  // The narrower whole tiles (none on the 6 x 64 tile: its layers' channels fill its panels).
  const ConvTileKernel half =
      p.p64 ? nullptr : p.blocked ? t.conv_tile_half_blk[blk_slot] : t.conv_tile_half[p.sw - 1];
  const ConvTileKernel three_quarter =
      p.p64 ? nullptr : p.blocked ? t.conv_tile_three_quarter_blk[blk_slot] : t.conv_tile_three_quarter[p.sw - 1];
  const int64_t bo = s.y_block;  // channels per block of a blocked output
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.x_image_floats();
    float* yn = y + n * s.y_image_floats();
    if (s.y_padded())
      parallel_for(s.K / bo, threads, [&](int64_t b0, int64_t b1) { zero_output_border(s, p, yn, b0, b1); });
    const float* in = xn;
    if (p.copy) {
      // On the kernel's own thread count, however small the copy: each thread then reads mostly
      // rows it copied itself. Below kMinParallelWork the copy ran on one thread, and inside
      // resnet18 at 2 threads it took 145-159 us of a 64-channel 3x3 layer (53 us at 1 thread,
      // where the input is that thread's own): the other vCPU's half of the input came over
      // (a line the other one wrote reads 2x slower, parallel.cpp), and the tiles then read half
      // the copy from the other core. Those layers 0.78-0.80 -> 0.66 ms, resnet18 12.4 -> 11.3 ms
      // (kiln profile, 2 threads).
      // A copy has no FMAs to hide its stores behind: like the depthwise outputs, its rows are
      // claimed where that pays (claim_output_pays). mobilenet_v2's stem (3 x 226 x 226 padded
      // planes), two threads, cores far apart: the model 0.990-0.996 in-process (three runs of
      // 500 pairs), resnet18 0.999.
      const bool claim = claim_output_pays(threads);
      parallel_for(p.Hp, threads,
                   [&](int64_t r0, int64_t r1) { copy_padded_rows(t, s, p, xn, r0, r1, planes, n == 0, claim); });
      in = planes;
    }
    Epilogue e = epi;
    e.bias_per_row = true;
    if (e.residual) e.residual += n * s.K * p.OHW, e.ldr = p.OHW;
    if (one_by_one) {
      conv_direct_1x1_image(t, s, in, packed_w, yn, e, threads);
      continue;
    }
    // Blocked output whose epilogue the tiles can apply as they store (ConvTileOut): their last
    // K block then writes the output directly, not C and then epilogue_blocks over it.
    const bool fuse = s.y_blocked && (t.simd_width == 8 || t.simd_width == 16) && ConvTileOut::fused_act(e.act);
    // Where output pixel pix of channel block k0 / bo starts: in the planes' interior when they
    // are padded (each block out_plane pixels long).
    const int64_t out_row = p.OW + s.y_pad_left + s.y_pad_right;
    const int64_t out_plane = (s.y_plane_rows ? s.y_plane_rows : p.OH + s.y_pad_top + s.y_pad_bottom) * out_row;
    // Floats between the residual's blocks over bo: its planes are the output's (never padded).
    const int64_t res_plane = s.y_plane_rows ? out_plane : p.OHW;
    auto out_at = [&](int64_t k0, int64_t pix) {
      const int64_t at = s.y_padded() ? (pix / p.OW + s.y_pad_top) * out_row + pix % p.OW + s.y_pad_left : pix;
      return k0 * out_plane + at * bo;
    };
    const bool fetch_out = write_prefetch_pays(threads);
    auto tile_out = [&](int64_t k0, int64_t pix) {
      ConvTileOut o;
      o.dst = yn + out_at(k0, pix), o.block_stride = bo * out_plane, o.block = bo;
      o.row_jump = (s.y_pad_left + s.y_pad_right) * bo;  // read by wrap tiles only
      if (e.bias) o.bias = e.bias + k0;
      if (e.residual) o.residual = e.residual + k0 * res_plane + pix * bo;
      o.alpha = e.alpha, o.act = e.act, o.act_alpha = e.act_alpha, o.act_beta = e.act_beta;
      o.fetch_for_write = fetch_out;
      return o;
    };
    // The kernel for a tile of `rows` pixels of a unit of `ncols` columns (`wide`: two panels):
    // whole tiles of at most a half or three quarters of a panel's columns take the narrower
    // tiles (fewer FMAs on the panel's zero columns).
    auto tile_for = [&](int64_t rows, int ncols, int wide) {
      ConvTileKernel tile = wide ? tiles[1][rows - 1] : row_tiles[rows - 1];
      if (rows == p.mr && half && 2 * ncols <= NR) tile = half;
      else if (rows == p.mr && three_quarter && 4 * ncols <= 3 * NR) tile = three_quarter;
      return tile;
    };
    // Tiles [t0, t1) of a flat layer (a 1x1's pixels as one row) over one K block, each storing
    // its outputs with the epilogue itself, no weights to fetch: the calls run_item makes, without
    // its per-tile work (the row class, the tile's ConvTileOut built anew, the weight fetch share,
    // the pending run). That work was 16% of mobilenet_v2's 16 -> 96 expand at 112x112 (perf,
    // one thread: 16 K steps a tile). Same calls with the same arguments, so the same floats.
    // Zen 5 host, same binary with KILN_DIRECT_FLAT_RUNS=0 against it (ab_bench, 10 rounds):
    // conv_bench's 16 -> 96 at 112x112 0.84 / 0.76 of the time (one / two threads), 32 -> 192 at
    // 28x28 0.95 / 0.89, the 32-channel depthwise + 16-channel projection at 112x112 0.87 / 0.87;
    // mobilenet_v2 0.989 / 0.987 (14 rounds).
    auto run_flat = [&](int64_t k0, int64_t t0, int64_t t1, int ncols, int wide, const float* block_w) {
      const Block& blk = blocks[0];
      const ConvSegment* seg = blk.seg.data();
      const int nseg = static_cast<int>(blk.seg.size());
      const float* b = block_w + blk.skip * NR;
      const ConvTileKernel whole = tile_for(p.tile, ncols, wide);
      ConvTileOut o = tile_out(k0, t0 * p.tile);
      const int64_t out_step = p.tile * bo;  // an unpadded output: pixel after pixel, bo floats each
      const float* a = in + t0 * p.tile * p.sw;
      const int64_t a_tile = p.tile * p.sw;
      for (int64_t ti = t0; ti < t1; ++ti, a += a_tile) {
        const int64_t rows = std::min<int64_t>(p.tile, p.OHW - ti * p.tile);
        (rows == p.tile ? whole : tile_for(rows, ncols, wide))(seg, nseg, a_step, a, b, p.panel * NR, nullptr,
                                                               p.unit_cols, ncols, false, &o, nullptr);
        o.dst += out_step;
        if (o.residual) o.residual += out_step;
      }
    };
    // Item `item`'s tiles [t0, t1) and output channels [first_col, end_col).
    struct ItemRange {
      int64_t t0, t1, first_col, end_col;
    };
    auto item_range = [&](int64_t item) {
      ItemRange r;
      if (split_rest) {  // a whole unit, or a thread's share of a unit left over
        const UnitShares::Item it = shares.item(item);
        r.t0 = it.t0, r.t1 = it.t1;
        r.first_col = it.unit * p.unit_cols, r.end_col = std::min(s.K, r.first_col + p.unit_cols);
      } else {
        const int64_t chunk = panel_major ? item % p.chunks : item / groups;
        const int64_t g = panel_major ? item / p.chunks : item % groups;
        r.t0 = chunk * p.chunk_tiles, r.t1 = std::min(p.tiles, r.t0 + p.chunk_tiles);
        std::tie(r.first_col, r.end_col) = group_cols(g);
      }
      return r;
    };
    // Epilogue::warm: item i fetches lines [warm_lines * i / items, warm_lines * (i + 1) / items),
    // shared out evenly among its tile calls, at most kWarmLinesPerStep a K step. The threads run
    // contiguous runs of items, so at two threads each fetches the half of a GEMV's weights that
    // it reads itself after (gemv_run cuts the panels in two the same way); the last L2's worth
    // stays in its L2, the rest goes to L3.
    const int64_t warm_lines = e.warm ? e.warm_floats / kLineFloats : 0;
    // next_item: the item this thread runs after this one, or -1.
    auto run_item = [&](int64_t item, float* cbuf, int64_t next_item) {
      const auto [t0, t1, first_col, end_col] = item_range(item);
      const int64_t warm0 = warm_lines * item / items, warm_n = warm_lines * (item + 1) / items - warm0;
      const int64_t warm_calls = ceil_div(end_col - first_col, p.unit_cols) * p.kblocks * (t1 - t0);
      int64_t warm_call = 0;
      for (int64_t k0 = first_col; k0 < end_col; k0 += p.unit_cols) {
        const int ncols = static_cast<int>(std::min(p.unit_cols, end_col - k0));
        const int wide = ncols > NR ? 1 : 0;
        const bool fuse_cols = fuse && ncols % bo == 0;
        // Finished tiles not yet transposed: `pending` rows of cbuf from `pending_c`, pixels from
        // `pending_pix` on (consecutive in both), transposed into NCHW with the epilogue on the way.
        float* pending_c = nullptr;
        int64_t pending_pix = 0, pending = 0;
        auto flush = [&] {
          if (pending == 0) return;
          if (s.y_blocked) {  // blocks of bo channels from k0: the run's pixels, bo floats each
            TileEpilogue te;
            te.alpha = e.alpha;
            if (e.bias) te.bias = e.bias + k0, te.bias_mode = TileEpilogue::Bias::PerCol;
            te.act = e.act, te.act_alpha = e.act_alpha, te.act_beta = e.act_beta;
            // Row by row into padded planes (their rows are apart), else the whole run at once.
            for (int64_t done = 0; done < pending;) {
              const int64_t pix = pending_pix + done;
              const int64_t count = s.y_padded() ? std::min(pending - done, p.OW - pix % p.OW) : pending - done;
              if (e.residual) te.residual = e.residual + k0 * res_plane + pix * bo;  // never padded
              epilogue_into_blocks(t, pending_c + done * p.unit_cols, p.unit_cols, count, ncols, yn + out_at(k0, pix),
                                   bo, bo * out_plane, te);
              done += count;
            }
            pending = 0;
            return;
          }
          float* yk = yn + k0 * p.OHW + pending_pix;
          if (apply)
            t.transpose_epilogue(pending_c, p.unit_cols, pending, ncols, yk, p.OHW, tile_epilogue(e, k0, pending_pix));
          else
            t.transpose(pending_c, p.unit_cols, pending, ncols, yk, p.OHW);
          pending = 0;
        };
        for (int64_t kb = 0; kb < p.kblocks; ++kb) {
          const float* block_w = packed_w + (k0 / NR) * p.panel * NR + kb * p.kc * NR;
          const bool last = kb + 1 == p.kblocks;
          // Weights from DRAM: the block this item reads next (this unit's next K block, or the
          // next unit's first), its panels' lines shared out among this block's tiles, each
          // fetching its share into L2 a line a step (ConvL2Lines).
          const float* next_w = nullptr;
          int64_t next_cols = 0, next_rows = 0;
          if (stream_weights && kb + 1 < p.kblocks) {
            next_w = block_w + p.kc * NR, next_cols = ncols, next_rows = std::min(p.kc, p.KK - (kb + 1) * p.kc);
          } else if (stream_weights && k0 + p.unit_cols < end_col) {
            next_w = packed_w + ((k0 + p.unit_cols) / NR) * p.panel * NR;
            next_cols = std::min(p.unit_cols, end_col - k0 - p.unit_cols), next_rows = std::min(p.kc, p.KK);
          } else if (stream_weights && next_item >= 0) {
            // The item this thread runs next: its first unit's first block (without it each item
            // started on weights in L3: at two threads, where the items are single units, the
            // 7x7 expands of mobilenet_v2 ran 0.88-0.90 of the time with it, the projections
            // 0.96-0.98, the models 0.989 (mobilenet_v2), 0.984 (efficientnet_b0), 0.980
            // (resnet18), 0.999 (resnet50); in-process pairs, Xeon 5th gen).
            const ItemRange nx = item_range(next_item);
            if (nx.first_col != k0) {
              next_w = packed_w + (nx.first_col / NR) * p.panel * NR;
              next_cols = std::min(p.unit_cols, nx.end_col - nx.first_col), next_rows = std::min(p.kc, p.KK);
            }
          }
          if (direct_flat_runs && p.flat && p.kblocks == 1 && fuse_cols && !s.y_padded() && !next_w && !warm_lines &&
              !blocks[0].seg.empty() && first_block[0] == 0) {
            run_flat(k0, t0, t1, ncols, wide, block_w);
            continue;
          }
          // No division per tile: two of them (here and the slot's modulo) were on the path to
          // the tile's call and cost 6-9% of a 16-step 1x1's time (mobilenet_v2's 16 -> 96 at
          // 112x112 0.91-0.92, 24 -> 144 at 56x56 0.94-0.97 in process, one and two threads).
          const int64_t next_lines = next_rows * NR / kLineFloats, next_panels = ceil_div(next_cols, NR);
          int64_t group_slot = -1;  // (ti - t0) % p.group_tiles
          L2Shares shares(next_w, next_lines, next_panels, p.panel * NR, t1 - t0);
          for (int64_t ti = t0; ti < t1; ++ti) {
            if (++group_slot == p.group_tiles) group_slot = 0;
            ConvL2Lines l2 = shares.next();
            if (warm_n > 0) {
              const int64_t a0 = warm_n * warm_call / warm_calls, a1 = warm_n * (warm_call + 1) / warm_calls;
              const int64_t steps = std::max<int64_t>(1, std::min(p.kc, p.KK - kb * p.kc));
              l2.warm = e.warm + (warm0 + a0) * kLineFloats, l2.warm_count = a1 - a0;
              l2.warm_per_step = static_cast<int>(std::min<int64_t>(kWarmLinesPerStep, ceil_div(a1 - a0, steps)));
              ++warm_call;
            }
            const ConvL2Lines* l2p = l2.count > 0 || l2.warm_count > 0 ? &l2 : nullptr;
            int64_t pix, rows;
            const float* a;
            const int64_t slot_tile = p.kblocks > 1 ? ti - t0 : group_slot;
            float* c = cbuf + slot_tile * p.tile * p.unit_cols;
            // The tile's row class: its output row's, or for a tile across two rows of different
            // classes all of K (the padding is zeros: extra taps add nothing).
            int64_t cl = 0;
            if (p.wrap) {
              pix = ti * p.tile, rows = std::min<int64_t>(p.tile, p.OHW - pix);
              const int64_t oh = pix / p.OW, oh_last = (pix + rows - 1) / p.OW;
              cl = row_class[oh] == row_class[oh_last] ? row_class[oh] : 0;
            } else if (p.flat) {
              pix = ti * p.tile, rows = std::min<int64_t>(p.tile, p.OHW - pix);
            } else {
              const int64_t oh = ti / p.tiles_per_row, ow0 = ti % p.tiles_per_row * p.tile;
              pix = oh * p.OW + ow0, rows = std::min<int64_t>(p.tile, p.OW - ow0);
              cl = row_class[oh];
            }
            const Block& blk = blocks[cl * p.kblocks + kb];
            const ConvSegment* seg = blk.seg.data();
            const int nseg = static_cast<int>(blk.seg.size());
            const float* b = block_w + blk.skip * NR;
            const bool load_c = kb > first_block[cl];
            // A tile with no steps in the last block has its sums in the slot: stored below.
            const bool direct_out = last && fuse_cols && nseg > 0;
            if (nseg > 0) {
              if (p.wrap) {
                const int64_t oh = pix / p.OW, ow0 = pix % p.OW, first = p.OW - ow0;
                a = in + oh * p.row_step + ow0 * p.sw;
                const int64_t jump = p.row_step - ow0 * p.sw;  // to the next row's first pixel
                const ConvTileOut o = direct_out ? tile_out(k0, pix) : ConvTileOut{};
                const ConvTileOut* op = direct_out ? &o : nullptr;
                // The wrap tile for a split of `first` pixels (read only when the tile wraps:
                // first < rows <= mr).
                const auto wrap = first >= rows ? nullptr : wrap_tiles[first - 1];
                if (first >= rows) {
                  row_tiles[rows - 1](seg, nseg, a_step, a, b, 0, c, p.unit_cols, ncols, load_c, op, l2p);
                } else if (rows == p.tile && wrap) {
                  wrap(seg, nseg, a_step, a, jump, b, c, p.unit_cols, ncols, load_c, op, l2p);
                } else {  // a split this table has no wrap tile for, or the image's last, partial
                          // tile across two rows: one tile per row
                  const ConvTileOut o2 = direct_out ? tile_out(k0, pix + first) : ConvTileOut{};
                  row_tiles[first - 1](seg, nseg, a_step, a, b, 0, c, p.unit_cols, ncols, load_c, op, l2p);
                  row_tiles[rows - first - 1](seg, nseg, a_step, a + jump, b, 0, c + first * p.unit_cols,
                                              p.unit_cols, ncols, load_c, direct_out ? &o2 : nullptr, nullptr);
                }
              } else {
                a = p.flat ? in + pix * p.sw : in + (pix / p.OW) * p.row_step + (pix % p.OW) * p.sw;
                const ConvTileOut o = direct_out ? tile_out(k0, pix) : ConvTileOut{};
                tile_for(rows, ncols, wide)(seg, nseg, a_step, a, b, p.panel * NR, c, p.unit_cols, ncols, load_c,
                                            direct_out ? &o : nullptr, l2p);
              }
            }
            if (!last || direct_out) continue;
            // Only the last tile of a chunk can be short (tiles cover whole rows or wrap), so runs
            // are consecutive; should that change, a tile past a gap in pixels or in cbuf starts a
            // new run instead of being transposed with the wrong one.
            if (pending > 0 && (pix != pending_pix + pending || c != pending_c + pending * p.unit_cols)) flush();
            if (pending == 0) pending_c = c, pending_pix = pix;
            pending += rows;
            if (group_slot == p.group_tiles - 1) flush();  // before the slots are reused
          }
          flush();
        }
      }
    };
    // parts <= threads * kPiecesPerThread: parallel_for runs each part as a piece of its own,
    // so no two threads share a slot.
    // An item's weight fetches cover the next item only when the same thread runs it.
    parallel_for(parts, threads, [&](int64_t pb, int64_t pe) {
      for (int64_t part = pb; part < pe; ++part) {
        const int64_t i1 = tapered_start(items, parts, threads, part + 1);
        const bool next_same =
            part + 1 < parts && parallel_owner(parts, threads, part + 1) == parallel_owner(parts, threads, part);
        for (int64_t i = tapered_start(items, parts, threads, part); i < i1; ++i)
          run_item(i, slots + part * slot, i + 1 < i1 || next_same ? i + 1 : -1);
      }
    });
  }
}

}  // namespace kiln::kernels::detail

namespace kiln::kernels {

bool conv_direct_takes_p64(const Conv2dShape& s) { return detail::direct_takes_p64(kernel_table(), s); }

bool conv_fetches_ahead(ConvTactic tactic, const Conv2dShape& s, const Epilogue& e, int threads) {
  using namespace detail;
  if (tactic != ConvTactic::Direct || !direct_unsupported(s).empty()) return false;
  switch (direct_route(kernel_table(), s, e, threads)) {
    case DirectRoute::Subsampled: return conv_fetches_ahead(tactic, subsampled_shape(s), e, threads);
    case DirectRoute::General: return true;
    default: return false;
  }
}
bool conv_direct_p64_enabled() { return detail::direct_p64; }

namespace {
const bool winograd_enabled = env_switch_on("KILN_WINOGRAD");
}  // namespace

std::string conv_winograd_unsupported(const Conv2dShape& s) {
  if (!winograd_enabled) return "turned off (KILN_WINOGRAD=0)";
  return detail::winograd_unsupported(kernel_table(), s);
}
bool conv_winograd_enabled() { return winograd_enabled; }

// A row of mr / 2 pixels past whole tiles (a 7x7 1x1's 49 as one row on AVX-512: 3 x 14 + 7)
// would end in a half tile: all wide tiles of mr / 2 then, every one full (resnet50's 7x7 1x1s
// 3-6 % faster, kiln profile, one thread).
bool conv_direct_wide(int mr, int64_t row_len) {
  return mr >= 2 && (row_len <= mr / 2 || (mr % 2 == 0 && row_len % mr == mr / 2));
}

bool conv_direct_wraps(int mr, int64_t oh, int64_t ow) {
  if (mr <= 0 || ow <= 0 || oh < 2 || ow % mr == 0) return false;
  // Rows of exactly half a tile fill the wide tiles (mr / 2 pixels by 2 nr channels, as many
  // accumulators) with no short tile at all, where wrapping ends each image in one: AVX-512's
  // 7-wide rows (mr 14) wrapped into 3 full tiles and a 7 x 32 one. Wide, resnet50 0.992 at one
  // thread and 0.994 at two, resnet18 0.981 (scripts/ab_bench.py model, 6-8 paired rounds).
  if (mr % 2 == 0 && ow == mr / 2) return false;
  // Every tile must lie on at most two rows. Tile starts repeat their column every ow tiles;
  // the image's last tile may be short.
  const int64_t pixels = oh * ow, tiles = detail::ceil_div(pixels, mr);
  auto fits = [&](int64_t ti) {
    const int64_t rows = std::min<int64_t>(mr, pixels - ti * mr), first = ow - ti * mr % ow;
    return first >= rows || rows - first <= ow;
  };
  for (int64_t ti = 0; ti < std::min(ow, tiles); ++ti)
    if (!fits(ti)) return false;
  return fits(tiles - 1);
}

}  // namespace kiln::kernels

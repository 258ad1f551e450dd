// The direct convolution tactic (conv.h): pixel-gemm's orientation (output pixels on the
// micro-kernel's rows, output channels on its vector columns, the weight packed as B with K
// order (tap, channel)) without an im2col panel. The micro-kernel (KernelTable::conv_tile)
// broadcasts the input values of consecutive output pixels of one output row straight from the
// input planes — a zero-padded copy of them when the convolution pads — at immediate offsets
// r * stride_w, and each finished register tile is transposed into the NCHW output with the
// epilogue while it is in L1. A 1x1 stride-1 unpadded convolution reads the input as it is,
// its pixels taken as one long row.
//
// Schedule (explicit knobs below): the K index is cut into equal blocks of at most kDirectKc
// steps so a block of the packed weight stays in L2 across the tiles of a chunk; a chunk is a
// run of tiles whose input fits in L2 with it, or all tiles when the weight is the larger of
// the two (it is then read once). Threads split the chunks, or the output channels when there
// are fewer chunks than threads.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/ir/env.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels::detail {

// Most K steps per block: a narrow block of the packed weight (kDirectKc x NR floats, 96 KiB
// on AVX-512) stays in L2 while the chunk's tiles run over it.
constexpr int64_t kDirectKc = 768;

// The work is cut into parallel_for's kPiecesPerThread pieces a thread (kiln/kernels/parallel.h):
// a thread that finishes its share first takes the other's last pieces. Inside resnet18 at 2
// threads the two halves of a 3x3 layer, cut once, finished 20-110 us apart on average (of
// 240-730 us), whichever core the host slowed that moment. (The general schedule and the 1x1
// one, conv_direct_1x1.cpp.)
// Weights from this size on are taken not to be in L2 when a layer starts, so the tiles running
// over one weight block or batch fetch the next into L2 (ConvL2Lines; direct_stream_weights).
// Inside a model that holds for far smaller weights than L2 (1-2 MiB on the hosts measured):
// the layers before evicted them, and they come from L3 or DRAM. 1 MiB (resnet50's layer3 and
// layer4) until the Xeon 5th gen: there 64 KiB took mobilenet_v2's 7x7 layers (160 <-> 960,
// 0.6 MiB) 0.83-0.87 and its 14x14 expands 0.91-0.95 at one thread, the model 0.961-0.982 and
// efficientnet_b0 0.973-0.977 (in-process pairs, 30-40 each); two threads 0.98-1.00,
// resnet18 / resnet50 unchanged (0.995-1.007). Below it (an L1's worth) a layer's few lines
// are not worth the prefetches.
constexpr double kStreamWeightBytes = 64 << 10;
// The most lines of Epilogue::warm a tile fetches a K step (a share left over is not fetched:
// the later kernel reads it from memory). mobilenet_v2's last 1x1 (320 -> 1280 at 7x7) fetches
// the classifier's 4.9 MiB at about 1.8 lines a step of 28 FMAs.
constexpr int kWarmLinesPerStep = 4;

// The shares of n tiles of a weight block's lines, tile 0, 1, ..., n - 1 in turn, one next() a
// tile: `panels` panels of `panel_lines` lines each, the first at `base` (none when null), the
// next `panel_stride` floats on; the shares are as even as ceil_div makes them, in order, so
// that each line is fetched once (a share is at most one range per panel it touches: two, as
// ConvL2Lines holds, when it is no longer than a panel). Stepped, not divided: the tile loops
// computed each tile's share from its index, and those four 64-bit divisions a tile cost ~0.5%
// of mobilenet_v2's time at one thread (perf; Conv.WeightStreamSharesStepLikeTheDivisions).
class L2Shares {
 public:
  L2Shares(const float* base, int64_t panel_lines, int64_t panels, int64_t panel_stride, int64_t n)
      : base_(base), panel_lines_(panel_lines), panel_stride_(panel_stride), lines_(panel_lines * panels) {
    if (base_ && lines_ > 0 && n > 0) share_ = (lines_ + n - 1) / n;
  }
  ConvL2Lines next() {
    ConvL2Lines l2;
    if (share_ <= 0 || l0_ >= lines_) return l2;
    const int64_t l1 = std::min(lines_, l0_ + share_);
    const int64_t split = std::min(l1, (panel_ + 1) * panel_lines_);  // the next panel's start
    l2.lines = base_ + panel_ * panel_stride_ + off_ * kLineFloats, l2.count = split - l0_;
    if (l1 > split) l2.lines2 = base_ + (panel_ + 1) * panel_stride_, l2.count2 = std::min(l1 - split, panel_lines_);
    l0_ += share_, off_ += share_;
    while (off_ >= panel_lines_) off_ -= panel_lines_, ++panel_;
    return l2;
  }

 private:
  const float* base_;
  int64_t panel_lines_, panel_stride_, lines_, share_ = 0;
  int64_t l0_ = 0, panel_ = 0, off_ = 0;  // the next share's first line, its panel, its line there
};

std::string direct_unsupported(const Conv2dShape& s);

// The kernels' switches for A/B runs (KILN_DIRECT_STREAM_WEIGHTS, KILN_DIRECT_P64,
// KILN_DIRECT_1X1, KILN_DIRECT_FLAT_RUNS, KILN_WINOGRAD, ...) are read once at start-up through
// kiln::env_switch_on (kiln/ir/env.h).
// Whether the general schedule runs a flat layer's tiles (1x1, stride 1, unpadded; one K block,
// the epilogue in the tiles' stores) in a loop of their own calls, without the per-tile row
// class, output and fetch bookkeeping (KILN_DIRECT_FLAT_RUNS=0 at start-up turns it off).
extern bool direct_flat_runs;
// Whether the general schedule's tiles fetch the next weight block into L2 as they run, when
// the weights are not in L2 (KILN_DIRECT_STREAM_WEIGHTS=0 at start-up turns it off; in-process
// A/B harnesses flip it between calls).
extern bool direct_stream_weights;
// direct_stream_weights, for weights of kStreamWeightBytes or more (taken not to be in L2 when
// the layer starts: from L3 or DRAM).
bool streams_weights(const Conv2dShape& s);

// Units of output channels (the general schedule's column units, the 1x1 schedule's 64-channel
// groups) that the threads cannot share evenly, when each unit's tiles are its parts: each
// thread takes units / threads whole units over every tile, then a 1/threads share of the
// tiles of each unit left over, its items in one run (parallel.h: a thread runs its own run
// first). Item i of items(): thread i / per_thread()'s (i % per_thread())-th.
struct UnitShares {
  int64_t units = 0, tiles = 0;
  int threads = 1;
  // Whether the split applies: more than one thread, at least a unit each, units left over.
  bool uneven() const { return threads > 1 && units >= threads && units % threads != 0 && tiles >= threads; }
  int64_t per_thread() const { return units / threads + units % threads; }
  int64_t items() const { return threads * per_thread(); }
  struct Item {
    int64_t unit, t0, t1;  // the unit, and its tiles [t0, t1)
  };
  Item item(int64_t i) const {
    const int64_t whole_each = units / threads, th = i / per_thread(), j = i % per_thread();
    if (j < whole_each) return {th * whole_each + j, 0, tiles};
    return {threads * whole_each + j - whole_each, tiles * th / threads, tiles * (th + 1) / threads};
  }
};
// Whether lowering gives windows the table's 6 x 64 tile (direct_takes_p64; KILN_DIRECT_P64=0 at
// start-up turns it off). The choice is recorded on each node (Conv2dShape::p64), so an
// artifact runs the tile it was packed for whatever this says when it runs.
extern bool direct_p64;
// The rule behind conv_direct_takes_p64 for table t: windows (not 1x1), ungrouped, output
// channels a multiple of 64, rows of kP64MinRow (conv_direct.cpp) or more, direct_p64 on.
bool direct_takes_p64(const KernelTable& t, const Conv2dShape& s);
size_t direct_packed_weight_floats(const KernelTable& t, const Conv2dShape& s);
void direct_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed);
size_t direct_workspace_floats(const KernelTable& t, const Conv2dShape& s, int threads);
void conv_direct(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                 const Epilogue& epi, float* workspace, int threads);

// A planar input too narrow for channel blocks (the RGB stems) with padding and windows up to
// 3x3, on more than one thread, into blocked planes (bordered or not): conv_direct_bands runs it
// as bands of output rows, each band's input rows copied with their padding into the thread's
// own scratch and the band convolved from there, unpadded, into the output's planes
// (Conv2dShape::y_plane_rows), in one parallel region (conv_direct_bands.cpp). Same floats as the padded copy's (the zero rows' products add zeros).
// KILN_DIRECT_BANDS=0 at start-up turns it off (in-process A/B harnesses flip it between calls).
extern bool direct_bands_enabled;
bool direct_bands_apply(const Conv2dShape& s, const Epilogue& epi, int threads);
void conv_direct_bands(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                       const Epilogue& epi, int threads);

// Narrow images (rows of up to 16 pixels that the table has an edge-row tile for: 8 on AVX-512)
// under a 3x3 window at stride 1 with one pixel of padding on every side, between channel-blocked
// activations, K in one block (9 C <= kDirectKc): conv_direct_edge_rows runs one output row a tile,
// read in place, each segment skipping the pixels whose tap lies in the left or right padding
// (conv_direct_rows.cpp). The general schedule's floats bit for bit. KILN_DIRECT_EDGE_ROWS=0 at
// start-up turns it off (in-process A/B harnesses flip it between calls).
extern bool direct_edge_rows_enabled;
bool direct_edge_rows_apply(const KernelTable& t, const Conv2dShape& s, const Epilogue& epi);
void conv_direct_edge_rows(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w,
                           float* y, const Epilogue& epi, int threads);

// The path conv_direct takes for s, in its order: Winograd tiles; the strided pixels gathered
// into compact blocks first (the subsampled shape then takes a route of its own); RGB stems as
// pixel vectors (conv_stem.h); stem bands; edge rows; the 1x1 schedule (unpadded outputs); else
// the general schedule. conv_direct dispatches on it and conv_fetches_ahead asks it, so the two
// cannot disagree.
enum class DirectRoute { Winograd, Subsampled, Stem, Bands, EdgeRows, OneByOne, General };
DirectRoute direct_route(const KernelTable& t, const Conv2dShape& s, const Epilogue& epi, int threads);
// The K blocks the general schedule sums s's outputs in on `threads` threads with epilogue epi:
// equal blocks of kc steps (the last may be shorter), each a whole number of input channel
// blocks, every output the sum of block kblocks - 1 plus the stored sums of the blocks before
// it. {0, 0} where another schedule runs s (its sums in another order).
struct DirectKBlocks {
  int64_t kc = 0, kblocks = 0;
};
DirectKBlocks direct_k_blocks(const KernelTable& t, const Conv2dShape& s, const Epilogue& epi, int threads);

}  // namespace kiln::kernels::detail

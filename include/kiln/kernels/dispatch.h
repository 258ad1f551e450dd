// The kernel table: every ISA-specific routine the kernels use, plus the GEMM blocking, filled
// once at start-up from CPU features (scalar baseline, upgraded to AVX2+FMA, then AVX-512 as
// CPUID allows; after MLAS's platform.cpp). The public entry points (gemm_packed.h, conv.h,
// rows.h) run on kernel_table(); the *_on variants below take a table explicitly so tests run
// every ISA this CPU has, and a tuner can pass a copy with other blocking knobs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/epilogue.h"
#include "kiln/kernels/pool.h"

namespace kiln::kernels {

enum class Isa : uint8_t { Scalar, Avx2, Avx512 };
const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512"

// GEMM schedule knobs. mr x nr is the micro-kernel's register tile (fixed per ISA: the packed
// layouts depend on it); kc, mc, nc are the cache blocks (any positive values are correct:
// packed weights do not depend on them, so a tuner may change them freely).
//   kc: depth of one K block (a kc x nr B micro-panel should stay in L1)
//   mc: rows of A packed per block (mc x kc floats in L2), rounded to a multiple of mr
//   nc: columns of B packed per block when B is packed on the fly (kc x nc in L2/L3)
struct GemmBlocking {
  int mr = 0, nr = 0;
  int64_t kc = 0, mc = 0, nc = 0;
};

// The direct convolution's register tile (conv_tile and its families below): mr output pixels
// by nr output channels, its weights packed in nr-column panels. Fixed per ISA like the GEMM's
// tile, and not always the same shape: AVX-512 runs GEMMs on 6 x 64 and convolutions on 14 x 32
// (a pixel row of 7, 14, 28 or 56 fills whole 14-pixel tiles).
struct ConvTileShape {
  int mr = 0, nr = 0;
};

// Where the tile epilogue reads its operands, already offset to the tile's first element.
struct TileEpilogue {
  enum class Bias : uint8_t { None, PerRow, PerCol, Scalar };
  float alpha = 1.f;
  const float* bias = nullptr;
  Bias bias_mode = Bias::None;
  const float* residual = nullptr;
  int64_t ldr = 0;
  Act act = Act::None;
  float act_alpha = 0.f, act_beta = 0.f;
  // depthwise_block with a blocked output only: adds the sum of each channel's outputs it writes
  // into sums[c] (c < nc), summed in float over at most one output row (the pair kernels) or 16
  // pixels (the staged path) and then in double (Epilogue::channel_means).
  double* sums = nullptr;
  // depthwise_block's pair kernels (AVX-512, blocked in and out): the call's weights arranged at
  // packing time, 8-channel block by block, tap by tap, each tap's 8 weights twice (16 floats),
  // from the call's first channel on (conv_pack_weight, Depthwise); null: no pair kernel.
  const float* pair_weights = nullptr;
  // The pair kernels fetch each output row's lines for writing (prefetchw) a row ahead of its
  // stores: see ConvTileOut::fetch_for_write.
  bool fetch_for_write = false;
};

// One query tile of attention for one (batch, head): rows [i0, i0+rows) of Q against keys
// [0, Sk), with online softmax (see rows.h for the semantics).
struct AttentionTile {
  const float* q = nullptr;  // first row of the tile; rows q_rs apart, D contiguous
  const float* k = nullptr;  // key 0; keys k_rs apart
  const float* v = nullptr;  // value 0; values v_rs apart
  float* y = nullptr;        // output row of the tile's first query; y_rs apart
  int64_t q_rs = 0, k_rs = 0, v_rs = 0, y_rs = 0;
  const float* mask = nullptr;  // additive, element (i, j) at mask[i*mask_rs + j*mask_cs]
  int64_t mask_rs = 0, mask_cs = 0;
  int64_t rows = 0, Sk = 0, D = 0, Dv = 0;
  int64_t i0 = 0;            // index of the first query row (for the causal limit)
  bool causal = false;
  int64_t causal_offset = 0;  // when causal: key j is visible to query i iff j <= i + causal_offset
  float scale = 1.f;
  float* scratch = nullptr;  // attention_scratch_floats(rows, D, Dv) floats
  // The table's transpose (KernelTable::transpose), for the key blocks.
  void (*transpose)(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) = nullptr;
};
// Keys per block of the online softmax (the Kᵀ block kept in scratch).
constexpr int64_t kAttentionKeyBlock = 64;
size_t attention_scratch_floats(int64_t rows, int64_t D, int64_t Dv);

// A run of consecutive pixels in a pixel-row GEMM panel (KernelTable::pack_a_runs): `len`
// pixels from offset `src` of every im2col row go to panel rows dst..dst+len-1.
struct PixelRun {
  int32_t src = 0, dst = 0, len = 0;
};

// Micro-kernel: C[0:rows, 0:nr] = epi((load_c ? C : 0) + A panel · B panel), where the A panel
// is kc x mr (k-major, mr floats per k) and the B panel kc x nr_max (nr floats per k). `rows` is
// fixed by the table slot, nr <= the slot's column count. epi (null: none) is applied on the
// accumulators before the store; it must satisfy epilogue_in_registers (others run
// epilogue_tile over the stored tile).
using TileKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int nr, bool load_c,
                            const TileEpilogue* epi);
// The same with B read in place instead of packed: row p of B at brows[p] + col.
using TileRowsKernel = void (*)(int64_t kc, const float* a, const float* const* brows, int64_t col, float* c,
                                int64_t ldc, int nr, bool load_c, const TileEpilogue* epi);
// Epilogues the GEMM micro-kernels apply on their accumulators: the clamp activations (the
// others need the vector math of epilogue_tile). Same operations in the same order, so the
// results are identical either way.
inline bool epilogue_in_registers(const TileEpilogue& e) {
  return e.act == Act::None || e.act == Act::Relu || e.act == Act::Clip;
}

// A run of the direct convolution's K index (kernels/conv_direct.h) within one tap: `steps`
// consecutive input channels, the first at `offset` floats from the tile's input base.
struct ConvSegment {
  int64_t offset = 0, steps = 0;
};
// A run of K steps for an edge-row tile (KernelTable::conv_edge_row, conv_direct_rows.cpp),
// like ConvSegment, plus which of the row's pixels the run's window column leaves in the
// padding: skip 1 the first pixel (the window's left column), 2 the last (its right column), 0
// none. Those pixels take no broadcast and no FMA for the run; `offset` is the first pixel the
// run computes (the second one's with skip 1).
struct ConvEdgeSegment {
  int64_t offset = 0, steps = 0;
  int skip = 0;
};
// One depthwise plane's geometry (KernelTable::depthwise_plane): input H x W, output OH x OW,
// window R x S with its strides (stride_w 1 or 2), dilations and top/left padding (the
// bottom/right padding is implied by OH, OW).
struct DepthwisePlane {
  int64_t H = 0, W = 0, OH = 0, OW = 0, R = 1, S = 1;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_top = 0, pad_left = 0;
};
// The zero-padded copy of the input plane depthwise_plane works on: Hp rows of Wp floats (the
// input at row pad_top, column pad_left), then room for the last vector's reads past the end.
// With stride_w 2 each row is stored deinterleaved: its Wp/2 even columns, then its Wp/2 odd
// ones (Wp even), so every tap of a stride-2 window reads consecutive floats.
struct DepthwisePadded {
  int64_t Hp = 0, Wp = 0, floats = 0;
};
inline DepthwisePadded depthwise_padded(const DepthwisePlane& g, int simd_width) {
  DepthwisePadded p;
  const int64_t rows = (g.OH - 1) * g.stride_h + (g.R - 1) * g.dil_h + 1;
  const int64_t cols = (g.OW - 1) * g.stride_w + (g.S - 1) * g.dil_w + 1;
  p.Hp = rows > g.pad_top + g.H ? rows : g.pad_top + g.H;
  p.Wp = cols > g.pad_left + g.W ? cols : g.pad_left + g.W;
  if (g.stride_w == 2) p.Wp += p.Wp % 2;
  p.floats = p.Hp * p.Wp + 2 * g.stride_w * simd_width;
  return p;
}
// The scratch of one channel block of the channel-blocked depthwise kernel
// (KernelTable::depthwise_block), in floats from a 64-byte-aligned base, each part 64-byte
// aligned: the block's weights tap-major ([R*S][W], W = the table's simd width), then the
// zero-padded input ([Hp][Wp][W], a pixel's W channels consecutive), then the f32 kernel's
// output stage: a chunk of whole output rows, pixel-major ([pixels][W]), transposed out from
// there W pixels at a time across row ends.
struct DepthwiseBlockScratch {
  int64_t Hp = 0, Wp = 0, plane = 0, stage = 0, floats = 0;
};
// Output rows per staged chunk: at most kDepthwiseStagePixels pixels (or one row, when wider),
// preferring a whole number of W-pixel tiles so that no transpose but the plane's last is short.
constexpr int64_t kDepthwiseStagePixels = 256;
inline int64_t depthwise_stage_rows(int64_t OH, int64_t OW, int64_t lanes) {
  const int64_t most = OW >= kDepthwiseStagePixels ? 1 : kDepthwiseStagePixels / OW;
  for (int64_t rows = most; rows > 1; --rows)
    if (rows * OW % lanes == 0) return rows < OH ? rows : OH;
  return most < OH ? most : OH;
}
inline DepthwiseBlockScratch depthwise_block_scratch(const DepthwisePlane& g, int simd_width) {
  auto lines = [](int64_t f) { return (f + 15) / 16 * 16; };
  DepthwiseBlockScratch b;
  const int64_t rows = (g.OH - 1) * g.stride_h + (g.R - 1) * g.dil_h + 1;
  const int64_t cols = (g.OW - 1) * g.stride_w + (g.S - 1) * g.dil_w + 1;
  b.Hp = rows > g.pad_top + g.H ? rows : g.pad_top + g.H;
  b.Wp = cols > g.pad_left + g.W ? cols : g.pad_left + g.W;
  b.plane = lines(g.R * g.S * simd_width);
  b.stage = b.plane + lines(b.Hp * b.Wp * simd_width);
  b.floats = b.stage + lines(depthwise_stage_rows(g.OH, g.OW, simd_width) * g.OW * simd_width);
  return b;
}
namespace detail {
// Sets the padding around the input's interior in a block's padded plane ([Hp][Wp][lanes]) to
// `value` (0 for f32 convolutions, the zero point for INT8 ones). (Declared here, defined in
// depthwise_parts.cpp, so that the per-ISA kernels call the one portable copy.)
void fill_block_padding(const DepthwisePlane& g, const DepthwiseBlockScratch& sb, int64_t lanes, float value,
                        float* plane);
}  // namespace detail

// Direct-convolution micro-kernel: C[0:rows, 0:ncols] = (load_c ? C : 0) + sum over the
// segments' steps q of x(q) ⊗ b(q), where x(q)[r] = a[off_q + r*SW] (SW the pixel stride in
// the input plane, fixed by the table slot; off_q = segment offset + step * a_step) and b(q)
// the q-th row of B: NR floats of the packed panel at b (advancing NR per step), and for a
// wide slot NR more at b + b_next. Rows are output pixels, columns output channels.
// With `out` (the last K block of a tile on channel-blocked output, conv_direct.cpp), the sums
// (plus C when load_c) go through the epilogue in registers and straight to the output instead
// of to C: see ConvTileOut. With `l2`, the tile fetches those lines into L2 as it runs, one a
// K step (ConvL2Lines).
struct ConvTileOut;
constexpr int kLineFloats = 16;  // floats per 64-byte cache line (prefetch and ConvL2Lines units)
// Cache lines a direct-convolution tile fetches into L2, one per K step while it has any:
// `count` lines from `lines` on, then `count2` from `lines2` (conv_direct.cpp: a share of the
// weight block its column unit reads next, when the weights are not in L2: kStreamWeightBytes).
struct ConvL2Lines {
  const float* lines = nullptr;
  int64_t count = 0;
  const float* lines2 = nullptr;
  int64_t count2 = 0;
  // Lines a later kernel reads (Epilogue::warm), `warm_per_step` of them fetched each K step
  // beside the one above (warm_count may go past what the tile's steps reach: the rest is not
  // fetched).
  const float* warm = nullptr;
  int64_t warm_count = 0;
  int warm_per_step = 0;
};
using ConvTileKernel = void (*)(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, const float* b,
                                int64_t b_next, float* c, int64_t ldc, int ncols, bool load_c, const ConvTileOut* out,
                                const ConvL2Lines* l2);

// A direct-convolution tile's epilogue fused into its stores, for channel-blocked output
// ([K/B][pixels][B], B = block: kConvBlock, or kConvBlockWide on 16-lane tables): out(pixel r,
// channel j) = act(sum * alpha + bias[j] + residual) at dst + (j / B) * block_stride + r * B +
// j % B, residual laid out as dst. The same
// operations in the same order as KernelTable::epilogue_blocks, so the floats are the ones the
// unfused path writes. Only tables of 8 or 16 lanes, tiles whose columns are whole blocks, and
// the activations that are a clamp (fused_act below); the rest keep C and epilogue_blocks.
struct ConvTileOut {
  float* dst = nullptr;  // the tile's first pixel in its first channel block
  int64_t block_stride = 0;
  int64_t block = kConvBlock;  // channels per block of dst (and of the residual)
  const float* bias = nullptr;      // the tile's first channel on; null: none
  const float* residual = nullptr;  // at dst's offset in the residual; null: none
  // A tile that wraps to the next output row: floats its second row's pixels lie past where
  // they would follow the first row's (the border between two rows of padded output planes;
  // 0 otherwise). Only where a vector is one pixel's block (block == the table's lanes).
  int64_t row_jump = 0;
  float alpha = 1.f;
  Act act = Act::None;
  float act_alpha = 0.f, act_beta = 0.f;
  // Fetch the tile's output lines for writing (prefetchw) before its K loop, so that taking them
  // over from the core that wrote them last overlaps the FMAs (write_prefetch_pays says when).
  bool fetch_for_write = false;
  static bool fused_act(Act a) { return a == Act::None || a == Act::Relu || a == Act::LeakyRelu || a == Act::Clip; }
};

// The direct tactic's 1x1 tile over channel batches (conv_direct_1x1.cpp): rows x 64 output
// channels over `blocks` 8- or 16-channel blocks of a channel-blocked input, plus the bias and the
// residual (first) or the partial sums at out.dst, ending in the activation (last) or in
// partial sums stored at out.dst. out.alpha must be 1. With `l2`, the tile fetches those lines
// into L2 as it runs, one a step (ConvL2Lines). See conv_tile_1x1 in conv_tile.inl.
using Conv1x1Kernel = void (*)(const float* a, int64_t a_block, int64_t blocks, const float* b, int64_t b_next,
                               bool first, bool last, const ConvTileOut& out, const ConvL2Lines* l2);
// Pixels per full 1x1 tile: 7 x 4 vectors, 28 accumulators (the rows of resnet50's 56-, 28-,
// 14- and 7-wide layers split into whole tiles).
constexpr int kConv1x1Rows = 7;

struct KernelTable {
  Isa isa = Isa::Scalar;
  int simd_width = 1;  // floats per vector register
  GemmBlocking gemm;
  ConvTileShape conv_shape;  // mr and NR of the conv_tile comments below
  // tile[rows - 1][v - 1]: rows x v vectors of columns, rows <= gemm.mr, v <= gemm.nr /
  // simd_width (at most kMaxTileVectors): a partial panel runs on the fewest vectors that cover it
  // (efficientnet_b0's squeeze-and-excitation convolutions have 20-48 output channels on 64-column
  // panels).
  static constexpr int kMaxTileVectors = 4;
  TileKernel tile[16][kMaxTileVectors] = {};
  // tile_rows[rows - 1][v - 1][masked]: masked loads only the nr columns of a partial panel.
  TileRowsKernel tile_rows[16][kMaxTileVectors][2] = {};
  // tile_rows for mr rows over `count` consecutive whole NR-column panels (columns col ..
  // col + count*NR), epi's column bias and residual advancing with them: one call per strip,
  // for products with a short K loop where a call per tile costs as much as its FMAs.
  void (*tile_rows_strip)(int64_t kc, const float* a, const float* const* brows, int64_t col, float* c, int64_t ldc,
                          int64_t count, bool load_c, const TileEpilogue* epi) = nullptr;
  // tile[mr - 1][1] for `count` whole mr-row tiles down one packed NR-column panel b (the A
  // panels a_stride floats apart, C's rows advancing mr per tile), epi's row bias and residual
  // advancing with them: the row tiles that reuse one B panel in one call (resnet50's 1x1
  // layers with K = 64 spent ~7% of their time in the driver's call per tile). next_b (or null):
  // the panel of kc x NR floats the next strip reads, fetched into L2 while this one runs.
  void (*tile_col_strip)(int64_t kc, const float* a, int64_t a_stride, const float* b, float* c, int64_t ldc,
                         int64_t count, bool load_c, const TileEpilogue* epi, const float* next_b) = nullptr;
  // tile_col_strip with A read in place (row i of the strip at a + i * lda) on v vectors of the
  // panel ([v - 1]), its first nr columns stored: for products too narrow to earn back a packed
  // copy of A (gemm_packed.cpp, kARowsMaxPanels; digits_cnn's classifier spent 60% of its FMAs'
  // time packing). ORT's MLAS reads A in place the same way.
  void (*tile_a_rows_col_strip[kMaxTileVectors])(int64_t kc, const float* a, int64_t lda, const float* b, float* c,
                                                 int64_t ldc, int nr, int64_t count, bool load_c,
                                                 const TileEpilogue* epi, const float* next_b) = {};
  // The same down whole panels of B read in place (tile_rows' rows, columns col .. col + NR).
  void (*tile_rows_col_strip)(int64_t kc, const float* a, int64_t a_stride, const float* const* brows, int64_t col,
                              float* c, int64_t ldc, int64_t count, bool load_c, const TileEpilogue* epi) = nullptr;
  // c = a (one row of K floats, in place) · `panels` packed NR-column panels of B over the full K
  // (K * NR floats apart), the last panel's first `last` columns stored: a GEMV streaming B once
  // (gemm_packed_b with one row; gemm_driver.cpp, gemv_run).
  void (*gemv_panels)(int64_t K, const float* a, const float* b, int64_t panels, float* c, int last) = nullptr;
  // out = NR-column panels (kc rows of NR floats each, zero past nc) of rows[q][col, col + nc)
  // for q < kc: B rows read in place, packed once per block for the tiles that reuse them.
  void (*pack_row_panels)(const float* const* rows, int64_t kc, int64_t col, int64_t nc, float* out) = nullptr;
  // conv_tile[SW - 1][wide][rows - 1]: pixel stride SW (1 or 2); wide 0: rows <= mr, NR
  // columns; wide 1: rows <= mr / 2, 2 * NR columns (two packed panels, b_next apart).
  ConvTileKernel conv_tile[2][2][16] = {};
  // conv_tile_wrap[SW - 1][split - 1]: mr pixels that wrap from one output row to the next
  // (split = 1..mr-1 of them on the first row): rows [0, split) at a + r*SW, rows [split, mr)
  // at a + jump + (r - split)*SW; NR columns. Rows whose width is not a multiple of mr (7, 14,
  // 28 and 56 on AVX2's mr = 6; 7 on AVX-512's 14) then fill every tile but the image's last.
  // Null for the splits a table leaves out (conv_tile.inl, fill_wraps): two one-row tiles.
  void (*conv_tile_wrap[2][16])(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, int64_t jump,
                                const float* b, float* c, int64_t ldc, int ncols, bool load_c,
                                const ConvTileOut* out, const ConvL2Lines* l2) = {};
  // The same two over the channel-blocked copy (conv_direct.cpp, Plan::blocked: a pixel's 8 or
  // 16 channels consecutive), indexed [SW / 8 - 1]: pixel stride SW = 8 * stride_w on 8-channel
  // blocks, 16 on 16-channel ones (stride_w 1 only), a_step 1.
  ConvTileKernel conv_tile_blk[2][2][16] = {};
  // conv_tile_half[SW - 1] (conv_tile_half_blk[SW / 8 - 1] over the channel-blocked copy): mr
  // rows by the first NR / 2 columns of a panel, for output channel ranges of at most NR / 2,
  // where the NR-column tile spends half its FMAs on zero columns (mobilenet_v2's 32 -> 16 at
  // 112x112). Null on tables whose panel is one vector.
  ConvTileKernel conv_tile_half[2] = {}, conv_tile_half_blk[2] = {};
  // conv_tile_three_quarter[SW - 1] (_blk: over the channel-blocked copy): mr rows by the first
  // 3 NR / 4 columns of a panel, the last vector's loads and FMAs half-width, for output channel
  // ranges of 17..24 on AVX-512 (NR 32), where the full tile spent a quarter of its FMAs on zero
  // columns: double-pumped 512-bit FMAs (Zen 4) make a 256-bit one half the cost (conv_bench,
  // blocked, one thread: efficientnet_b0's and mobilenet_v2's 1x1s to 24 channels 0.83x). An
  // 8-column tile of 256-bit FMAs ran 1.04x the half tile's time: not used. Where 512-bit FMAs
  // are native the last vector holds two pixels' 8 columns instead (src/kernels/pair_tail.h).
  // Null elsewhere.
  ConvTileKernel conv_tile_three_quarter[2] = {}, conv_tile_three_quarter_blk[2] = {};
  // conv_1x1_blk[slot][rows - 1]: Conv1x1Kernel for rows <= kConv1x1Rows pixels whose input
  // blocks lie 8 * stride_w floats apart (8-channel blocks: slot stride_w - 1) or 16 * stride_w
  // (16-channel blocks: slot 1 + stride_w); AVX-512 only (null elsewhere: conv_direct keeps its
  // general schedule).
  Conv1x1Kernel conv_1x1_blk[4][kConv1x1Rows] = {};
  void (*conv_tile_wrap_blk[2][16])(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, int64_t jump,
                                    const float* b, float* c, int64_t ldc, int ncols, bool load_c,
                                    const ConvTileOut* out, const ConvL2Lines* l2) = {};
  // The direct convolution's second tile, on tables that have one (AVX-512: 6 pixels x 64
  // channels, 24 accumulators; a K step loads one 64-float row of a 64-column weight panel and
  // broadcasts 6 inputs, against 2 + 14 loads for the 14 x 32 tile's 28 FMAs), for the windows
  // conv_direct.cpp gives it (direct_takes_p64: output channels a multiple of 64, rows of 24
  // pixels or more). {0, 0}: none. Indexed [slot] by pixel stride: planar 1, 2 (slots 0, 1),
  // channel-blocked 8, 16 (slots 2, 3); conv_tile_p64[slot][rows - 1] for rows <= mr,
  // conv_wrap_p64[slot][split - 1] for every split 1..mr-1 (the arguments of conv_tile and
  // conv_tile_wrap; b_next unused).
  ConvTileShape conv_shape_p64;
  ConvTileKernel conv_tile_p64[4][8] = {};
  void (*conv_wrap_p64[4][8])(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, int64_t jump,
                              const float* b, float* c, int64_t ldc, int ncols, bool load_c, const ConvTileOut* out,
                              const ConvL2Lines* l2) = {};
  // conv_edge_row[slot][cols - 1] (slot 0: 8-channel blocks, 1: 16-channel ones): one whole
  // output row of `cols` pixels by one NR-column panel, for a 3x3 window at stride 1 with one
  // pixel of padding on every side, read in place from the unpadded channel-blocked input (a
  // pixel's channels consecutive, a_step 1, pixels one block apart): `a` is the row's first
  // pixel in block 0, the segments' offsets relative to it (ConvEdgeSegment::skip: the pixels
  // whose tap lies in the left or right padding take none of the segment's FMAs); `b` the
  // segments' first packed weight row, NR floats a step; the sums from zero through `out` (its
  // bias, residual and clamp activation, as conv_tile's stores). AVX-512 only, 8-wide rows so
  // far (conv_direct_rows.cpp: digits_cnn's 8x8 images); null elsewhere.
  void (*conv_edge_row[2][16])(const ConvEdgeSegment* seg, int nseg, const float* a, const float* b,
                               const ConvTileOut& out, int ncols) = {};
  // c[r*ldc + j] = epilogue(c[...]) for r < rows, j < cols.
  void (*epilogue_tile)(float* c, int64_t ldc, int64_t rows, int64_t cols, const TileEpilogue& e) = nullptr;
  // dst[r*ldd + j] = epilogue(src[r*lds + j]): the epilogue fused with a copy (convolutions
  // computed on a grid wider than the output compact it this way).
  void (*epilogue_copy)(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows, int64_t cols,
                        const TileEpilogue& e) = nullptr;
  // dst[(j / 8) * block_stride + r * 8 + j % 8] = epilogue(src[r*lds + j]) for r < rows, j < cols
  // (a multiple of 8): pixel-major tiles into channel-blocked activations (kConvBlock). `e`:
  // bias None or PerCol (bias[j]), a residual in dst's layout (e.ldr unused).
  void (*epilogue_blocks)(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t block_stride,
                          const TileEpilogue& e) = nullptr;
  // y = softmax(x) over n elements (x == y allowed).
  void (*softmax_row)(const float* x, float* y, int64_t n) = nullptr;
  // y = (x - mean) / sqrt(var + eps) * scale + bias (bias may be null; x == y allowed).
  void (*layer_norm_row)(const float* x, const float* scale, const float* bias, float eps, float* y,
                         int64_t n) = nullptr;
  // out[j] = sum_t w[t] * taps[t][j] for j < n: a depthwise plane on the stride-phase grid.
  void (*depthwise_grid)(const float* const* taps, const float* w, int64_t ntaps, int64_t n, float* out) = nullptr;
  // out[oh*OW + ow] = epilogue(sum over the window of w[kh*S + kw] * x[ih*W + iw]), taps
  // outside the input counting 0: one depthwise plane; `e` has a Scalar (or no) bias and a
  // residual plane with rows OW apart. `padded` holds depthwise_padded(g).floats floats, zero
  // when a caller first passes it for this geometry: the kernel writes only the input's
  // interior there, so the padding stays zero across the planes of a convolution.
  void (*depthwise_plane)(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                          const TileEpilogue& e) = nullptr;
  // The same convolution for nc <= simd_width channels at once, channel-blocked: planes
  // x + c * x_plane (H x W; x_plane 0: one plane for every channel) for c < nc, weights
  // w + c * R * S, outputs out + c * out_plane (OH x OW, rows OW apart). The planes are
  // transposed into `scratch` (depthwise_block_scratch(g).floats floats, 64-byte aligned) when
  // no faster kernel reads them in place: a call that copies zeroes the padding around the
  // interior unless *padding_zeroed, then sets it (nullptr: every such call zeroes), so a caller
  // passes one flag, false at first, for its calls on one scratch and geometry (only the
  // interior is written after that); each output vector then holds one pixel's channels and
  // sums R x S aligned loads (any stride and dilation); the epilogue (`e`: bias[c] for channel c, a residual plane per
  // channel e.ldr floats apart) runs as groups of output pixels are transposed back.
  // x_blocked / y_blocked (tables of 8 or 16 lanes): the input / the output and residual are
  // channel-blocked, [C/8][pixels][8] (kConvBlock) from the block's first channel on, x_plane /
  // out_plane and e.ldr then the strides between 8-channel blocks: no transpose on that side.
  void (*depthwise_block)(const DepthwisePlane& g, const float* x, int64_t x_plane, int nc, const float* w,
                          float* scratch, bool* padding_zeroed, float* out, int64_t out_plane, const TileEpilogue& e,
                          bool x_blocked, bool y_blocked) = nullptr;
  // Whether depthwise_block has a faster kernel for g that needs its output apart from its input
  // (so a layer written over its input runs slower: conv_depthwise_in_place declines it).
  bool (*depthwise_block_wants_apart)(const DepthwisePlane& g) = nullptr;
  // out[j] = max_t taps[t][j] for j < n (ntaps >= 1): a max-pooling plane on the phase grid.
  void (*max_grid)(const float* const* taps, int64_t ntaps, int64_t n, float* out) = nullptr;
  // out[j] = the maximum of rows[i][2j - pad_left + kw] over i < 3, kw < 3 for j < n, a column
  // outside [0, width) read as the nearest inside one: one output row of a 3x3 stride-2 max pool
  // (every window must hold an inside column: pad_left <= 2, 2 (n - 1) - pad_left < width).
  // Which of several NaNs, or of a NaN and a number, wins is not specified.
  void (*max_pool_3x3s2_row)(const float* const* rows, int64_t n, int64_t width, int64_t pad_left,
                             float* out) = nullptr;
  // out[ow*8 + l] = max over kw < S of row[(ow*sw + kw*dw)*8 + l] for ow < n, l < 8: the
  // horizontal pass of a channel-blocked max pool (kConvBlock) over a row of 8-float pixels whose
  // padding is already -inf. Which of several NaNs, or of a NaN and a number, wins is not specified.
  void (*max_blocked_row)(const float* row, int64_t n, int64_t S, int64_t sw, int64_t dw, float* out) = nullptr;
  // Sum of x[0:n] accumulated in double (partial sums in any order: exact in practice).
  double (*sum_row)(const float* x, int64_t n) = nullptr;
  // acc[l] = sum of x[i*8 + l] over i < rows, for l < 8, in double (partial sums in any order):
  // the per-lane sums of one channel block (kConvBlock) of a blocked plane.
  void (*sum_block_rows)(const float* x, int64_t rows, double* acc) = nullptr;
  // out[q*mr + r] = rows[q][pixel r] for q < kc, the panel's pixels given as runs (PixelRun);
  // rows not covered are zero when covered < mr.
  void (*pack_a_runs)(const float* const* rows, int64_t kc, const PixelRun* runs, int nruns, int covered, int mr,
                      float* out) = nullptr;
  // dst[j*ldd + i] = src[i*lds + j] for i < rows, j < cols.
  void (*transpose)(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) = nullptr;
  // The transpose, then epilogue_tile(dst, ldd, cols, rows, e), in one pass (each destination row
  // takes its epilogue in registers; bit-identical to the two steps).
  void (*transpose_epilogue)(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd,
                             const TileEpilogue& e) = nullptr;
  void (*attention_tile)(const AttentionTile& t) = nullptr;
  // One mr-row A panel: out[q*mr + r] = A[r*lda + q] for r < rows (<= mr), 0 for r >= rows.
  void (*pack_a_panel)(const float* A, int64_t lda, int64_t rows, int64_t kc, int mr, float* out) = nullptr;
  // dst[j] = src[j * stride] for j < n (vectorised for strides 1 and 2).
  void (*strided_copy)(const float* src, int64_t stride, int64_t n, float* dst) = nullptr;
};

// The table chosen once from this CPU's features.
const KernelTable& kernel_table();
// CPUID's family (base plus extended) on AMD CPUs, 0 on others: 0x19 Zen 3 and Zen 4, 0x1A Zen 5.
// For the few defaults that measured differently on the hosts' microarchitectures.
int cpu_amd_family();
// Whether this CPU runs a 512-bit FMA as two 256-bit halves, so that a 256-bit FMA costs half of
// a 512-bit one: AMD family 19h (Zen 4; Zen 3, also 19h, has no AVX-512, and only the AVX-512
// table asks). Kernels that trade 512-bit vectors for shuffle-free 256-bit ones ask it
// (depthwise_halves.h). Zen 5 (family 1Ah) and the Intel servers measured so far have native
// 512-bit FMA pipes.
bool cpu_fma512_double_pumped();
// The table for one ISA, or nullptr when this CPU (or this build) cannot run it.
const KernelTable* kernel_table_for(Isa isa);

// Whether a kernel call on `threads` threads fetches its output lines for writing before it
// stores to them (ConvTileOut / TileEpilogue::fetch_for_write). An output often overwrites
// arena lines the other core wrote last, and each store then waits for its line to come over.
// Fetched ahead, that wait overlaps the FMAs, which pays when the cores are far apart (Zen 5
// host, vCPUs in different core complexes: mobilenet_v2 0.94 of the time at two threads) and
// costs when they are close (the same host minutes later, one complex: 1.03) or on one thread
// (its own lines: 1.025). So only on more than one thread, only on CPUs with PREFETCHW, and in
// Auto mode only while the last refresh_core_distance measured far cores.
bool write_prefetch_pays(int threads);
enum class WritePrefetch { Auto, On, Off };
// For every later call (tests, A/B runs). Starts Auto; KILN_WRITE_PREFETCH=0 / =1 in the
// environment starts Off / On. Never on for CPUs without PREFETCHW.
void set_write_prefetch(WritePrefetch mode);
// For the Auto modes of the write prefetch, the output claims and the expand bands (below): measures
// core_round_trip_ns (parallel.h) when the last measurement is 50 ms old or more, and takes
// cores as far apart above kFarCoresNs. The runtime calls it as each run starts (outside any
// parallel region); costs ~2-10 µs a measurement.
void refresh_core_distance(int threads);
constexpr double kFarCoresNs = 250;

// Whether a depthwise kernel call (or the direct tactic's padded copy) on `threads` threads claims
// its output lines before it writes them (claim_for_write). On more than one thread an output
// usually lands on arena lines the other core wrote or read last: the arena lays each tensor over
// earlier ones, and a line both threads read sits in both cores' caches. A vector store to such a
// line waits for the other core to give it up; a string store (rep stosb) of a long run takes the
// lines without fetching them. Zen 5 host, cores far apart, 1 MiB overwritten
// (bench/cache_affinity_bench BM_OverwriteAfterTouch): after the other core wrote it or read it
// 14-15 GB/s with vector stores, 32-39 GB/s with a string store; the core's own lines 54-70 and
// 95-99 GB/s. (A loop of aligned 64-byte stores, with or without a prefetch for writing, read 26-38
// and 7-8 GB/s in the same two cases.) So the depthwise kernels, whose stores have few FMAs to hide
// behind, zero each run of output just before they compute it and then store to lines this core
// holds: with the cores far apart (vCPUs in different core complexes), on top of the write
// prefetch, mobilenet_v2 at two threads 0.976-0.980 of the time (in-process pairs, 500 a side), its
// 56x56 layer 0.75 and 112x112 one 0.87; efficientnet_b0 0.993-0.998. (The direct convolutions
// claiming theirs ran 1.02-1.15x slower: their tiles' FMAs already hide the stores, and the claim
// is one more pass.) With the cores close the other core's lines come cheaply and the claim is only
// a pass more, as the write prefetch was (1.00-1.04 there). So in Auto mode only on more than one
// thread, only on CPUs with fast string stores (ERMS), only while the last refresh_core_distance
// measured far cores; KILN_CLAIM_OUTPUT=0 / =1 pins it off / on (on: any thread count, memset where
// there is no ERMS).
bool claim_output_pays(int threads);
enum class ClaimOutput { Auto, On, Off };
// For every later call (tests, A/B runs). Starts Auto, or as KILN_CLAIM_OUTPUT says.
void set_claim_output(ClaimOutput mode);
// Whether kernels::expand_depthwise (and, far apart, kernels::depthwise_project, whose own
// switch follows) on `threads` threads runs its pair band by band (else the two
// convolutions one after the other, over the workspace). Band by band each thread keeps
// its expanded rows in its own L2; apart, the expanded tensor goes through L3. That pays when
// the cores are far apart (vCPUs in different core complexes, each with its own L3) and costs
// when they share one: mobilenet_v2 at two threads against ORT, the Zen 5 host, alternated
// bench runs with the artifact fused and not: far 0.750-0.765 against 0.751-0.793, close
// 0.799-0.856 against 0.755-0.823 (one artifact, bands pinned on and off, a later close minute:
// 0.778 and 0.777, even). So in Auto mode only on more than one thread and only while
// the last refresh_core_distance measured far cores; KILN_EXPAND_BANDS=0 / =1 pins it off / on
// (on: any thread count, one thread too).
bool expand_bands_pay(int threads);
// kernels::depthwise_project's own switch, `bands` its bands (a multiple of the threads) over
// `out_rows` output rows. As expand_bands_pay, except that with the cores close (sharing an L3)
// it still bands a pair that splits into one band per thread of kCloseBandMinRows rows or more:
// each thread then keeps its rows from the depthwise layer through the projection into the
// next block's expand, which reads them on the same core. mobilenet_v2 on the 2-vCPU Zen 4 host,
// two threads, cores close, in-process pairs of runs alternating the rules (thousands of pairs
// each): banding its 14-row outputs (6 pairs) 0.993-0.996 of the time of none; the 28-row one
// too, 0.996 of that; the 56-row one too (4 bands of 14) 0.999 of that, so not. By layer (kiln
// profile): the 14x14 projections 0.93-0.96, the 28 -> 14 block's expand and pair 0.86; its
// 7-row pairs banded (3 and 4 rows a thread, each reading all the weights) 1.05-1.07.
bool depthwise_project_bands_pay(int64_t bands, int64_t out_rows, int threads);
constexpr int64_t kCloseBandMinRows = 6;
// kernels::expand_depthwise's own switch, `expanded_bytes` the expanded tensor's size. As
// expand_bands_pay, except that with the cores close it still bands a pair whose expanded
// tensor is more than kCloseExpandBytesPerThread a thread: more than the threads' L2s (1 MiB a
// core on the hosts measured) hold, so that apart it goes out to L3 and back. The bands keep the
// input row each shares with the band before it (expand_kept_rows.h) rather than expand it
// twice. kiln profile, two threads, cores close, all of a model's pairs banded against none
// (two rounds each): mobilenet_v2's 112 -> 56 (4.8 MB expanded) 0.281 / 0.291 ms against 0.310 /
// 0.297, efficientnet_b0's 0.461 / 0.437 against 0.505 / 0.483; their 56 -> 28 (1.8 MB) 0.142-
// 0.145 against 0.135 and 0.238-0.244 against 0.213, their 28 -> 14 1.02-1.05.
bool expand_depthwise_bands_pay(int64_t expanded_bytes, int threads);
constexpr int64_t kCloseExpandBytesPerThread = int64_t{1} << 20;
enum class ExpandBands { Auto, On, Off };
// For every later call (tests, A/B runs). Starts Auto, or as KILN_EXPAND_BANDS says.
void set_expand_bands(ExpandBands mode);
// Runs shorter than this are not claimed (claim_for_write returns false): a string store moves
// lines without fetching them only on long runs. Overwriting the other core's lines in runs of
// 8-20 KiB it was slower than vector stores, from ~48 KiB on even; over lines the other core had
// read it paid from 8 KiB. mobilenet_v2 at two threads: 0.975-0.980 with 8-24 KiB, 0.987 with 48.
constexpr int64_t kMinClaimBytes = 24 << 10;
// Zeroes [p, p + bytes) with a string store (memset without ERMS) when bytes >= kMinClaimBytes
// and says whether it did; else the caller fetches its lines for writing as before. Callers
// write every byte of the range right after it, and never claim a range the kernel still reads.
bool claim_for_write(void* p, int64_t bytes);
// Whether floats [a, a + na) and [b, b + nb) share an address (an output planned over an input).
inline bool ranges_overlap(const float* a, int64_t na, const float* b, int64_t nb) {
  return a < b + nb && b < a + na;
}

// ---- The public kernels on an explicit table (see gemm_packed.h, conv.h) ------------------
size_t packed_b_floats_on(const KernelTable& t, int64_t K, int64_t N);
void pack_b_on(const KernelTable& t, const float* B, int64_t ldb, bool trans_b, int64_t K, int64_t N, float* packed);
void gemm_packed_b_on(const KernelTable& t, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                      const float* packed_b, float* C, int64_t ldc, const Epilogue& epi, int threads);
size_t packed_a_floats_on(const KernelTable& t, int64_t M, int64_t K);
void pack_a_on(const KernelTable& t, const float* A, int64_t lda, int64_t M, int64_t K, float* packed);
void gemm_packed_a_on(const KernelTable& t, int64_t M, int64_t N, int64_t K, const float* packed_a, const float* B,
                      int64_t ldb, float* C, int64_t ldc, const Epilogue& epi, int threads);

size_t conv_packed_weight_floats_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s);
void conv_pack_weight_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, const float* w, float* packed);
size_t conv_workspace_floats_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, int threads);
void conv2d_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, const float* x, const float* packed_w,
               float* y, const Epilogue& epi, float* workspace, int threads);
size_t pool2d_workspace_floats_on(const KernelTable& t, const Conv2dShape& s, int threads);
void pool2d_on(const KernelTable& t, PoolKind kind, const Conv2dShape& s, bool count_include_pad, const float* x,
               float* y, float* workspace, int threads);
void global_average_pool_on(const KernelTable& t, const float* x, int64_t planes, int64_t size, float* y, int threads);
void global_average_pool_blocked_on(const KernelTable& t, const float* x, int64_t N, int64_t C, int64_t size, float* y,
                                    int threads);
void max_pool_blocked_on(const KernelTable& t, const Conv2dShape& s, const float* x, float* y, int threads,
                         bool planar_out = false);

}  // namespace kiln::kernels

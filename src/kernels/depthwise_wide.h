// Depthwise convolution between 16-channel blocks (Conv2dShape::x_block == y_block ==
// kConvBlockWide), AVX-512 only, on input rows of up to kDepthwiseWideMaxInWidth pixels: a vector
// is one pixel's whole block, so every tap of the window is one load times the tap's 16 weights,
// with no transpose in or out. 'Same' 3x3 and 5x5 windows without a residual read their input
// rows in place (depthwise_wide_in_place_avx512); other windows first copy the rows a call's
// outputs read into a zero-bordered plane (avx512/depthwise_wide_avx512.cpp). What it is for: the 1x1 expand before a depthwise
// layer then writes 16-channel blocks, one vector a pixel, where into 8-channel blocks it pairs
// two pixels' halves per vector and, on 7x7 planes (24.5 lines a block), straddles lines: 1.04-
// 1.10 of the time at two threads (conv_bench ExpandOut8vs16); and the projection after it reads
// 16-channel blocks too. mobilenet_v2 at two threads 0.943 of the time, at one 0.971
// (docs/kernels.md, forty-sixth session).
//
// Numerics: each output is the 8-channel kernels' (depthwise_blocked.inl): the taps summed from
// zero, row by row and within a row left to right, as FMAs (the padding's zeros included), then
// fma(sum, alpha, bias), the residual, the activation: the same floats.
#pragma once
#include <cstdint>
#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels::detail {

// The epilogue of one 16-channel block.
struct DepthwiseWideOut {
  float alpha = 1.f;
  const float* bias = nullptr;      // the block's 16 biases; null: none
  const float* residual = nullptr;  // the block's plane laid out as the output; null: none
  Act act = Act::None;
  float act_alpha = 0.f, act_beta = 0.f;
};

// Block c0's epilogue from the layer's (bias, scale, activation; the residual is the caller's).
inline DepthwiseWideOut depthwise_wide_out(const Epilogue& epi, int64_t c0) {
  DepthwiseWideOut out;
  out.alpha = epi.alpha;
  if (epi.bias) out.bias = epi.bias + c0;
  out.act = epi.act, out.act_alpha = epi.act_alpha, out.act_beta = epi.act_beta;
  return out;
}

// Most taps a window may have (the tap vectors live on the kernel's stack).
constexpr int64_t kDepthwiseWideMaxTaps = 49;
// Widest input rows: the kernel copies the rows its outputs read into a zero-bordered plane
// first, which pays for itself on small planes only. In-process pairs against the 8-channel
// kernels (one thread, Xeon 5th gen): 960 at 7x7 0.62, 576 at 14x14 to 7x7 (stride 2) 0.59-0.64,
// 384 and 576 at 14x14 1.07-1.12; 192 at 28x28 1.28-1.36 and to 14x14 1.48-1.54, 144 at 56x56
// to 28x28 1.28-1.38, where the copy leaves L1 and the pair kernels read in place. (Read in place,
// Zen 5, one thread, against the 8-channel kernels: 192 at 28x28 0.91, 144 at 56x56 0.97, at
// stride 2 0.69-0.82: conv_bench DepthwiseWideInPlace. The layout pass still gives 16-channel
// blocks to rows of up to this width only; the expand + depthwise pairs use the in-place kernel
// on any width inside their own kernel.)
constexpr int64_t kDepthwiseWideMaxInWidth = 16;

// Output rows [oh0, oh1) of one 16-channel block of one image: x its input plane ([H][W][16]),
// pair_w its first 8-channel block's pair copy of the weights (conv_pack_weight, Depthwise:
// per 8-channel block, per tap, the 8 weights twice), y its output plane ([OH][OW][16]).
// src/kernels/avx512/depthwise_wide_avx512.cpp.
void depthwise_wide_rows_avx512(const DepthwisePlane& g, const float* x, const float* pair_w, float* y, int64_t oh0,
                                int64_t oh1, const DepthwiseWideOut& e);

// Output rows [0, g.OH) of one 16-channel block read in place (no padded copy: for planes of any
// width, e.g. a band of expanded rows in L2): x the block's input rows ([g.H][g.W][16]), pair_w
// as above, y_lo / y_hi the output planes of its two 8-channel halves ([OH][OW][8] each, the
// 8-channel blocked layout the layer after reads), or with y_hi null the output in 16-channel
// blocks at y_lo ([OH][OW][16], as depthwise_wide_rows_avx512 writes it). 3x3 or 5x5 windows,
// 'same' padding on the left (K / 2), stride 1 or 2, no dilation, no residual: the caller checks
// depthwise_wide_in_place_supports (this file is built with the AVX-512 flags and throws nothing).
// fetch_for_write: each output row's lines fetched for writing a row ahead (TileEpilogue::
// fetch_for_write). The floats are the 8-channel kernels' (as above).
bool depthwise_wide_in_place_supports(const DepthwisePlane& g);
// Whether the 16-channel depthwise layers (depthwise_wide, and the depthwise + projection pairs on
// 16-channel blocks) read their input in place where depthwise_wide_in_place_supports says they
// can, instead of through the zero-bordered copy. KILN_DW_WIDE_IN_PLACE=0 at start-up turns it
// off; in-process A/B harnesses flip it between calls. Same floats either way.
extern bool depthwise_wide_in_place_enabled;
void depthwise_wide_in_place_avx512(const DepthwisePlane& g, const float* x, const float* pair_w, float* y_lo,
                                    float* y_hi, const DepthwiseWideOut& e, bool fetch_for_write);
// Output rows [oh0, oh1) of one 16-channel block into 16-channel blocks, arguments as
// depthwise_wide_rows_avx512's: in place where depthwise_wide_in_place_enabled and the window
// allow it and there is no residual, else through the zero-bordered copy.
void depthwise_wide_block_rows(const DepthwisePlane& g, const float* x, const float* pair_w, float* y, int64_t oh0,
                               int64_t oh1, const DepthwiseWideOut& e);

// Why table t cannot run s (16-channel blocks in and out) this way; empty when it can. The
// checks every tactic shares (padded planes, shapes) are conv_tactic_unsupported's, which asks this.
std::string depthwise_wide_unsupported(const KernelTable& t, const Conv2dShape& s);

// The whole call on `threads` threads: blocks of every image, cut into bands of rows when there
// are fewer blocks than pieces for the threads. No channel means (KILN_CHECK).
void depthwise_wide(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                    const Epilogue& epi, int threads);

}  // namespace kiln::kernels::detail

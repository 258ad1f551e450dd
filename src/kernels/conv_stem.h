// The direct tactic's RGB stems on AVX-512 as pixel vectors (conv_stem.cpp,
// avx512/conv_stem_avx512.cpp): a 3x3, stride-2, pad-1 window over a planar input of a few
// channels (mobilenet_v2's 3 x 224 x 224 -> 32 x 112 x 112) into 8-channel blocks.
//
// Why: the direct tile holds 14 output pixels by 32 channels and broadcasts one input float for
// every 2 FMAs, through 9 segments of 3 K steps (a tap's 3 channels). On Zen 4 that tile ran the
// stem at 69-75% of the FMA peak, the lowest of mobilenet_v2's convolutions (kiln profile: 63%
// in the model at two threads). Here a vector holds 16 output pixels of one channel: each K step
// loads 3 vectors of input and broadcasts 8 weights for 24 FMAs (3 x 8 accumulators), all 27
// steps unrolled. The stride-2 taps become plain loads because each band's input rows are first
// split into their even and odd columns (the odd ones behind a zero: the left padding). A tile's
// 8 channels x 48 pixels are transposed into the output's 8-channel blocks after the epilogue.
// A stand-alone probe of the loop (no transposes) ran at 93% of the peak on one core; with them
// and the column split, mobilenet_v2's stem took 239 us against the tile's 251-253 at one thread,
// 121-123 against 130-131 at two (conv_bench Stem, KILN_CONV_BLOCKED=1, KILN_DIRECT_STEM=0 / 1).
//
// Numerics: each output is the direct tile's: its 27 products summed from zero in the same
// order (kh, kw, channel), the padding's taps adding zeros as the stem bands' copy does, then
// scale, bias and activation as conv_tile_finish applies them: the same floats.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels::detail {

// KILN_DIRECT_STEM=0 in the environment at start-up turns it off (the stem bands or the general
// schedule then run these layers); in-process A/B harnesses flip it between calls.
extern bool direct_stem_enabled;
// stem_depthwise_project's bands (KILN_STEM_BANDS=0 at start-up turns them off: the stem, then the
// pair); in-process A/B harnesses flip it between calls.
extern bool stem_bands_enabled;

// Whether conv_direct_stem runs s with epilogue e on table t: AVX-512, the switch on, 3x3
// windows at stride 2 with one pixel of padding on every side and no dilation, one group, a
// planar unpadded input of up to kStemMaxChannels channels and even width, an unpadded output in
// 8-channel blocks of 16 to a row or a multiple of 16 (OW = W / 2), weights in 32-column panels
// (not p64), no residual or channel means, activation None, Relu or Clip.
constexpr int64_t kStemMaxChannels = 4;
bool direct_stem_applies(const KernelTable& t, const Conv2dShape& s, const Epilogue& e);

// One band of output rows [oh0, oh1) of one image (conv_direct_stem's part), on the AVX-512 flags.
struct StemBand {
  const float* x = nullptr;  // the image's input, [C][H][W]
  const float* w = nullptr;  // the packed weight: 32-column panels of rows q = (kh * 3 + kw) * C + c
  float* y = nullptr;        // the image's output, [K / 8][OH][OW][8] (or y_rows rows a block)
  int64_t C = 0, H = 0, W = 0, K = 0, OH = 0, OW = 0, oh0 = 0, oh1 = 0;
  // A band's own planes (stem_depthwise_project): y holds y_rows rows a block, output row oh at
  // plane row oh - y_row0. 0, 0: the whole image's planes.
  int64_t y_rows = 0, y_row0 = 0;
  int64_t out_rows() const { return y_rows ? y_rows : OH; }
  float alpha = 1.f;
  const float* bias = nullptr;
  Act act = Act::None;
  float act_alpha = 0.f, act_beta = 0.f;
  float* scratch = nullptr;  // stem_band_scratch_floats(C, W, oh1 - oh0) floats, 64-byte aligned
  // Each tile's output lines fetched for writing before its K loop (write_prefetch_pays: the
  // cores far apart, where the arena lines it overwrites often sit in the other core's cache).
  // mobilenet_v2, in-process pairs against none: 0.9950-0.9960 far (5150 pairs), 0.9973-0.9996
  // close (2650).
  bool fetch_for_write = false;
};
size_t stem_band_scratch_floats(int64_t C, int64_t W, int64_t rows);
// Output rows [oh0, oh1) of image n of stem s with epilogue epi into y (the image's planes; the
// caller may point it at a band's instead, StemBand::y_rows / y_row0), scratch to be set.
StemBand stem_band(const Conv2dShape& s, int64_t n, const float* x, const float* packed_w, const Epilogue& epi,
                   float* y, int64_t oh0, int64_t oh1);
void stem_band_avx512(const StemBand& b);

// The whole call on `threads` threads: bands of output rows of every image.
void conv_direct_stem(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                      const Epilogue& epi, int threads);

}  // namespace kiln::kernels::detail

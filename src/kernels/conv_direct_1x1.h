// The direct tactic's schedule for 1x1 convolutions between channel-blocked activations
// (conv_direct_1x1.cpp): tiles of 7 pixels by 64 output channels that run over the input
// channels in batches of 128, each batch adding into the partial sums the previous one stored
// in the output, so that a batch's weight rows (128 x 64 floats, 32 KiB) stay in L1 while the
// tiles stream the input past them. conv_direct takes it when direct_1x1_applies; the packed
// weight and the workspace are the direct tactic's own.
#pragma once
#include <cstdint>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels::detail {

// The schedule's switch: KILN_DIRECT_1X1=0 in the environment at start-up turns it off (the
// general schedule then runs these layers too: an A/B between processes); in-process A/B
// harnesses flip it between calls. A runtime choice: artifacts are the same either way.
extern bool direct_1x1_enabled;

// A 1x1 unpadded convolution of stride 1 or 2 from and to channel-blocked activations (the
// output's planes may be padded for its reader), output channels a multiple of 64, outputs of
// at least 16 tiles (14x14 and up; a band: its whole layer's, Conv2dShape::whole_out_h), an
// epilogue the tiles apply as they store (alpha 1: the first batch adds the bias and the
// residual), on a table with the tile (AVX-512).
bool direct_1x1_applies(const KernelTable& t, const Conv2dShape& s, const Epilogue& e);

// Whether threads share out the layer's 64-channel groups (each group's weights read once)
// rather than its tiles of pixels (each thread reading all the weights): only when the weight
// is the larger operand and more than kTileSplitMaxWeightBytes (see the .cpp).
bool conv_1x1_splits_groups(const Conv2dShape& s);

// KernelTable::conv_1x1_blk's slot for the input's blocks and stride (s.x_blocked).
int conv_1x1_slot(const Conv2dShape& s);

// One image: x its blocked input, y its output planes (their interior when padded; the border
// is the caller's), e's residual and bias at this image's, on `threads` threads.
void conv_direct_1x1_image(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                           const Epilogue& e, int threads);

}  // namespace kiln::kernels::detail

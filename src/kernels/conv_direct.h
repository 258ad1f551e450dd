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
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/kernels/dispatch.h"

namespace kiln::kernels::detail {

// Pieces per thread the work is cut into (parallel_for's own limit): a thread that finishes its
// share first takes the other's last pieces. Inside resnet18 at 2 threads the two halves of a
// 3x3 layer, cut once, finished 20-110 us apart on average (of 240-730 us), whichever core
// the host slowed that moment. (The general schedule and the 1x1 one, conv_direct_1x1.cpp.)
constexpr int64_t kPiecesPerThread = 4;

std::string direct_unsupported(const Conv2dShape& s);
size_t direct_packed_weight_floats(const KernelTable& t, const Conv2dShape& s);
void direct_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed);
size_t direct_workspace_floats(const KernelTable& t, const Conv2dShape& s, int threads);
void conv_direct(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                 const Epilogue& epi, float* workspace, int threads);

}  // namespace kiln::kernels::detail

// The pixel-gemm convolution tactic (conv.h): output pixels are the GEMM's rows and output
// channels its columns, C[OH*OW, K] = im2colᵀ · Wᵀ with the weight packed as B, then C is
// transposed into the NCHW output with the epilogue. Small images (resnet's 14x14 and 7x7
// stages) fill the micro-kernel's 16-float columns with channels (K = 256..2048) instead of
// 49 or 196 pixels, and a 3x3 window wastes no columns on the stride-phase grid.
#pragma once
#include <cstddef>

#include "gemm_driver.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels::detail {

size_t pixel_packed_weight_floats(const KernelTable& t, const Conv2dShape& s);
void pixel_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed);
// Wᵀ with K order (tap, channel) in nr-column panels: the pixel-gemm tactic's B (nr = the
// GEMM's tile) and the direct tactic's weight (nr = the convolution tile's); with taps_inner
// K order (window row, channel, window column) instead (the direct tactic's planar inputs of
// fewer channels than window columns: conv_direct.cpp's Plan::taps_inner).
size_t weight_panel_floats(const Conv2dShape& s, int nr);
void pack_weight_panels(const Conv2dShape& s, const float* w, int nr, float* packed, bool taps_inner = false);
size_t pixel_workspace_floats(const KernelTable& t, const Conv2dShape& s);
void conv_pixel_gemm(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                     const Epilogue& epi, float* workspace, int threads);

// How a convolution's GEMM cuts its parts, given which GEMM dimension holds its output pixels:
// the pixels (what every conv kernel cuts, see kiln/kernels/parallel.h), unless the weight has
// more elements than input and output together (resnet50's layer4: 4 MiB of weight, 0.2 MiB of
// pixels) - then output channels, so each thread streams only its share of the weight.
GemmProblem::Split conv_split(const Conv2dShape& s, bool pixels_on_rows);

}  // namespace kiln::kernels::detail

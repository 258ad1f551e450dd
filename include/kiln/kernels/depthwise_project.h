// A depthwise convolution and the 1x1 projection that alone reads its output (mobilenet_v2's and
// efficientnet_b0's inverted residual blocks, the other half of expand_depthwise in conv.h), run
// together band by band of output rows: each thread computes its band's depthwise rows, every
// channel, into its own scratch, and the 1x1 reads them from there while they are in L1/L2,
// instead of the whole depthwise output going out to L3 and back (mobilenet_v2's 56x56 x 144
// channels: 1.8 MB). lower/depthwise_project.cpp picks the pairs.
#pragma once
#include <cstddef>
#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels {

// "" when the pair can run band by band, else why not. `depthwise`: C == K == group, input and
// output in blocks of one size (8 channels, on a table with the blocked depthwise kernel, or 16
// through small planes: depthwise_wide.h); `project`: 1x1, stride 1, unpadded, one group, direct
// tactic, reading the depthwise output in its blocks, writing blocked, unpadded planes. Bands
// of up to 512 KiB of depthwise rows, a multiple of the threads; with a workspace, the two
// calls one after the other wherever depthwise_project_bands_pay says no (one thread; close
// cores, unless the pair is one band per thread of 6 rows or more).
std::string depthwise_project_unsupported(const Conv2dShape& depthwise, const Conv2dShape& project);
// Workspace floats for up to `threads` threads: the whole depthwise output and the two
// convolutions' own, for the two calls one after the other (a single band). Without a workspace
// the call runs band by band.
size_t depthwise_project_workspace_floats(const Conv2dShape& depthwise, const Conv2dShape& project, int threads);
// The input channels of the first half when depthwise_project runs the pair (a valid one) on
// `threads` threads as two halves of its channels, one a thread, the halves' projection sums
// added at the end (two or more threads where the bands pay, expand_bands_pay in dispatch.h: the
// cores far apart; one image, a plane of fewer than kCloseBandMinRows rows a thread, a
// projection the direct tactic sums in two K blocks: mobilenet_v2's 7x7 pairs of 960 channels,
// 480); 0 when it runs otherwise. The outputs are the other paths' bit for bit.
int64_t depthwise_project_k_split(const Conv2dShape& depthwise, const Conv2dShape& project, const Epilogue& epi_p,
                                  int threads);
// y = project_epi(project(depthwise_epi(depthwise(x)))); packed weights as conv_pack_weight packs
// them for the depthwise and the direct tactic. No residual on the depthwise convolution and no
// channel means on either; the projection may add a residual (y's blocked layout).
void depthwise_project(const Conv2dShape& depthwise, const Conv2dShape& project, const float* x,
                       const float* packed_wd, const Epilogue& epi_d, const float* packed_wp, const Epilogue& epi_p,
                       float* y, float* workspace, int threads);

}  // namespace kiln::kernels

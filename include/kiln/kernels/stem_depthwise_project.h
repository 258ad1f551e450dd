// An RGB stem (a 3x3, stride-2 convolution of a few input channels) and the depthwise + 1x1
// projection pair that alone reads its output (mobilenet_v2's features.0 and features.1), run
// together band by band of the projection's output rows: each thread computes the stem rows its
// band's depthwise windows reach into its own scratch, the depthwise rows from there into a
// second scratch, and projects those into the output. Apart, the stem writes its whole output
// (112x112 x 32 channels: 1.6 MB) and the depthwise layer reads it back and writes as much again
// for the projection; banded, those stay in the thread's L2 and the three kernels are one
// parallel region. The rows a band's windows share with the band its thread ran before (two, at
// stride 1 with 3x3 windows) are kept, not computed again (detail::KeptRows). The kernels are the
// stem's own (conv_stem.h), depthwise_block and the direct tactic's 1x1, so the floats are the
// three calls' one after the other. lower/stem_depthwise_project.cpp picks the triples.
#pragma once
#include <cstddef>
#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels {

// "" when the triple can run band by band, else why not. `stem`: a layer the direct tactic runs
// as pixel vectors with activation `stem_act` (conv_stem.h: 3x3, stride 2, padding 1, up to 4
// planar input channels, 8-channel blocks out; AVX-512); `depthwise`, `project`: a pair
// depthwise_project runs, the depthwise layer reading the stem's output in 8-channel blocks.
std::string stem_depthwise_project_unsupported(const Conv2dShape& stem, Act stem_act, const Conv2dShape& depthwise,
                                               const Conv2dShape& project);
// Most input channels a stem has (the pixel-vector kernel's limit, conv_stem.h): a convolution
// over more is no stem, and the lowering says nothing about it.
constexpr int64_t kStemMaxInputChannels = 4;
// Whether the triple runs band by band at `threads` threads: two or more, the switch on
// (KILN_STEM_BANDS=0 at start-up, or detail::stem_bands_enabled, turns it off) and
// expand_bands_pay (dispatch.h: KILN_EXPAND_BANDS pinned on, or the cores far apart). Otherwise
// the stem and then the pair run as the calls they are. mobilenet_v2 at two threads, in-process
// A/B of the artifacts with and without the triple fused, runs alternated in blocks: far
// 0.958-0.974 of the time; close 1.004-1.017 banded (every kernel after it slower too), so
// there the calls run apart.
bool stem_depthwise_project_bands(int threads);
// Workspace floats for the calls one after the other: the stem's whole output, then the
// stem's or the pair's own (depthwise_project_workspace_floats). Without a workspace the call
// runs band by band.
size_t stem_depthwise_project_workspace_floats(const Conv2dShape& stem, const Conv2dShape& depthwise,
                                               const Conv2dShape& project, int threads);
// y = project_epi(project(depthwise_epi(depthwise(stem_epi(stem(x)))))); packed weights as
// conv_pack_weight packs them (direct, depthwise, direct). No residual or channel means on the
// stem or the depthwise layer; the projection may add a residual (y's blocked layout).
void stem_depthwise_project(const Conv2dShape& stem, const Conv2dShape& depthwise, const Conv2dShape& project,
                            const float* x, const float* packed_ws, const Epilogue& epi_s, const float* packed_wd,
                            const Epilogue& epi_d, const float* packed_wp, const Epilogue& epi_p, float* y,
                            float* workspace, int threads);

}  // namespace kiln::kernels

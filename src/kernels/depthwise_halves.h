// The switches of the AVX-512 table's depthwise kernel on 256-bit halves
// (simd/depthwise_blocked.inl, depthwise_halves): its stride-2 layers, and its stride-1 3x3 ones
// on rows of 28 or more.
#pragma once

namespace kiln::kernels::detail {

// KILN_DW_HALVES=0 in the environment at start-up turns it off (the 16-lane pair kernel,
// depthwise_pairs_s2, then runs those layers: an A/B between processes); in-process A/B
// harnesses flip it between calls. Same floats either way.
extern bool depthwise_halves_enabled;
// KILN_DW_HALVES_S1=0: the stride-1 layers on depthwise_pairs_s1 instead (the same floats).
extern bool depthwise_halves_s1_enabled;

}  // namespace kiln::kernels::detail

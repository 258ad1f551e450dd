// The switch of the AVX-512 table's stride-2 depthwise kernel on 256-bit halves
// (simd/depthwise_blocked.inl, depthwise_halves_s2).
#pragma once

namespace kiln::kernels::detail {

// KILN_DW_HALVES=0 in the environment at start-up turns it off (the 16-lane pair kernel,
// depthwise_pairs_s2, then runs those layers: an A/B between processes); in-process A/B
// harnesses flip it between calls. Same floats either way.
extern bool depthwise_halves_enabled;

}  // namespace kiln::kernels::detail

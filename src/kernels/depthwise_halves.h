// The switches of the AVX-512 table's depthwise kernel on 256-bit halves
// (simd/depthwise_blocked.inl, depthwise_halves): its stride-2 layers, and its stride-1 3x3 ones
// on rows of 28 or more where 512-bit FMAs are double-pumped.
#pragma once

namespace kiln::kernels::detail {

// KILN_DW_HALVES=0 in the environment at start-up turns it off (the 16-lane pair kernel,
// depthwise_pairs_s2, then runs those layers: an A/B between processes); in-process A/B
// harnesses flip it between calls. Same floats either way.
extern bool depthwise_halves_enabled;
// The stride-1 layers: on by default only where 512-bit FMAs are double-pumped
// (cpu_fma512_double_pumped: Zen 4, where a 256-bit FMA costs half of a 512-bit one and the
// halves ran mobilenet_v2 0.998 of the time at two threads, 0.9965 at one). With native 512-bit
// FMAs the pair kernel's 16 lanes win: the Zen 5 host, in-process pairs (runtime_modes_bench
// ... dw-halves-s1), the halves cost mobilenet_v2 1.010-1.013 at one thread and 1.005-1.017 at
// two; alone (conv_bench DepthwiseHalves) 1.25-1.35x at 112x112, 56x56 and 28x28.
// KILN_DW_HALVES_S1=0 / =1 at start-up: off / on whatever the CPU (the same floats).
extern bool depthwise_halves_s1_enabled;

}  // namespace kiln::kernels::detail

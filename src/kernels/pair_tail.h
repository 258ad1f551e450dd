// The switch of the AVX-512 table's three-quarter tiles' pixel pairs (simd/conv_tile.inl,
// conv_tile_split on LAST_HALF tiles: 14 pixels by 24 output channels, mobilenet_v2's and
// efficientnet_b0's projections to 24 channels).
//
// Why: such a tile's last vector holds 8 columns. Computed as 256-bit FMAs, one a pixel, it runs
// 28 FMAs a K step for 21 vectors' worth of products; where 512-bit FMAs are native a 256-bit one
// costs a whole FMA slot. So two pixels' 8 columns share one 512-bit accumulator: the two
// pixels' broadcast inputs joined by one 128-bit-lane shuffle (on a shuffle port), times the
// weight row's 8 columns in both halves (one broadcast load), 21 FMAs a step. The pair's halves
// are the two pixels' 8-channel blocks side by side, as the blocked store writes them. Each
// lane's sum is the same FMAs in the same order as the 256-bit ones: the same floats.
#pragma once

namespace kiln::kernels::detail {

// On where 512-bit FMAs are native (not cpu_fma512_double_pumped: on Zen 4 two 256-bit FMAs
// cost one 512-bit one, and the shuffles would be pure loss). KILN_PAIR_TAIL=0 / =1 at start-up:
// off / on whatever the CPU; tests and A/B harnesses flip it between calls.
extern bool three_quarter_pairs_enabled;

}  // namespace kiln::kernels::detail

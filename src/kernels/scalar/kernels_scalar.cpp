// The baseline kernels every CPU runs: portable C++ over a 4-float vector-extension type
// (compiled with the project's default flags, no ISA options).
// Register tile 6 x 8: 12 four-float accumulators + 2 for the B row (16 SSE2/NEON registers).
#include <utility>

#include "kiln/kernels/dispatch.h"
#include "simd/vec_portable.h"

namespace kiln::kernels::scalar {
using V = simd::Vec4;
using namespace simd;
constexpr Isa kIsa = Isa::Scalar;
constexpr int MR = 6, NR = 8;
constexpr int GMR = MR, GNR = NR;  // the GEMM's tile: the direct convolution's
constexpr int64_t KC = 256, MC = 6 * 16, NC = 512;
#include "simd/vecmath.inl"
#include "simd/gemm_tile.inl"
#include "simd/conv_tile.inl"
#include "simd/depthwise.inl"
#include "simd/rows.inl"
#include "simd/depthwise_blocked.inl"
#include "simd/table.inl"
}  // namespace kiln::kernels::scalar

namespace kiln::kernels {
KernelTable make_scalar_table() { return scalar::make_table(); }
}  // namespace kiln::kernels

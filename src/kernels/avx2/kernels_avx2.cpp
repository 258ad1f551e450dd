// The AVX2+FMA kernels: this file is compiled with -mavx2 -mfma (CMakeLists.txt) and only
// reached through the kernel table after CPUID says so.
// Register tile 6 x 16: 12 ymm accumulators + 2 for the B row + 1 broadcast.
#if defined(__x86_64__)
#include "kiln/kernels/dispatch.h"
#include "simd/vec_avx2.h"

namespace kiln::kernels::avx2 {
using V = simd::Vec256;
using namespace simd;
constexpr Isa kIsa = Isa::Avx2;
constexpr int MR = 6, NR = 16;
constexpr int64_t KC = 256, MC = 6 * 20, NC = 1024;
#include "simd/vecmath.inl"
#include "simd/gemm_tile.inl"
#include "simd/conv_tile.inl"
#include "simd/depthwise.inl"
#include "simd/rows.inl"
#include "simd/table.inl"
}  // namespace kiln::kernels::avx2

namespace kiln::kernels {
KernelTable make_avx2_table() { return avx2::make_table(); }
}  // namespace kiln::kernels
#endif

// The AVX-512 kernels: this file is compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl
// -mfma (CMakeLists.txt) and only reached through the kernel table after CPUID says so.
// Register tile 14 x 32: 28 zmm accumulators + 2 for the B row, A broadcast from memory.
#if defined(__x86_64__)
#include "kiln/kernels/dispatch.h"
#include "simd/vec_avx512.h"

namespace kiln::kernels::avx512 {
using V = simd::Vec512;
using namespace simd;
constexpr Isa kIsa = Isa::Avx512;
constexpr int MR = 14, NR = 32;
constexpr int64_t KC = 256, MC = 14 * 12, NC = 1024;
#include "simd/vecmath.inl"
#include "simd/gemm_tile.inl"
#include "simd/rows.inl"
#include "simd/table.inl"
}  // namespace kiln::kernels::avx512

namespace kiln::kernels {
KernelTable make_avx512_table() { return avx512::make_table(); }
}  // namespace kiln::kernels
#endif

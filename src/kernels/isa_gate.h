// Whether the kernel dispatchers may pick a SIMD table at all. Fuzz builds (fuzz/CMakeLists.txt)
// define KILN_SCALAR_KERNELS_ONLY: every kernel the fuzzed importer reaches (shape inference
// folds small constant sub-graphs with the reference kernels) then runs the portable code, which
// is built with AddressSanitizer; the per-ISA files are built without it there, because
// instrumenting their unrolled intrinsics took minutes per file and they would never run.
#pragma once

namespace kiln::kernels {

#ifdef KILN_SCALAR_KERNELS_ONLY
inline constexpr bool kSimdKernelsAllowed = false;
#else
inline constexpr bool kSimdKernelsAllowed = true;
#endif

}  // namespace kiln::kernels

// The kernel table an ISA name picks, for benchmarks that run a lower ISA's kernels on this CPU
// (gemm_bench --isa=, conv_bench KILN_CONV_ISA).
#pragma once
#include <cstring>

#include "kiln/kernels/dispatch.h"

namespace kiln::bench {

// The table of the ISA isa_name() calls `name` ("scalar", "avx2", "avx512"), or nullptr when no
// ISA has that name or this CPU (or build) cannot run it.
inline const kernels::KernelTable* table_named(const char* name) {
  using kernels::Isa;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (std::strcmp(kernels::isa_name(isa), name) == 0) return kernels::kernel_table_for(isa);
  return nullptr;
}

}  // namespace kiln::bench

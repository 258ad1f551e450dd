// The register-tile physics of kiln's GEMM micro-kernels, for the perf model on a measured CPU
// (perf_cpu.h). Every GEMM-shaped kernel (MatMul, the convolution tactics) runs an mr x nr
// register tile: per step of the reduction dim it loads v = nr / lanes vectors of B, broadcasts
// r values of A (one load each) and issues r x v vector FMAs. So an r-row, v-vector tile takes
//   step(r, v) = max(r v / F, (r + v) / L, λ)    seconds per K step,
// F the core's vector FMAs per second (measured FP32 peak / (2 x lanes)), L its vector loads
// per second (measured L1 read bandwidth / (4 x lanes)) and λ the shortest step any tile takes:
// each of the r x v accumulators takes one FMA per step and waits for its previous one, so a
// tile with few accumulators runs at the FMA latency, not the issue rate (λ measured by kiln
// machine as a 1-row, one-panel GEMM's seconds per K step, `gemm_row`). A GEMM of M rows and N columns is
// floor(M / mr) full row panels and one of M mod mr rows, times floor(N / nr) full column panels
// and one of ceil((N mod nr) / lanes) vectors; its tile efficiency is the peak's time for the
// useful work over the tiles' time:
//   efficiency(M, N) = (M N / lanes / F) / sum over tiles of step(r, v)
// 1 for full tiles that are FMA-bound; below 1 when N is not a multiple of the vector (masked
// lanes), or when few rows make a tile load- or latency-bound (a GEMV row: max(3 / L, λ) for
// 2 / F of work).
#pragma once
#include <cstdint>

#include "kiln/analysis/machine.h"

namespace kiln::analysis {

struct MicroKernel {
  int64_t mr = 0, nr = 0, lanes = 0;  // register tile rows, columns (floats), floats per vector
  double fma_per_s = 0;               // vector FMAs per second, one core
  double loads_per_s = 0;             // vector loads per second, one core
  double min_step_s = 0;              // λ: shortest K step of any tile (FMA latency bound)
};

// This CPU's micro-kernel (the kernel table's GEMM tile, or with direct_conv the direct
// convolution's) with the measured ceilings of `m`; the load rate is the FMA rate when `m` has
// no L1 bandwidth; λ is 0 when `m` has no gemm_row.
MicroKernel micro_kernel(const MachinePeaks& m, bool direct_conv = false);

// Seconds per K step of an r-row, v-vector tile.
double tile_step_seconds(int64_t r, int64_t v, const MicroKernel& k);

// Fraction of the FMA peak the register tiles reach on an M x N GEMM (1 when M or N is 0:
// nothing to tile).
double tile_efficiency(int64_t M, int64_t N, const MicroKernel& k);

}  // namespace kiln::analysis

// Pieces of `kiln machine` shared between its files.
#pragma once
#include <string>
#include <vector>

namespace kiln::analysis {

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx_vnni = false;
  std::vector<std::string> names() const;
};
CpuFeatures cpu_features();

// Logical CPU ids, one per physical core this process may run on.
std::vector<int> one_cpu_per_core();

struct MeasureOptions;
struct MachinePeaks;
// Fills m.kernels: kiln's kernels at calibration shapes on one core (machine_kernel_rates.cpp).
void measure_kernel_rates(MachinePeaks& m, const MeasureOptions& opt);

}  // namespace kiln::analysis

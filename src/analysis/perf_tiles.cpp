// Register-tile efficiency of kiln's GEMM micro-kernels (perf_tiles.h).
#include "perf_tiles.h"

#include <algorithm>

#include "kiln/ir/error.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::analysis {

MicroKernel micro_kernel(const MachinePeaks& m, bool direct_conv) {
  const kernels::KernelTable& t = kernels::kernel_table();
  MicroKernel k;
  k.mr = direct_conv ? t.conv_shape.mr : t.gemm.mr, k.nr = direct_conv ? t.conv_shape.nr : t.gemm.nr;
  k.lanes = t.simd_width;
  k.fma_per_s = m.fp32_gflops_per_core * 1e9 / (2.0 * static_cast<double>(k.lanes));
  k.loads_per_s = k.fma_per_s;
  for (const auto& c : m.caches)
    if (c.level == "L1" && c.gbs_one_core > 0) k.loads_per_s = c.gbs_one_core * 1e9 / (4.0 * static_cast<double>(k.lanes));
  if (const KernelRate* row = m.kernel("gemm_row"); row && row->vector_ops > 0)
    k.min_step_s = row->seconds / static_cast<double>(row->vector_ops);
  return k;
}

double tile_step_seconds(int64_t r, int64_t v, const MicroKernel& k) {
  KILN_CHECK(k.fma_per_s > 0 && k.loads_per_s > 0, "micro-kernel rates must be positive");
  const double rv = static_cast<double>(r * v);
  return std::max({rv / k.fma_per_s, static_cast<double>(r + v) / k.loads_per_s, k.min_step_s});
}

double tile_efficiency(int64_t M, int64_t N, const MicroKernel& k) {
  if (M <= 0 || N <= 0) return 1;
  KILN_CHECK(k.mr > 0 && k.nr > 0 && k.lanes > 0 && k.nr % k.lanes == 0, "micro-kernel tile must be positive");
  const int64_t vmax = k.nr / k.lanes;
  const int64_t full_r = M / k.mr, rem_r = M % k.mr;
  const int64_t full_c = N / k.nr, rem_v = (N % k.nr + k.lanes - 1) / k.lanes;
  const int64_t row_count[2] = {full_r, rem_r > 0 ? 1 : 0}, rows[2] = {k.mr, rem_r};
  const int64_t col_count[2] = {full_c, rem_v > 0 ? 1 : 0}, vecs[2] = {vmax, rem_v};
  double tiles = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      if (row_count[i] > 0 && col_count[j] > 0)
        tiles += static_cast<double>(row_count[i] * col_count[j]) * tile_step_seconds(rows[i], vecs[j], k);
  const double ideal = static_cast<double>(M) * static_cast<double>(N) / static_cast<double>(k.lanes) / k.fma_per_s;
  return ideal / tiles;
}

}  // namespace kiln::analysis

#include "fetch_ahead.h"

#include <atomic>

#include "kiln/ir/env.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::runtime {
namespace {

std::atomic<bool> g_fetch_ahead{env_switch("KILN_FETCH_AHEAD", fetch_ahead_default())};

}  // namespace

bool fetch_ahead_default() { return kernels::cpu_amd_family() != 0x1a; }

bool fetch_ahead_on() { return g_fetch_ahead.load(std::memory_order_relaxed); }
void set_fetch_ahead(bool on) { g_fetch_ahead.store(on, std::memory_order_relaxed); }

void assign_fetch_ahead(const std::vector<FetchAheadStep>& steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const FetchAheadStep& cold = steps[i];
    if (!cold.fast || !cold.fast->cold_weights) continue;
    int64_t bytes = 0;
    const void* at = cold.fast->cold_weights(*cold.ctx, bytes);
    if (!at || bytes < kMinColdWeightBytes) continue;
    for (size_t back = 1; back <= kFetchAheadSteps && back <= i; ++back) {
      const FetchAheadStep& s = steps[i - back];
      if (!s.fast || !s.fast->fetches_ahead || s.ctx->warm || !s.fast->fetches_ahead(*s.ctx)) continue;
      s.ctx->warm = at, s.ctx->warm_bytes = bytes, s.ctx->warm_for = cold.ctx->node;
      break;
    }
  }
}

}  // namespace kiln::runtime

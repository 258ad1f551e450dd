// Where a kernel's bytes come from on a CPU: cache residency by reuse distance over the runtime's
// memory plan (perf_cpu.h uses it to price each byte at its level's bandwidth).
//
// A byte is in a cache level when everything touched since it was last touched, plus the kernel's
// own working set, fits that level: reuse distance = (bytes touched by the kernels between) +
// (this kernel's bytes) <= the level's capacity. Addresses are the plan's: arena values at their
// offsets (so a tensor written over a dead one finds its lines where the dead one left them,
// and a write to arena memory not touched for a long time first reads its lines from DRAM),
// weights, inputs and outputs each in a range of their own, views as their root, each kernel's
// workspace at its scratch offset. Tracked per 4 KiB page. The runtime runs the plan again and
// again, so the plan is walked twice and the second walk is the one recorded: at its start every
// byte was last touched in the first (weights re-read every run are as far as a whole run).
#pragma once
#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/plan/plan.h"

namespace kiln::analysis {

// Levels: 0 .. capacities.size()-1 are caches (innermost first); capacities.size() is DRAM.
constexpr int kMaxLevels = 4;  // L1, L2, L3, DRAM
struct KernelResidency {
  // Planned bytes of the kernel's tensors by level: activations (and graph inputs) read, weights
  // read, and bytes written (for a write, the level its lines were in: write-allocate source).
  std::array<double, kMaxLevels> read{}, weights{}, written{};
};

// Per step's node, for a CPU whose cache levels hold `capacities` bytes (innermost first, at most
// kMaxLevels - 1). Steps that touch nothing (views) are left out.
std::unordered_map<const Node*, KernelResidency> plan_residency(const plan::Plan& p,
                                                                const std::vector<int64_t>& capacities);

}  // namespace kiln::analysis

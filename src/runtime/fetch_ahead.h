// Fetching ahead: a step that streams constant weights once from memory (a network's classifier
// GEMV: 5 MiB on mobilenet_v2, 2 FLOPs a float) has nothing to hide that traffic behind, while
// the convolution a step or two before it is bound by its FMAs. That convolution's tiles fetch
// the weights into L2 as they compute (kernels::Epilogue::warm), and the GEMV then reads them
// from L2 and L3. docs/runtime.md, "Fetching ahead".
#pragma once
#include <vector>

#include "kiln/runtime/step.h"

namespace kiln::runtime {

struct FetchAheadStep {
  const FastKernel* fast = nullptr;  // nullptr: the reference kernel runs the step
  StepContext* ctx = nullptr;
};

// Weights below this are taken to stay in L2 or L3 between runs: not worth the prefetches.
constexpr int64_t kMinColdWeightBytes = 1 << 20;
// How many steps back the fetching step may be (mobilenet_v2 and efficientnet_b0: the last 1x1,
// then the average pool, then the classifier; Flatten is a view).
constexpr size_t kFetchAheadSteps = 3;

// Sets StepContext::warm on the fetching step of each cold step: the nearest of the
// kFetchAheadSteps before it whose kernel fetches ahead and fetches for no other step. `steps`
// in run order, their inputs bound.
void assign_fetch_ahead(const std::vector<FetchAheadStep>& steps);

}  // namespace kiln::runtime

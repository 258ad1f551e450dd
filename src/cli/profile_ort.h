// ONNX Runtime's own per-node profile for `kiln profile --vs ort`: scripts/ort_bench.js with
// --profile, in a node child process that blocks on stdin between commands (bench_ort.cpp's
// protocol), so its runs can bracket kiln's profiled runs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bench_backends.h"
#include "bench_process.h"
#include "kiln/analysis/profile_peer.h"

namespace kiln::cli {

class OrtProfiler {
 public:
  // Starts ORT on `model` with `inputs` (written as .npy under work_dir) at `threads`. Throws one
  // line when node, the script or onnxruntime-node is missing, or ORT cannot load the model.
  OrtProfiler(const std::string& script, const std::string& model, const TensorMap& inputs, int threads,
              const std::string& work_dir);
  ~OrtProfiler();
  // n timed runs, then waits until ORT's worker threads stop spinning (so kiln's runs that
  // follow have the cores).
  void run(int n);
  // Ends ORT's profiler: each node's median kernel time over the last `runs` runs, and the median
  // whole run, into `nodes` and `run_ms`.
  void finish(int runs, std::vector<analysis::PeerNode>& nodes, double& run_ms);

 private:
  std::string reply();
  std::unique_ptr<LineProcess> process_;
};

}  // namespace kiln::cli

// The compiled backend of `kiln bench`: compile_file into a temporary artifact (or load the
// given one), then Executable::run.
//
// The compile uses a fresh kernel cache under the bench's temporary directory, so the
// reported compile time (and the break-even count derived from it) is that of a first,
// cold compile, not of a cache hit from an earlier bench.
#include <chrono>
#include <thread>

#include "bench_backends.h"
#include "kiln/compiler/compile.h"
#include "kiln/kernels/parallel.h"

namespace kiln::cli {
namespace {

class CompiledBackend : public CompiledBenchBackend {
 public:
  explicit CompiledBackend(CompiledBackendSpec spec) : spec_(std::move(spec)) {
    opt_.threads = spec_.threads;
    if (spec_.is_artifact) exe_ = Executable::load(spec_.model_path);
  }
  std::string name() const override { return "compiled"; }

  void prepare(const TensorMap& inputs) override {
    inputs_ = inputs;
    if (exe_) return;
    compiler::CompileOptions copt;
    copt.inputs = spec_.shapes;
    copt.threads = spec_.threads;
    copt.cache_dir = spec_.work_dir + "/kernel_cache";
    std::string artifact = spec_.work_dir + "/model.kiln";
    auto t0 = std::chrono::steady_clock::now();
    compiler::compile_file(spec_.model_path, artifact, copt);
    compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    exe_ = Executable::load(artifact);
  }

  TensorMap run_once() override { return exe_->run(inputs_, opt_); }

  // Times Executable's vector API, which a serving loop would call: inputs in graph order,
  // resolved once, and output tensors kept between runs, so the steady runs time the runtime
  // (which allocates nothing) rather than the name-keyed map run_once builds for the output
  // check (GPT-2's decode step: 25 outputs, ~100 heap allocations a run).
  std::vector<double> time_runs(int n, int gap_ms) override {
    const Graph& g = *loaded().model().graph;
    ordered_.assign(g.inputs.size(), Tensor());
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (auto it = inputs_.find(g.inputs[k]->name); it != inputs_.end()) ordered_[k] = it->second;
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      if (gap_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
      auto t0 = std::chrono::steady_clock::now();
      exe_->run(ordered_, outputs_, opt_);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return ms;
  }
  // The pool's workers spin for the idle spin after a run (kernels::set_idle_spin): the next
  // backend's block waits until they stop, as kiln's block waits for ORT's spinning workers.
  double wait_until_idle() override {
    const auto left = kernels::idle_spin_left();
    std::this_thread::sleep_for(left);
    return std::chrono::duration<double>(left).count();
  }
  std::optional<double> compile_seconds() const override { return compile_seconds_; }
  const ArtifactManifest& manifest() const override { return loaded().manifest(); }
  const Model& model() const override { return loaded().model(); }

 private:
  const Executable& loaded() const {
    KILN_CHECK(exe_, "compiled backend: no artifact loaded yet");
    return *exe_;
  }

  CompiledBackendSpec spec_;
  RunOptions opt_;
  TensorMap inputs_;
  std::vector<Tensor> ordered_, outputs_;  // time_runs' inputs in graph order, and its outputs
  std::unique_ptr<Executable> exe_;
  std::optional<double> compile_seconds_;
};

}  // namespace

bool compiled_backend_built() { return true; }

std::unique_ptr<CompiledBenchBackend> make_compiled_backend(const CompiledBackendSpec& spec) {
  return std::make_unique<CompiledBackend>(spec);
}

}  // namespace kiln::cli

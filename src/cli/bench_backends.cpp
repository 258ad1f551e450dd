// The default timing loop and the interpreter backend (the compiled and ORT backends have
// their own files: they need the compiler and a child process).
#include "bench_backends.h"

#include <chrono>
#include <thread>

namespace kiln::cli {

std::vector<double> BenchBackend::time_runs(int n, int gap_ms) {
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (gap_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    auto t0 = std::chrono::steady_clock::now();
    TensorMap out = run_once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

namespace {

class InterpBackend : public BenchBackend {
 public:
  InterpBackend(std::shared_ptr<const Model> model, DimRanges ranges, int threads)
      : model_(std::move(model)), ranges_(std::move(ranges)) {
    opt_.threads = threads;
  }
  std::string name() const override { return "interp"; }
  void prepare(const TensorMap& inputs) override { inputs_ = inputs; }
  TensorMap run_once() override { return run_model(*model_, inputs_, opt_, ranges_); }

 private:
  std::shared_ptr<const Model> model_;
  DimRanges ranges_;
  RunOptions opt_;
  TensorMap inputs_;
};

}  // namespace

std::unique_ptr<BenchBackend> make_interp_backend(std::shared_ptr<const Model> model, const DimRanges& ranges,
                                                  int threads) {
  return std::make_unique<InterpBackend>(std::move(model), ranges, threads);
}

}  // namespace kiln::cli

// Calibration data and the calibration run: the float model runs over every batch with an
// observer on each tensor to be quantized.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/compress/observer.h"
#include "kiln/ir/graph.h"

namespace kiln::compress {

using Inputs = std::map<std::string, Tensor>;

// Batches of model inputs, loaded one at a time (only the current batch is in memory).
class BatchSource {
 public:
  // DIR/*.npy (labels.npy aside): for a model with one input each file is one batch; with several inputs files are
  // named <input>.<k>.npy and batch k takes one of each. Throws naming the directory when it
  // holds no .npy, or when a batch misses an input.
  static BatchSource from_dir(const Model& m, const std::string& dir);
  // `count` batches of seeded random data: f32 inputs standard normal (the zoo's input
  // distribution), integer inputs uniform in [0, int_high). Symbolic dims are taken as 1 unless `dims` binds them.
  static BatchSource random(const Model& m, int count, uint64_t seed, const DimBindings& dims = {},
                            int64_t int_high = 100);
  size_t size() const { return batches_.size(); }
  Inputs batch(size_t i) const;
  std::string describe() const { return what_; }

 private:
  std::vector<std::map<std::string, std::string>> batches_;  // from_dir: input -> file
  std::function<Inputs(size_t)> make_;                         // random: batch i
  std::string what_;
};

// Runs `m` with the reference interpreter on every batch and feeds each tensor named in
// `tensors` (values of the main graph) to its observer; tensors in `channel_axis` also get
// per-channel means along that axis. `progress(i, n)` is called after each batch.
std::map<std::string, Observer> calibrate(Model& m, const std::vector<std::string>& tensors, const BatchSource& data,
                                          const std::map<std::string, int>& channel_axis = {},
                                          const std::function<void(size_t, size_t)>& progress = nullptr);

// Runs `m` on `inputs` and returns the named tensors (graph outputs or any value of the main graph).
std::map<std::string, Tensor> run_with_taps(Model& m, const Inputs& inputs, const std::vector<std::string>& tensors);

}  // namespace kiln::compress

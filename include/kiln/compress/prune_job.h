// `kiln prune` as a library call: load, prepare, plan the channel groups, prune, reconstruct on
// calibration data, write (ONNX or a compiled artifact), and measure what it cost and gained:
// FLOPs, parameters, latency of both compiled models (interleaved, same run), agreement with the
// original on held-out inputs (cosine, and accuracy with labels), with and without the
// reconstruction.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "kiln/compress/prune.h"
#include "kiln/ops/specialize.h"

namespace kiln::compress {

struct PruneJob {
  std::string model_path, out_path;
  std::string format;               // "onnx" or "kiln"; "" = from the extension (.onnx -> onnx)
  PruneOptions options;
  bool reconstruct = true;
  ReconstructOptions reconstruction;
  std::string calib_dir;            // or calib_random > 0 (required when reconstructing)
  int calib_random = 0;
  uint64_t seed = 1;
  ops::InputSpec inputs;
  std::string cache_dir;
  std::ostream* log = nullptr;
  // The report (measure = true): held-out inputs and latency runs.
  bool measure = false;
  std::string eval_dir;             // + labels.npy; "" = eval_random random batches
  int eval_random = 4;
  int runs = 20;
};

struct ModelCost {
  double flops = 0, params = 0, weight_bytes = 0;
};

struct PruneReport {
  std::string model, out, format, calibration, eval_source;
  bool random_calibration = false;
  PrunePlan plan;
  std::vector<LayerFit> fits;
  ModelCost before, after;
  double seconds_reconstruct = 0, seconds_total = 0;
  // The refit is kept only when the output agrees better with the original on the validation
  // images (every 4th calibration image) than plain pruning does.
  bool reconstruction_kept = true;
  double validation_cosine_fit = 0, validation_cosine_plain = 0;
  // measured (PruneJob::measure)
  bool measured = false;
  int64_t eval_samples = 0;
  double cosine_plain = 0, cosine = 0, sqnr_db = 0;          // output 0 vs the original model
  std::optional<double> accuracy_before, accuracy_plain, accuracy_after;
  double ms_before = 0, ms_after = 0;
  int runs = 0;
};

PruneReport prune_file(const PruneJob& job);
// Cost of a float model at its input shapes (symbolic dims bound by `dims`, else 1).
ModelCost model_cost(const Model& m, const DimBindings& dims = {});

std::string format_prune_report(const PruneReport& r);
std::string prune_report_json(const PruneReport& r);

}  // namespace kiln::compress

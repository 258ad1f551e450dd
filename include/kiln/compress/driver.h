// `kiln quantize` as a library call: load, prepare, plan, calibrate, rewrite, write (a QDQ ONNX
// model or a compiled artifact), so the CLI stays a flag parser and tests drive the same path.
#pragma once
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/compress/calibrate.h"
#include "kiln/compress/quantize.h"
#include "kiln/compress/sensitivity.h"
#include "kiln/ops/specialize.h"

namespace kiln::compress {

enum class OutputFormat { Kiln, Qdq };

struct QuantizeJob {
  std::string model_path;
  std::string out_path;
  OutputFormat format = OutputFormat::Kiln;
  bool dynamic = false;          // dynamic quantization of MatMul weights (no calibration)
  // "int8" (static or dynamic as above), or "bf16" / "fp16": Conv/MatMul weights stored in 16 bits
  // (kiln.HalfConv/HalfMatMul: AVX512-BF16 dot products for bf16 where the CPU has them, else f32
  // kernels on the widened weights), no calibration, format kiln only.
  std::string precision = "int8";
  QuantizeOptions options;
  std::string calib_dir;         // or calib_random > 0
  int calib_random = 0;
  uint64_t seed = 1;
  ops::InputSpec inputs;         // dims fixed for compilation (and random calibration data)
  std::string cache_dir;         // generated-kernel cache for compilation ("" = default)
  std::ostream* log = nullptr;   // progress and notes (stderr in the CLI)
  // --accuracy-budget X (static only): keep the most sensitive layers in float until the
  // budget holds on the held-out inputs (sensitivity.h defines X).
  std::optional<double> accuracy_budget;
  std::string eval_dir;          // held-out inputs (+ labels.npy); "" = random batches
  int eval_random = 4;           // random held-out batches when eval_dir is empty
  // "auto": accuracy points when the held-out set has labels, else cosine; "accuracy"; "cosine".
  std::string budget_metric = "auto";
};
// The seed of the random held-out inputs: another stream than the calibration's.
inline uint64_t heldout_seed(const QuantizeJob& job) { return job.seed + 1000003; }

struct QuantizeResult {
  std::vector<std::string> lines;    // what was quantized, one line per node; notes
  QuantPlan plan;                    // static only
  std::string qdq_path;              // the QDQ model (format qdq: out_path)
  std::shared_ptr<Model> qdq;        // static: the QDQ model as written / compiled
  bool random_calibration = false;
  int quantized_nodes = 0;           // compute nodes made int8
  double calibrate_seconds = 0, total_seconds = 0;
  std::optional<BudgetPlan> budget;  // with --accuracy-budget
};

QuantizeResult quantize_file(const QuantizeJob& job);

// The QDQ model of a static job without writing anything (for reports and tests): the float
// model prepared, planned, calibrated and rewritten in memory.
Model quantize_to_qdq(const QuantizeJob& job, QuantizeResult& result);

}  // namespace kiln::compress

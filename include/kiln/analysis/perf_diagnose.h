// "Does my runtime make sense?": a measured time against the perf model's prediction, the
// efficiency, and — when they differ by more than 2x — likely causes found in the graph:
// unfused elementwise chains, materialised attention scores, layout transposes, float GEMMs
// where int8 was possible, host<->device copies on a discrete device, launch overhead.
// Each cause carries the time the model attributes to it, so they can be ranked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/analysis/perf_model.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

struct Cause {
  std::string kind;    // "unfused-elementwise", "materialised-scores", "layout-transpose", "float-gemm",
                       // "host-device-copy", "launch-overhead", "model-too-pessimistic"
  std::string detail;  // one line naming the nodes and numbers
  double ms = 0;       // time the model attributes to it at this batch (0 when not a time)
};

struct Diagnosis {
  int64_t batch = 1;
  double measured_ms = 0;
  double predicted_ms = 0;
  double efficiency = 0;       // predicted / measured (1 = at the model's bound)
  bool off_by_2x = false;
  std::vector<Cause> causes;   // largest first; filled when off_by_2x
};

// "12.5" or "12.5@8" -> {ms, batch}; batch defaults to `default_batch`.
std::pair<double, int64_t> parse_measured(const std::string& s, int64_t default_batch);

// Binds `batch` (through a BatchBinder), predicts it and compares.
Diagnosis diagnose(Model& m, const Chip& chip, const PerfOptions& opt, double measured_ms, int64_t batch);
// The causes the graph offers at its currently bound shapes (used by diagnose; exposed for tests).
std::vector<Cause> find_causes(const Model& m, const PerfRow& row, const Chip& chip, const PerfOptions& opt);

std::string diagnosis_to_text(const Diagnosis& d);
json::Value diagnosis_json(const Diagnosis& d);  // an object

}  // namespace kiln::analysis

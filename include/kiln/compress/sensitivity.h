// Per-layer sensitivity and the accuracy budget (`kiln quantize --accuracy-budget X`).
//
// Sensitivity of a layer: the model's outputs on held-out inputs when ONLY that layer is int8
// (the QDQ model of a plan with every other compute node excluded, interpreted), compared with
// the float model's: cosine and SQNR of the outputs, and the top-1 accuracy when labels are given.
// Its loss is the budget's metric for that model.
//
// The budget X bounds the loss of the whole mixed model:
//   with labels (held-out DIR/labels.npy): loss = float accuracy - mixed accuracy, in points;
//   without:                               loss = (1 - cosine) x 100 of the worst float output,
//                                           cosine over all held-out samples (X = 1: cosine >= 0.99).
// The plan: layers ordered from most to least sensitive (by the cosine loss, which is finer
// than accuracy with one layer quantized); the f most sensitive stay in float, with f the
// smallest count whose mixed model keeps the loss within X, found by bisection over f (the loss
// is taken as non-increasing in f; every evaluated step is reported). f = 0 when the all-int8
// model already fits.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "kiln/compress/calibrate.h"
#include "kiln/compress/quantize.h"

namespace kiln::compress {

// Held-out inputs, loaded once (the sensitivity analysis runs them many times) with the float
// model's outputs on them.
struct EvalSet {
  std::vector<Inputs> batches;
  std::optional<Tensor> labels;   // int64 class per row of output 0
  std::string source;             // "4 random batches (seed ..)" or "N batches from DIR"
};
// DIR (+ labels.npy) when `dir` is given, else `random_batches` seeded random batches.
EvalSet load_eval_set(const Model& m, const std::string& dir, int random_batches, uint64_t seed,
                      const DimBindings& dims = {});

// A model's outputs on an EvalSet against the float model's.
struct EvalScore {
  double worst_cosine = 1, worst_sqnr_db = 0;  // over the float outputs
  std::optional<double> accuracy;              // % with labels
};
class OutputJudge {
 public:
  OutputJudge(const Model& float_model, const EvalSet& eval);
  EvalScore score(const Model& m) const;
  std::optional<double> float_accuracy() const { return float_accuracy_; }
  // The budget's loss of a score: accuracy points lost with labels, else (1 - cosine) x 100.
  double loss(const EvalScore& s) const;
  bool uses_accuracy() const { return eval_.labels.has_value(); }
  std::string metric() const;

 private:
  const EvalSet& eval_;
  std::vector<std::map<std::string, Tensor>> reference_;  // float outputs, per batch
  std::vector<std::string> outputs_;                       // float outputs compared
  std::optional<double> float_accuracy_;
};

struct LayerSensitivity {
  std::string node, op;
  EvalScore score;      // the model with only this layer int8
  double loss = 0;      // (1 - cosine) x 100 of that model
  int rank = 0;         // 1 = most sensitive
  bool kept_float = false;
};
struct BudgetStep {
  int float_layers = 0;
  EvalScore score;
  double loss = 0;
  bool within = false;
};
struct BudgetPlan {
  std::string metric;                     // what the budget bounds
  double budget = 0;
  std::optional<double> accuracy_fp32;
  std::vector<LayerSensitivity> layers;   // graph order
  std::vector<std::string> float_nodes;   // kept in float, most sensitive first
  std::vector<BudgetStep> steps;          // evaluated mixed models, in search order
  BudgetStep final_step;                  // the chosen plan's evaluation
  bool met = false;                       // false only when even one int8 layer breaks the budget
  double seconds = 0;
  std::string eval_source;
};

// Plans the mixed model: `full` is plan_static(prepared, opt) and `observers` its calibration;
// `prepared` the float model after prepare_float_model. Writes progress to `log` when given.
BudgetPlan plan_accuracy_budget(const Model& prepared, const QuantPlan& full,
                                const std::map<std::string, Observer>& observers, const QuantizeOptions& opt,
                                const EvalSet& eval, double budget, std::ostream* log = nullptr);

// The QDQ model with every planned node of `full` except those in `keep_float` quantized
// (a copy of `prepared`, the observers of the full calibration reused).
Model mixed_qdq_model(const Model& prepared, const QuantPlan& full, const std::map<std::string, Observer>& observers,
                      const QuantizeOptions& opt, const std::vector<std::string>& keep_float);

std::string format_budget_plan(const BudgetPlan& p);
std::string budget_plan_json(const BudgetPlan& p);

}  // namespace kiln::compress

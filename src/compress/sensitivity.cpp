// Per-layer sensitivity (only one layer int8) and the bisection for the accuracy budget.
#include "kiln/compress/sensitivity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "kiln/compress/model_copy.h"
#include "kiln/compress/report.h"
#include "kiln/ir/npy.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;

int64_t argmax(const float* p, int64_t n) { return std::max_element(p, p + n) - p; }

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

EvalSet load_eval_set(const Model& m, const std::string& dir, int random_batches, uint64_t seed,
                      const DimBindings& dims) {
  EvalSet e;
  BatchSource src = dir.empty() ? BatchSource::random(m, random_batches, seed, dims) : BatchSource::from_dir(m, dir);
  for (size_t i = 0; i < src.size(); ++i) e.batches.push_back(src.batch(i));
  if (!dir.empty() && fs::exists(fs::path(dir) / "labels.npy")) e.labels = read_npy((fs::path(dir) / "labels.npy").string());
  e.source = dir.empty() ? src.describe() + " (not the calibration seed)" : src.describe();
  return e;
}

OutputJudge::OutputJudge(const Model& float_model, const EvalSet& eval) : eval_(eval) {
  for (const Value* o : float_model.graph->outputs)
    if (o->dtype == DType::f32) outputs_.push_back(o->name);
  KILN_CHECK(!outputs_.empty(), "accuracy budget: the model has no float output to compare");
  for (const auto& b : eval.batches) reference_.push_back(run_model(float_model, b));
  if (eval.labels) {
    int64_t correct = 0, seen = 0;
    for (const auto& r : reference_) {
      const Tensor& t = r.at(outputs_[0]);
      const int64_t classes = t.rank() ? t.dim(t.rank() - 1) : 1;
      for (int64_t i = 0; i < t.numel() / classes; ++i, ++seen) {
        KILN_CHECK(seen < eval.labels->numel(), "held-out labels.npy has ", eval.labels->numel(),
                   " labels, fewer than the samples");
        correct += argmax(t.data<float>() + i * classes, classes) == eval.labels->as_int64(seen);
      }
    }
    float_accuracy_ = 100.0 * correct / std::max<int64_t>(seen, 1);
  }
}

EvalScore OutputJudge::score(const Model& m) const {
  std::vector<AgreementSum> sums(outputs_.size());
  int64_t correct = 0, seen = 0;
  for (size_t b = 0; b < eval_.batches.size(); ++b) {
    std::map<std::string, Tensor> y = run_model(m, eval_.batches[b]);
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const Tensor& r = reference_[b].at(outputs_[o]);
      const Tensor& q = y.at(outputs_[o]);
      KILN_CHECK(q.dtype() == DType::f32 && q.numel() == r.numel(), "accuracy budget: output ", outputs_[o],
                 " changed type or size");
      sums[o].add(r.data<float>(), q.data<float>(), r.numel());
    }
    if (eval_.labels) {
      const Tensor& q = y.at(outputs_[0]);
      const int64_t classes = q.rank() ? q.dim(q.rank() - 1) : 1;
      for (int64_t i = 0; i < q.numel() / classes; ++i, ++seen)
        correct += argmax(q.data<float>() + i * classes, classes) == eval_.labels->as_int64(seen);
    }
  }
  EvalScore s;
  s.worst_sqnr_db = std::numeric_limits<double>::infinity();
  for (const auto& sum : sums) {
    Agreement a = sum.result();
    s.worst_cosine = std::min(s.worst_cosine, a.cosine);
    s.worst_sqnr_db = std::min(s.worst_sqnr_db, a.sqnr_db);
  }
  if (eval_.labels) s.accuracy = 100.0 * correct / std::max<int64_t>(seen, 1);
  return s;
}

double OutputJudge::loss(const EvalScore& s) const {
  if (uses_accuracy() && s.accuracy && float_accuracy_) return *float_accuracy_ - *s.accuracy;
  return (1.0 - s.worst_cosine) * 100.0;
}

std::string OutputJudge::metric() const {
  return uses_accuracy() ? "top-1 accuracy drop in points (held-out labels)"
                         : "(1 - cosine) x 100 of the outputs vs float (no labels)";
}

Model mixed_qdq_model(const Model& prepared, const QuantPlan& full, const std::map<std::string, Observer>& observers,
                      const QuantizeOptions& opt, const std::vector<std::string>& keep_float) {
  Model m = copy_model(prepared);
  QuantizeOptions o = opt;
  o.exclude.insert(o.exclude.end(), keep_float.begin(), keep_float.end());
  // Nodes the full plan skipped (already excluded, or not quantizable) are not named again.
  std::vector<std::string> valid;
  for (const auto& n : o.exclude)
    if (std::find(full.nodes.begin(), full.nodes.end(), n) != full.nodes.end() ||
        std::find(opt.exclude.begin(), opt.exclude.end(), n) != opt.exclude.end())
      valid.push_back(n);
  o.exclude = valid;
  QuantPlan plan = plan_static(m, o);
  if (!plan.nodes.empty()) apply_static(m, plan, observers, o);
  return m;
}

BudgetPlan plan_accuracy_budget(const Model& prepared, const QuantPlan& full,
                                const std::map<std::string, Observer>& observers, const QuantizeOptions& opt,
                                const EvalSet& eval, double budget, std::ostream* log) {
  KILN_CHECK(budget >= 0, "--accuracy-budget ", budget, ": expected a non-negative number");
  auto t0 = std::chrono::steady_clock::now();
  OutputJudge judge(prepared, eval);
  BudgetPlan p;
  p.metric = judge.metric();
  p.budget = budget;
  p.accuracy_fp32 = judge.float_accuracy();
  p.eval_source = eval.source;

  // Sensitivity: one model per layer with only that layer int8.
  std::map<std::string, std::string> op_of;
  for (const auto& n : prepared.graph->nodes()) op_of[n->name] = n->op;
  const size_t n = full.nodes.size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> others;
    for (size_t j = 0; j < n; ++j)
      if (j != i) others.push_back(full.nodes[j]);
    LayerSensitivity l;
    l.node = full.nodes[i];
    l.op = op_of[l.node];
    l.score = judge.score(mixed_qdq_model(prepared, full, observers, opt, others));
    l.loss = (1.0 - l.score.worst_cosine) * 100.0;
    p.layers.push_back(l);
    if (log) *log << "\rsensitivity " << i + 1 << "/" << n << (i + 1 == n ? "\n" : "") << std::flush;
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.layers[a].loss > p.layers[b].loss; });
  for (size_t r = 0; r < n; ++r) p.layers[order[r]].rank = static_cast<int>(r + 1);

  auto evaluate = [&](int f) {
    std::vector<std::string> keep;
    for (int r = 0; r < f; ++r) keep.push_back(p.layers[order[r]].node);
    BudgetStep s;
    s.float_layers = f;
    s.score = judge.score(mixed_qdq_model(prepared, full, observers, opt, keep));
    s.loss = judge.loss(s.score);
    s.within = s.loss <= budget;
    p.steps.push_back(s);
    if (log)
      *log << "  " << f << " layer(s) in float: loss " << fmt("%.4f", s.loss) << (s.within ? " (within " : " (over ")
           << budget << ")\n";
    return s;
  };
  // Bisection for the smallest f within the budget; f = n (all float) fits trivially.
  BudgetStep chosen = evaluate(0);
  if (!chosen.within) {
    int lo = 0, hi = static_cast<int>(n);
    std::optional<BudgetStep> best;
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      BudgetStep s = evaluate(mid);
      if (s.within) hi = mid, best = s;
      else lo = mid;
    }
    if (best && best->float_layers == hi) chosen = *best;
    else {
      chosen = BudgetStep{hi, EvalScore{}, 0, true};
      chosen.score.worst_sqnr_db = std::numeric_limits<double>::infinity();
      if (judge.float_accuracy()) chosen.score.accuracy = judge.float_accuracy();
    }
  }
  p.final_step = chosen;
  p.met = chosen.float_layers < static_cast<int>(n);
  for (int r = 0; r < chosen.float_layers; ++r) {
    p.layers[order[r]].kept_float = true;
    p.float_nodes.push_back(p.layers[order[r]].node);
  }
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

std::string format_budget_plan(const BudgetPlan& p) {
  std::ostringstream s;
  s << "accuracy budget: " << p.metric << " <= " << p.budget << " on " << p.eval_source << "\n";
  if (p.accuracy_fp32) s << "  float accuracy " << fmt("%.2f%%", *p.accuracy_fp32) << "\n";
  s << "  per-layer sensitivity (only that layer int8):\n"
    << "    rank  node                                           op       cosine      SQNR dB   loss";
  if (p.accuracy_fp32) s << "    acc %";
  s << "   plan\n";
  for (const auto& l : p.layers) {
    char b[256];
    std::snprintf(b, sizeof b, "    %4d  %-46s %-7s  %.6f  %9.2f  %.4f", l.rank, l.node.c_str(), l.op.c_str(),
                  l.score.worst_cosine, l.score.worst_sqnr_db, l.loss);
    s << b;
    if (l.score.accuracy) s << fmt("  %7.2f", *l.score.accuracy);
    s << (l.kept_float ? "   float" : "   int8") << "\n";
  }
  s << "  search (most sensitive layers kept in float):\n";
  for (const auto& st : p.steps) {
    s << "    " << st.float_layers << " in float: cosine " << fmt("%.6f", st.score.worst_cosine);
    if (st.score.accuracy) s << ", accuracy " << fmt("%.2f%%", *st.score.accuracy);
    s << ", loss " << fmt("%.4f", st.loss) << (st.within ? "  within" : "  over") << "\n";
  }
  if (!p.met) {
    s << "  the budget holds only with every layer in float: nothing is quantized\n";
  } else {
    s << "  plan: " << p.float_nodes.size() << " of " << p.layers.size() << " layers in float";
    for (size_t i = 0; i < p.float_nodes.size(); ++i) s << (i ? ", " : ": ") << p.float_nodes[i];
    s << "; loss " << fmt("%.4f", p.final_step.loss) << " <= " << p.budget << "\n";
    if (!p.float_nodes.empty())
      s << "    (each kept layer is more sensitive alone than every quantized one; fewer in float broke the budget)\n";
  }
  s << "  " << fmt("%.1f", p.seconds) << " s (" << p.layers.size() + p.steps.size() << " models evaluated)\n";
  return s.str();
}

std::string budget_plan_json(const BudgetPlan& p) {
  auto score = [](const EvalScore& e) {
    std::string s = "{\"cosine\": " + json_num(e.worst_cosine) + ", \"sqnr_db\": " + json_num(e.worst_sqnr_db);
    if (e.accuracy) s += ", \"accuracy\": " + json_num(*e.accuracy);
    return s + "}";
  };
  std::ostringstream s;
  s << "{\"metric\": " << json_str(p.metric) << ", \"budget\": " << json_num(p.budget)
    << ", \"met\": " << (p.met ? "true" : "false") << ", \"seconds\": " << json_num(p.seconds)
    << ", \"eval\": " << json_str(p.eval_source) << ", \"float_nodes\": [";
  for (size_t i = 0; i < p.float_nodes.size(); ++i) s << (i ? ", " : "") << json_str(p.float_nodes[i]);
  s << "], \"layers\": [";
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const auto& l = p.layers[i];
    s << (i ? ", " : "") << "{\"node\": " << json_str(l.node) << ", \"op\": " << json_str(l.op)
      << ", \"rank\": " << l.rank << ", \"loss\": " << json_num(l.loss)
      << ", \"float\": " << (l.kept_float ? "true" : "false") << ", \"only_this_int8\": " << score(l.score) << "}";
  }
  s << "], \"steps\": [";
  for (size_t i = 0; i < p.steps.size(); ++i)
    s << (i ? ", " : "") << "{\"float_layers\": " << p.steps[i].float_layers << ", \"loss\": "
      << json_num(p.steps[i].loss) << ", \"within\": " << (p.steps[i].within ? "true" : "false")
      << ", \"score\": " << score(p.steps[i].score) << "}";
  s << "], \"final\": {\"float_layers\": " << p.final_step.float_layers << ", \"loss\": "
    << json_num(p.final_step.loss) << ", \"score\": " << score(p.final_step.score) << "}}";
  return s.str();
}

}  // namespace kiln::compress

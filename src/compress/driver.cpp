// The quantize job: static (QDQ, then compiled unless --format qdq) or dynamic (compiled with the
// quantize-dynamic pass after the -O2 fusions).
#include "kiln/compress/driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "compile_exported.h"
#include "kiln/compiler/compile.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ops/op.h"
#include "kiln/passes/manager.h"
#include "kiln/runtime/executable.h"

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void progress_bar(std::ostream* log, size_t i, size_t n) {
  if (!log) return;
  const int width = 30;
  int done = static_cast<int>(width * i / std::max<size_t>(n, 1));
  *log << "\rcalibrating [" << std::string(done, '#') << std::string(width - done, '.') << "] " << i << "/" << n
       << (i == n ? "\n" : "") << std::flush;
}

compiler::CompileOptions compile_options(const QuantizeJob& job) {
  compiler::CompileOptions c;
  c.opt_level = 2;
  c.inputs = job.inputs;
  c.cache_dir = job.cache_dir;
  return c;
}

}  // namespace

Model quantize_to_qdq(const QuantizeJob& job, QuantizeResult& result) {
  Model m = import_onnx(job.model_path);
  prepare_float_model(m);
  result.plan = plan_static(m, job.options);
  KILN_CHECK(!result.plan.nodes.empty(), job.model_path, ": no Conv, MatMul or Gemm node can be quantized statically");
  BatchSource data = [&] {
    if (!job.calib_dir.empty()) return BatchSource::from_dir(m, job.calib_dir);
    KILN_CHECK(job.calib_random > 0, "kiln quantize: give calibration data (--calib DIR) or --calib-random N");
    result.random_calibration = true;
    return BatchSource::random(m, job.calib_random, job.seed, job.inputs.dims);
  }();
  if (job.log) {
    if (result.random_calibration)
      *job.log << "warning: calibrating on random data: the ranges (and so the accuracy) are only a smoke test\n";
    *job.log << "calibrating " << result.plan.tensors.size() << " tensors of " << result.plan.nodes.size()
             << " quantized nodes on " << data.describe() << "\n";
  }
  auto t0 = Clock::now();
  std::map<std::string, Observer> obs =
      calibrate(m, result.plan.tensors, data, result.plan.channel_axis,
                [&](size_t i, size_t n) { progress_bar(job.log, i, n); });
  result.calibrate_seconds = since(t0);
  QuantizeOptions options = job.options;
  if (job.accuracy_budget) {
    EvalSet eval = load_eval_set(m, job.eval_dir, job.eval_random, heldout_seed(job), job.inputs.dims);
    KILN_CHECK(job.budget_metric == "auto" || job.budget_metric == "accuracy" || job.budget_metric == "cosine",
               "--budget-metric ", job.budget_metric, ": expected auto, accuracy or cosine");
    KILN_CHECK(job.budget_metric != "accuracy" || eval.labels, "--budget-metric accuracy needs labels: --eval DIR with ",
               "DIR/labels.npy");
    if (job.budget_metric == "cosine") eval.labels.reset();
    if (job.log)
      *job.log << "accuracy budget " << *job.accuracy_budget << ": sensitivity of " << result.plan.nodes.size()
               << " layers on " << eval.source << "\n";
    result.budget = plan_accuracy_budget(m, result.plan, obs, job.options, eval, *job.accuracy_budget, job.log);
    const BudgetPlan& bp = *result.budget;
    KILN_CHECK(bp.met, "--accuracy-budget ", *job.accuracy_budget, ": even one int8 layer breaks the budget (",
               bp.metric, "); nothing to quantize");
    options.exclude.insert(options.exclude.end(), bp.float_nodes.begin(), bp.float_nodes.end());
    result.plan = plan_static(m, options);
    // Say why the budget's layers stay in float.
    for (auto& s : result.plan.skipped)
      for (const auto& l : bp.layers)
        if (l.kept_float && s == l.node + ": excluded (--exclude)" &&
            std::find(job.options.exclude.begin(), job.options.exclude.end(), l.node) == job.options.exclude.end())
          s = l.node + ": accuracy budget (sensitivity rank " + std::to_string(l.rank) + ", output cosine " +
              std::to_string(l.score.worst_cosine) + " with only this layer int8)";
  }
  result.lines = apply_static(m, result.plan, obs, options);
  result.quantized_nodes = static_cast<int>(result.plan.nodes.size());
  for (const auto& s : result.plan.skipped) result.lines.push_back("kept in float: " + s);
  return m;
}

QuantizeResult quantize_file(const QuantizeJob& job) {
  auto t0 = Clock::now();
  QuantizeResult result;
  KILN_CHECK(!job.out_path.empty(), "kiln quantize: -o OUT is required");
  if (job.precision == "bf16" || job.precision == "fp16") {
    KILN_CHECK(job.format == OutputFormat::Kiln, "kiln quantize --precision ", job.precision,
               " writes a kiln artifact (--format kiln)");
    register_passes();
    compiler::CompileOptions c = compile_options(job);
    std::string pipeline;
    for (const auto& p : passes::pipeline_for_level(2)) pipeline += p + ",";
    const std::string pass = "precision-" + job.precision;
    c.passes = pipeline + pass + ",dce";
    compiler::CompileReport rep = compiler::compile_file(job.model_path, job.out_path, c);
    for (const auto& r : rep.remarks)
      if (r.pass == pass) result.lines.push_back(r.node + ": " + r.message);
    if (rep.cache_hit) result.lines.push_back(job.out_path + " is up to date");
    std::unique_ptr<Executable> exe = Executable::load(job.out_path);  // alive through the loop
    for (const auto& n : exe->model().graph->nodes()) result.quantized_nodes += n->op == "HalfConv" || n->op == "HalfMatMul";
    result.total_seconds = since(t0);
    return result;
  }
  KILN_CHECK(job.precision == "int8", "--precision ", job.precision, ": expected int8, bf16 or fp16");
  if (job.dynamic) {
    KILN_CHECK(job.format == OutputFormat::Kiln, "kiln quantize --dynamic writes a kiln artifact (--format kiln)");
    register_passes();
    compiler::CompileOptions c = compile_options(job);
    std::string pipeline;
    for (const auto& p : passes::pipeline_for_level(2)) pipeline += p + ",";
    c.passes = pipeline + "quantize-dynamic,dce";
    compiler::CompileReport rep = compiler::compile_file(job.model_path, job.out_path, c);
    for (const auto& r : rep.remarks)
      if (r.pass == "quantize-dynamic") result.lines.push_back(r.node + ": " + r.message);
    result.quantized_nodes = static_cast<int>(result.lines.size());
    if (rep.cache_hit) {
      // Up to date: nothing ran, so say what the artifact holds.
      result.quantized_nodes = 0;
      std::unique_ptr<Executable> exe = Executable::load(job.out_path);  // alive through the loop
      for (const auto& n : exe->model().graph->nodes()) result.quantized_nodes += n->op == "QMatMul";
      result.lines.push_back(job.out_path + " is up to date (" + std::to_string(result.quantized_nodes) +
                             " kiln.QMatMul nodes)");
    }
    result.total_seconds = since(t0);
    return result;
  }
  result.qdq = std::make_shared<Model>(quantize_to_qdq(job, result));
  const Model& m = *result.qdq;
  if (job.format == OutputFormat::Qdq) {
    export_onnx(m, job.out_path);
    result.qdq_path = job.out_path;
  } else {
    // The artifact is compiled from the QDQ model, written next to it for the compiler to read.
    compile_exported(m, job.out_path + ".qdq.onnx", job.out_path, compile_options(job));
  }
  result.total_seconds = since(t0);
  return result;
}

}  // namespace kiln::compress

// The prune job: plan, prune, reconstruct, write; then (measure) the cost, agreement and
// interleaved latency of the original and the pruned model.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <set>
#include <tuple>

#include "compile_exported.h"
#include "kiln/compiler/compile.h"
#include "kiln/compress/model_copy.h"
#include "kiln/compress/prune_job.h"
#include "kiln/compress/quantize.h"
#include "kiln/compress/report.h"
#include "kiln/compress/sensitivity.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/executable.h"

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string output_format(const PruneJob& job) {
  if (!job.format.empty()) {
    KILN_CHECK(job.format == "onnx" || job.format == "kiln", "--format ", job.format, ": expected onnx or kiln");
    return job.format;
  }
  return fs::path(job.out_path).extension() == ".onnx" ? "onnx" : "kiln";
}

compiler::CompileOptions compile_options(const PruneJob& job) {
  compiler::CompileOptions c;
  c.opt_level = 2;
  c.inputs = job.inputs;
  c.cache_dir = job.cache_dir;
  return c;
}

// Every 4th calibration image: the rows the reconstruction scores its fits on, not fitted.
EvalSet validation_images(const BatchSource& calib) {
  EvalSet e;
  int64_t image0 = 0;
  for (size_t b = 0; b < calib.size(); ++b) {
    Inputs in = calib.batch(b);
    const Tensor& first = in.begin()->second;
    const int64_t n = first.rank() ? first.dim(0) : 1;
    std::vector<int64_t> pick;
    for (int64_t i = 0; i < n; ++i)
      if ((image0 + i) % 4 == 3) pick.push_back(i);
    image0 += n;
    if (pick.empty()) continue;
    Inputs sub;
    for (const auto& [name, t] : in) {
      if (!t.rank() || t.dim(0) != n) {
        sub[name] = t;
        continue;
      }
      std::vector<int64_t> dims = t.dims();
      dims[0] = static_cast<int64_t>(pick.size());
      Tensor s(t.dtype(), dims);
      const size_t row = t.nbytes() / static_cast<size_t>(n);
      for (size_t k = 0; k < pick.size(); ++k)
        std::memcpy(static_cast<char*>(s.raw()) + k * row, static_cast<const char*>(t.raw()) + pick[k] * row, row);
      sub[name] = s;
    }
    e.batches.push_back(sub);
  }
  e.source = "every 4th calibration image";
  return e;
}

}  // namespace

ModelCost model_cost(const Model& m, const DimBindings& dims) {
  DimBindings assume = dims;
  for (const auto& s : ops::input_dim_symbols(*m.graph)) assume.emplace(s, 1);
  ModelCost c;
  for (const auto& n : m.graph->nodes())
    if (auto cost = ops::node_cost(*n, assume)) c.flops += cost->flops;
  std::set<const Value*> used;
  for (const auto& n : m.graph->nodes())
    for (const Value* v : n->inputs)
      if (v && v->is_constant() && v->dtype == DType::f32 && used.insert(v).second) {
        c.params += static_cast<double>(v->initializer->numel());
        c.weight_bytes += static_cast<double>(v->initializer->nbytes());
      }
  return c;
}

PruneReport prune_file(const PruneJob& job) {
  auto t0 = Clock::now();
  KILN_CHECK(!job.out_path.empty(), "kiln prune: -o OUT is required");
  const std::string format = output_format(job);
  KILN_CHECK(!job.reconstruct || !job.calib_dir.empty() || job.calib_random > 0,
             "kiln prune: the reconstruction needs calibration data: --calib DIR or --calib-random N (or --no-reconstruct)");
  PruneReport r;
  r.model = job.model_path;
  r.out = job.out_path;
  r.format = format;
  Model original = import_onnx(job.model_path);
  KILN_CHECK(copyable(original), job.model_path, ": models with control flow (If/Loop/Scan) are not pruned");
  prepare_float_model(original);
  if (!job.inputs.dims.empty()) ops::infer_shapes(original, job.inputs.dims);
  std::optional<BatchSource> calib;
  if (job.reconstruct) {
    r.random_calibration = job.calib_dir.empty();
    calib = job.calib_dir.empty() ? BatchSource::random(original, job.calib_random, job.seed, job.inputs.dims)
                                  : BatchSource::from_dir(original, job.calib_dir);
    r.calibration = calib->describe();
  } else {
    r.calibration = "none (no reconstruction)";
  }
  r.plan = plan_pruning(original, job.options);
  Model pruned = copy_model(original);
  apply_pruning(pruned, r.plan);
  Model plain = copy_model(pruned);  // shares the constants the reconstruction replaces, never changes them
  const Model plain_view = copy_model(pruned);
  if (job.log) {
    int groups = 0;
    for (const auto& g : r.plan.groups) groups += g.pruned();
    *job.log << "pruned " << groups << " of " << r.plan.groups.size() << " channel groups; "
             << pruned_readers(r.plan).size() << " layers read pruned channels\n";
  }
  if (calib) {
    if (r.random_calibration && job.log)
      *job.log << "warning: reconstructing on random data: the fit matches the original only on such inputs\n";
    auto t1 = Clock::now();
    ReconstructOptions ro = job.reconstruction;
    ro.seed = job.seed;
    r.fits = reconstruct_pruned(original, pruned, r.plan, *calib, ro, job.log);
    // Better layers need not make a better model (errors compound differently): the refit stays
    // only when the model output agrees better with the original on the validation images.
    EvalSet v = validation_images(*calib);
    if (!r.fits.empty() && !v.batches.empty()) {
      OutputJudge judge(original, v);
      r.validation_cosine_fit = judge.score(pruned).worst_cosine;
      r.validation_cosine_plain = judge.score(plain).worst_cosine;
      r.reconstruction_kept = r.validation_cosine_fit >= r.validation_cosine_plain;
      if (!r.reconstruction_kept) pruned = std::move(plain);
    }
    r.seconds_reconstruct = since(t1);
  }
  r.before = model_cost(original, job.inputs.dims);
  r.after = model_cost(pruned, job.inputs.dims);

  // Write.
  std::string pruned_artifact = job.out_path;
  if (format == "onnx") {
    export_onnx(pruned, job.out_path);
  } else {
    compile_exported(pruned, job.out_path + ".pruned.onnx", job.out_path, compile_options(job));
  }

  if (job.measure) {
    r.measured = true;
    r.runs = job.runs;
    EvalSet eval = load_eval_set(original, job.eval_dir, job.eval_random, job.seed + 1000003, job.inputs.dims);
    r.eval_source = eval.source;
    OutputJudge judge(original, eval);
    EvalScore s = judge.score(pruned), sp = judge.score(plain_view);
    r.cosine = s.worst_cosine;
    r.sqnr_db = s.worst_sqnr_db;
    r.cosine_plain = sp.worst_cosine;
    r.accuracy_before = judge.float_accuracy();
    r.accuracy_after = s.accuracy;
    r.accuracy_plain = sp.accuracy;
    for (const auto& b : eval.batches) {
      const Tensor& t = b.begin()->second;
      r.eval_samples += t.rank() ? t.dim(0) : 1;
    }
    fs::path work = fs::path(job.out_path).parent_path() / (fs::path(job.out_path).filename().string() + ".report");
    fs::create_directories(work);
    const std::string before = (work / "original.kiln").string();
    compiler::compile_file(job.model_path, before, compile_options(job));
    if (format == "onnx") {
      pruned_artifact = (work / "pruned.kiln").string();
      compiler::compile_file(job.out_path, pruned_artifact, compile_options(job));
    }
    auto a = Executable::load(before);
    auto b = Executable::load(pruned_artifact);
    std::tie(r.ms_before, r.ms_after) = interleaved_latency(*a, *b, eval.batches.front(), job.runs);
  }
  r.seconds_total = since(t0);
  return r;
}

}  // namespace kiln::compress

// kiln bench MODEL|ARTIFACT: latency of kiln's backends (interpreter, compiled) and, with
// --vs ort, of ONNX Runtime on the same inputs at the same thread count, measured in the same
// run, interleaved. Everything that can be wrong with the flags, the model, the inputs or the
// peer's set-up is checked before the first progress line, so such errors stay one line.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench_backends.h"
#include "bench_inputs.h"
#include "bench_measure.h"
#include "bench_report.h"
#include "kiln/analysis/machine.h"
#include "kiln/analysis/profile.h"
#include "kiln/ir/sha256.h"
#include "common.h"
#include "kiln/kernels/parallel.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

constexpr double kCheckTolerance = 1e-4;  // max|Δ| <= 1e-4 * max|ref|, the target
// int8 models: kiln's kernels and ORT's round differently (kiln folds a residual add into the
// convolution before one rounding, ORT rounds both; requantization formulas differ), and the
// differences grow with depth. Measured on the zoo (kiln quantize --calib-random 16
// --reduce-range, QDQ export to ORT, random inputs): cosine 0.9996 resnet18, 0.989-0.998
// resnet50, 0.983-0.984 mobilenet_v2, 0.9988 efficientnet_b0, while each was as close to fp32
// as the other (resnet50 0.936 and 0.936, mobilenet_v2 0.973 and 0.973 on one input).
constexpr double kInt8MinCosine = 0.98;

// Whether the graph computes in int8: kiln's quantized kernels (an artifact), or ONNX's
// quantized operators (a QDQ or QOperator model).
bool computes_in_int8(const Graph& g) {
  for (const auto& n : g.nodes()) {
    if (analysis::int8_op(n->domain + "." + n->op)) return true;
    if (n->domain.empty() && (n->op == "QuantizeLinear" || n->op == "QLinearConv" || n->op == "QLinearMatMul" ||
                              n->op == "DynamicQuantizeLinear"))
      return true;
  }
  return false;
}

std::vector<std::string> parse_backends(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    KILN_CHECK(name == "interp" || name == "compiled", "--backends: unknown backend '", name,
               "' (want interp, compiled; ONNX Runtime is --vs ort)");
    KILN_CHECK(std::find(out.begin(), out.end(), name) == out.end(), "--backends: '", name, "' given twice");
    out.push_back(name);
  }
  KILN_CHECK(!out.empty(), "--backends: empty list (want interp, compiled or interp,compiled)");
  return out;
}

// An artifact is named *.kiln (a file or a bundle directory, perhaps written with a final '/').
bool is_artifact(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return fs::path(path).extension() == ".kiln";
}

// Textual IR starts with the "kiln.model" header (as load_model recognises it).
bool is_textual_ir(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[10] = {};
  in.read(head, sizeof head);
  return std::string(head, static_cast<size_t>(in.gcount())) == "kiln.model";
}

std::string dir_of(const std::string& path) {
  std::string d = fs::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

// The ONNX model an artifact was compiled from, checked to be the same file (by SHA-256).
std::string artifact_source(const std::string& artifact, const ArtifactManifest& m) {
  KILN_CHECK(!m.source_model.empty(), artifact, ": the manifest names no source model (needed for interp and --vs ort)");
  std::string src = m.source_model;
  if (!fs::exists(src) && fs::path(src).is_relative()) src = (fs::path(artifact).parent_path() / src).string();
  KILN_CHECK(fs::exists(src), artifact, ": its source model ", m.source_model,
             " is missing (needed for interp and --vs ort)");
  std::string sha = sha256_file(src);
  KILN_CHECK(sha == m.source_sha256, artifact, ": its source model ", src, " has changed since it was compiled (sha256 ",
             sha.substr(0, 12), "..., manifest says ", m.source_sha256.substr(0, 12), "...)");
  return src;
}

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> names;
  for (const Value* v : g.outputs) names.push_back(v->name);
  return names;
}

// What is measured: the ONNX / IR model interp and ORT run, and, for an artifact, the loaded
// compiled backend. `graph` is the one whose inputs are fed and whose outputs are checked.
struct Subject {
  std::unique_ptr<CompiledBenchBackend> artifact;
  std::shared_ptr<Model> source;
  std::string source_path;
  const Graph* graph = nullptr;
};

// `ort_model` (--ort-model) replaces the source model for ORT and interp: e.g. an int8 artifact
// of `kiln quantize` against ONNX Runtime on kiln's QDQ export of the same quantization.
Subject load_subject(const std::string& model_path, bool needs_source, bool vs_ort, const std::string& ort_model,
                     const ShapeFlags& sf, int threads, const std::string& work_dir) {
  Subject s;
  if (is_artifact(model_path)) {
    s.artifact = make_compiled_backend({model_path, true, {}, threads, work_dir});
    s.graph = s.artifact->model().graph.get();
    if (needs_source) s.source_path = ort_model.empty() ? artifact_source(model_path, s.artifact->manifest()) : ort_model;
  } else {
    s.source_path = ort_model.empty() ? model_path : ort_model;
  }
  if (!s.source_path.empty()) {
    KILN_CHECK(!vs_ort || !is_textual_ir(s.source_path), "--vs ort: ", s.source_path,
               " is kiln textual IR; ONNX Runtime needs the ONNX model");
    s.source = std::make_shared<Model>(load_model(s.source_path, sf));
    if (!s.graph) s.graph = s.source->graph.get();
  }
  return s;
}

// Backends in report order: kiln's as listed in --backends, then the peer.
std::vector<std::unique_ptr<BenchBackend>> make_backends(const std::vector<std::string>& names, Subject& subject,
                                                         const std::string& model_path, const BenchInputs& inputs,
                                                         const ShapeFlags& sf, int threads, const std::string& ort_script,
                                                         const std::string& work_dir) {
  std::vector<std::unique_ptr<BenchBackend>> backends;
  for (const auto& n : names) {
    if (n == "interp") {
      backends.push_back(make_interp_backend(subject.source, sf.ranges, threads));
    } else if (subject.artifact) {
      backends.push_back(std::move(subject.artifact));
    } else {
      // Compiled for exactly the shapes measured, as a user would with --shape.
      CompiledBackendSpec spec{model_path, false, {}, threads, work_dir};
      for (const auto& [name, t] : inputs.tensors) spec.shapes.shapes[name] = t.dims();
      backends.push_back(make_compiled_backend(spec));
    }
  }
  if (!ort_script.empty())
    backends.push_back(
        make_ort_backend({ort_script, subject.source_path, threads, work_dir}, output_names(*subject.graph)));
  return backends;
}

// Each backend's first outputs against the reference backend's.
std::vector<OutputCheck> check_first_outputs(const std::vector<std::unique_ptr<BenchBackend>>& backends,
                                             const std::string& reference, const Graph& g, double min_cosine) {
  std::map<std::string, TensorMap> first;
  for (const auto& b : backends) first[b->name()] = b->run_once();
  std::vector<OutputCheck> checks;
  for (const auto& b : backends) {
    if (b->name() == reference) continue;
    auto c = check_outputs(b->name(), first[b->name()], first[reference], output_names(g), kCheckTolerance, min_cosine);
    checks.insert(checks.end(), c.begin(), c.end());
  }
  return checks;
}

InputRequest input_request(const Args& a, const ShapeFlags& sf, Subject& subject, const std::string& model_path) {
  InputRequest req;
  req.dims = sf.spec.dims;
  if (a.has("--batch")) {
    req.batch = a.get_int("--batch", 1);
    DimBindings b = batch_bindings(*subject.graph, *req.batch);
    req.dims.insert(b.begin(), b.end());
    if (subject.source && !b.empty()) ops::specialize_inputs(*subject.source, {b, {}});
  }
  for (const auto& s : a.all("--input")) {
    auto [name, file] = split_assignment("--input", s);
    req.files[name] = file;
  }
  req.zoo_dirs.push_back(dir_of(model_path));
  if (!subject.source_path.empty()) req.zoo_dirs.push_back(dir_of(subject.source_path));
  req.seed = static_cast<uint64_t>(a.get_int("--seed", 0));
  return req;
}

}  // namespace

int verb_bench(int argc, char** argv) {
  const double load_before = load_average();  // the minute before the bench: other work on the machine
  Args a("bench", argc, argv,
         {"--threads", "--batch", "--vs", "--backends", "--runs", "--warmup", "--block", "--gap-ms", "--idle-spin-ms",
          "--dim", "--shape", "--input", "--seed", "--ort-script", "--ort-model"},
         {"--json", "--check", "--quiet", "--no-pin"});
  KILN_CHECK(a.positional().size() == 1, "kiln bench: expected one MODEL argument (kiln bench MODEL [--vs ort] ...)");
  const std::string model_path = a.positional()[0];

  int threads = static_cast<int>(a.get_int("--threads", kernels::hardware_threads()));
  KILN_CHECK(threads >= 1, "--threads must be >= 1");
  MeasurePlan plan;
  plan.runs = static_cast<int>(a.get_int("--runs", 20));
  plan.warmup = static_cast<int>(a.get_int("--warmup", 3));
  plan.block = static_cast<int>(a.get_int("--block", 0));
  KILN_CHECK(plan.runs >= 1, "--runs must be >= 1");
  KILN_CHECK(plan.warmup >= 0, "--warmup must be >= 0");
  KILN_CHECK(!a.has("--block") || plan.block >= 1, "--block must be >= 1");
  plan.gap_ms = static_cast<int>(a.get_int("--gap-ms", 0));
  KILN_CHECK(plan.gap_ms >= 0 && plan.gap_ms <= 10'000, "--gap-ms must be 0 to 10000 (whole milliseconds)");
  apply_idle_spin_flag(a);
  KILN_CHECK(a.get_int("--batch", 1) >= 1, "--batch must be >= 1");

  std::string default_backend = is_artifact(model_path) || compiled_backend_built() ? "compiled" : "interp";
  std::vector<std::string> names = parse_backends(a.get_or("--backends", default_backend));
  auto wants = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  bool vs_ort = a.has("--vs") || a.has("--ort-model");
  KILN_CHECK(!a.has("--vs") || a.get_or("--vs", "") == "ort", "--vs: unknown peer '", a.get_or("--vs", ""),
             "' (want ort)");
  const std::string ort_model = a.get_or("--ort-model", "");
  KILN_CHECK(ort_model.empty() || fs::is_regular_file(ort_model), "--ort-model: ", ort_model, ": cannot open");
  std::string ort_script;
  if (vs_ort) {
    ort_script = a.has("--ort-script") ? *a.get("--ort-script") : find_ort_script();
    check_ort_runnable(ort_script);
  }
  KILN_CHECK(fs::exists(model_path), model_path, ": cannot open");

  // Every backend on the same `threads` CPUs (the peer's child process inherits them).
  const std::string pinned = a.has("--no-pin") ? "" : pin_to_first_cpus(threads);
  TempDir work("kiln-bench");  // the peer's .npy files and the compiled artifact
  ShapeFlags sf = parse_shape_flags(a);
  Subject subject = load_subject(model_path, wants("interp") || vs_ort, vs_ort, ort_model, sf, threads, work.path());
  BenchInputs inputs = make_bench_inputs(*subject.graph, input_request(a, sf, subject, model_path));
  auto backends = make_backends(names, subject, model_path, inputs, sf, threads, ort_script, work.path());

  BenchResult r;
  r.model = model_path;
  r.source_model = subject.source_path;
  r.threads = threads;
  r.batch = inputs.batch;
  r.runs = plan.runs;
  r.warmup = plan.warmup;
  r.cores = kernels::hardware_threads();
  r.pinned_cpus = pinned;
  r.load_before = load_before;
  r.inputs = inputs.origins;
  r.random_integers = inputs.random_integers;
  r.kiln = wants("compiled") ? "compiled" : names.front();
  r.check_tolerance = kCheckTolerance;

  bool quiet = a.has("--quiet");
  auto progress = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };
  if (!r.source_model.empty()) r.source_sha256 = sha256_file(r.source_model);
  for (auto& b : backends) {
    progress("bench: preparing " + b->name());
    b->prepare(inputs.tensors);
    if (auto s = b->compile_seconds()) progress(str_cat("bench: compiled in ", *s, " s"));
  }

  // Output check before timing: every kiln backend against ORT, else compiled against interp.
  r.check_reference = vs_ort ? "ort" : (wants("interp") && wants("compiled") ? "interp" : "");
  if (!r.check_reference.empty()) {
    if (computes_in_int8(*subject.graph)) r.check_min_cosine = kInt8MinCosine;
    r.checks = check_first_outputs(backends, r.check_reference, *subject.graph, r.check_min_cosine);
  }

  plan.progress = progress;
  // Each round's placement (split_by_placement): the round trip, then the workers' idle spin
  // waited out, so that the reading's spinning stays out of the next block.
  if (threads > 1)
    plan.probe = [threads] {
      const double ns = cores_round_trip_ns(threads);
      std::this_thread::sleep_for(kernels::idle_spin_left());
      return ns;
    };
  std::vector<BenchBackend*> raw;
  for (auto& b : backends) raw.push_back(b.get());
  // With several threads, whether the host gives them their cores right now (see
  // analysis::parallel_capacity): before and after the timed runs, ~0.1 s each.
  const int capacity_threads = std::min(threads, r.cores);
  const analysis::MeasureOptions capacity_opt{3, 0.01};
  if (capacity_threads > 1) r.capacity_before = analysis::parallel_capacity(capacity_threads, capacity_opt);
  progress(str_cat("bench: ", plan.warmup, " warm-up runs, then ", plan.runs, " timed runs per backend"));
  Measured measured = measure_interleaved(raw, plan);
  r.load_after = load_average();
  // The probe's first and last readings: right before the first timed round and after the last.
  if (!measured.probes.empty())
    r.core_trip_before_ns = measured.probes.front(), r.core_trip_after_ns = measured.probes.back();
  if (capacity_threads > 1) r.capacity_after = analysis::parallel_capacity(capacity_threads, capacity_opt);
  r.capacity_threads = capacity_threads;
  r.block = measured.block;
  r.round_trips_ns = measured.probes;
  r.gap_ms = plan.gap_ms;
  r.idle_spin_ms = std::chrono::duration<double, std::milli>(kernels::idle_spin()).count();
  for (size_t i = 0; i < backends.size(); ++i) {
    const auto& t = measured.times[i];
    r.backends.push_back({backends[i]->name(), t, summarize(t), backends[i]->compile_seconds(),
                          summarize(measured.idle_waits_ms[i]).median_ms});
    if (plan.warmup > 0) r.backends.back().warmup_fastest_ms = measured.warmup_fastest_ms[i];
  }

  std::fputs(a.has("--json") ? (render_json(r) + "\n").c_str() : render_text(r).c_str(), stdout);
  if (!r.checks_ok()) {
    if (r.check_min_cosine > 0)
      std::fprintf(stderr, "kiln bench: warning: int8 outputs differ from %s: cosine below %g\n",
                   r.check_reference.c_str(), r.check_min_cosine);
    else
      std::fprintf(stderr, "kiln bench: warning: outputs differ from %s by more than %g * max|ref|\n",
                   r.check_reference.c_str(), kCheckTolerance);
    if (a.has("--check")) return 1;
  }
  return 0;
}

}  // namespace kiln::cli

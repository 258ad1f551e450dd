// kiln profile MODEL|ARTIFACT: where the time of the compiled model goes, kernel by kernel, against
// this machine's measured roofline; suggestions; --trace (Chrome/Perfetto), --html (roofline page),
// --json, --explain (measured against the perf model's prediction for the compiled graph),
// --scaling (each kernel at one thread against --threads N), --rerun (each kernel against a second
// call of itself right after, its data then in cache), --vs ort (each kernel against ONNX
// Runtime's nodes for the same original nodes, from ORT's own profiler), --balance (each kernel's
// work per thread against its wall time), --placement (only runs with the cores close, or far).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "bench_inputs.h"
#include "common.h"
#include "kiln/analysis/chip.h"
#include "kiln/analysis/perf_diagnose.h"
#include "kiln/analysis/profile.h"
#include "kiln/analysis/profile_balance.h"
#include "kiln/analysis/profile_peer.h"
#include "kiln/analysis/profile_rerun.h"
#include "kiln/analysis/profile_scaling.h"
#include "kiln/compiler/compile.h"
#include "kiln/frontend/load.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"
#include "kiln/runtime/artifact.h"
#include "profile_ort.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

std::string parent_dir(const std::string& path) {
  std::string d = fs::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

// The source model of an artifact, when its manifest names one that still exists.
std::string artifact_source(const std::string& artifact, const ArtifactManifest& m) {
  if (m.source_model.empty()) return "";
  fs::path src = m.source_model;
  if (!fs::exists(src) && src.is_relative()) src = fs::path(artifact).parent_path() / src;
  return fs::exists(src) ? src.string() : "";
}

ops::InputSpec shapes_of(const TensorMap& t) {
  ops::InputSpec spec;
  for (const auto& [name, tensor] : t) spec.shapes[name] = tensor.dims();
  return spec;
}

// --placement close|far: a timed run counts only when the cores' round trip read before and after
// it says that placement (analysis::ProfileOptions::run_counts; above kernels::kFarCoresNs: far),
// so that a profile shows one of the machines a virtual machine's moving vCPUs make. Gives up
// after kPlacementPatience; a progress line every kPlacementNote while it drops runs.
constexpr auto kPlacementPatience = std::chrono::minutes(30);
constexpr auto kPlacementNote = std::chrono::seconds(10);
std::function<bool()> placement_gate(const std::string& want, int threads,
                                     const std::function<void(const std::string&)>& progress) {
  using Clock = std::chrono::steady_clock;
  struct Readings {
    int64_t taken = 0, matching = 0;
    Clock::time_point start = Clock::now(), noted = Clock::now();
  };
  auto seen = std::make_shared<Readings>();
  return [=] {
    const double ns = cores_round_trip_ns(threads);
    const bool ok = ns > 0 && (ns > kernels::kFarCoresNs) == (want == "far");
    ++seen->taken;
    if (ok) ++seen->matching;
    if (ok) return true;
    const auto now = Clock::now();
    const std::string share = str_cat(seen->matching, " of ", seen->taken, " readings so far");
    KILN_CHECK(now - seen->start < kPlacementPatience, "kiln profile --placement ", want, ": the cores were ", want,
               " in ", share, " over ", std::chrono::duration_cast<std::chrono::minutes>(kPlacementPatience).count(),
               " minutes: not enough runs; try again later, or fewer --runs");
    if (now - seen->noted >= kPlacementNote) {
      seen->noted = now;
      progress(str_cat("waiting for the cores to be ", want, " (", share, ", the last ",
                       ns > 0 ? str_cat(static_cast<int64_t>(ns), " ns") : std::string("without an answer"), ")"));
    }
    return false;
  };
}

}  // namespace

int verb_profile(int argc, char** argv) {
  std::vector<char*> rest;
  int level = take_opt_level("profile", argc, argv, rest, 2);
  Args a("profile", static_cast<int>(rest.size()), rest.data(),
         {"--threads", "--runs", "--warmup", "--top", "--trace", "--html", "--batch", "--input", "--seed", "--dim",
          "--shape", "--cache", "--vs", "--ort-script", "--placement"},
         {"--json", "--explain", "--scaling", "--rerun", "--balance", "--quiet", "--no-pin"});
  KILN_CHECK(a.positional().size() == 1, "kiln profile: expected one MODEL or ARTIFACT argument");
  const std::string path = a.positional()[0];
  KILN_CHECK(fs::exists(path), "kiln profile: ", path, ": cannot open");
  analysis::ProfileOptions opt;
  opt.threads = static_cast<int>(a.get_int("--threads", kernels::hardware_threads()));
  opt.runs = static_cast<int>(a.get_int("--runs", 10));
  opt.warmup = static_cast<int>(a.get_int("--warmup", 2));
  int64_t top = a.get_int("--top", 15);
  KILN_CHECK(opt.threads >= 1, "--threads must be >= 1");
  KILN_CHECK(opt.runs >= 1, "--runs must be >= 1");
  KILN_CHECK(opt.warmup >= 0, "--warmup must be >= 0");
  KILN_CHECK(top >= 1, "--top must be >= 1");
  KILN_CHECK(a.get_int("--batch", 1) >= 1, "--batch must be >= 1");
  KILN_CHECK(!a.has("--scaling") || opt.threads >= 2,
             "--scaling compares --threads N with one thread: give --threads 2 or more");
  KILN_CHECK(!a.has("--balance") || opt.threads >= 2,
             "--balance splits each kernel's time across its threads: give --threads 2 or more");
  const std::optional<std::string> placement = a.get("--placement");
  KILN_CHECK(!placement || *placement == "close" || *placement == "far",
             "kiln profile: --placement takes 'close' or 'far', got '", placement ? *placement : "", "'");
  KILN_CHECK(!placement || opt.threads >= 2,
             "--placement is where the host has the threads' cores: give --threads 2 or more");
  const std::optional<std::string> vs = a.get("--vs");
  KILN_CHECK(!vs || *vs == "ort", "kiln profile: --vs takes 'ort', got '", vs ? *vs : "", "'");
  KILN_CHECK(vs || !a.has("--ort-script"), "kiln profile: --ort-script needs --vs ort");
  const bool quiet = a.has("--quiet") || a.has("--json");
  auto progress = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "profile: %s\n", line.c_str());
  };
  if (placement) opt.run_counts = placement_gate(*placement, opt.threads, progress);
  // kiln and ORT's child on the same CPUs (cli/common.h, pin_to_first_cpus).
  if (const std::string pinned = a.has("--no-pin") ? "" : pin_to_first_cpus(opt.threads); !pinned.empty())
    progress("pinned to " + cpus_text(pinned) + " (--no-pin lets the scheduler place the threads)");

  // The artifact: given, or compiled from MODEL for exactly the shapes profiled.
  ShapeFlags sf = parse_shape_flags(a);
  std::optional<TempDir> temp;  // holds the artifact compiled from MODEL for the verb's duration
  std::string artifact = path, source_path;
  std::unique_ptr<Model> source;
  const bool given_artifact = is_artifact_file(path);
  if (given_artifact) source_path = artifact_source(path, read_artifact_manifest(path));
  else source_path = path;
  if (!source_path.empty()) source = std::make_unique<Model>(load_model(source_path, sf));

  InputRequest req;
  req.dims = sf.spec.dims;
  std::unique_ptr<Executable> exe;
  if (given_artifact) exe = Executable::load(path);
  const Graph& fed = exe ? *exe->model().graph : *source->graph;
  if (a.has("--batch")) {
    req.batch = a.get_int("--batch", 1);
    DimBindings b = batch_bindings(fed, *req.batch);
    req.dims.insert(b.begin(), b.end());
  }
  for (const auto& s : a.all("--input")) {
    auto eq = s.find('=');
    KILN_CHECK(eq != std::string::npos && eq > 0, "--input: expected NAME=FILE.npy, got '", s, "'");
    req.files[s.substr(0, eq)] = s.substr(eq + 1);
  }
  req.zoo_dirs.push_back(parent_dir(path));
  if (!source_path.empty()) req.zoo_dirs.push_back(parent_dir(source_path));
  req.seed = static_cast<uint64_t>(a.get_int("--seed", 0));
  BenchInputs inputs = make_bench_inputs(fed, req);
  ops::InputSpec shapes = shapes_of(inputs.tensors);
  if (source) ops::specialize_inputs(*source, shapes);

  if (!exe) {
    progress("compiling " + path + " at -O" + std::to_string(level));
    compiler::CompileOptions copt;
    copt.opt_level = level;
    copt.inputs = shapes;
    copt.threads = opt.threads;
    temp.emplace("kiln-profile");
    artifact = temp->path() + "/model.kiln";
    compiler::compile_file(path, artifact, copt);
    exe = Executable::load(artifact);
  }
  // The optimized graph at the profiled shapes, for FLOPs and bytes per kernel.
  Model costed = read_artifact(artifact).model;
  ops::specialize_inputs(costed, shapes);
  analysis::SourceMap sources = source ? analysis::map_sources(*source->graph, *costed.graph) : analysis::SourceMap{};

  analysis::MachinePeaks machine =
      analysis::load_or_measure_machine(a.get_or("--cache", analysis::default_machine_cache_path()), false);
  // The roofline verdicts read these ceilings: a measurement taken while the host was busy says so.
  if (std::string w = analysis::contention_warning(machine); !w.empty())
    std::fprintf(stderr, "kiln profile: warning: machine ceilings: %s\n", w.c_str());
  analysis::Roof roof = analysis::roof_for(machine, opt.threads);
  roof.dispatch_us = analysis::measure_dispatch_us(opt.threads);

  std::vector<Tensor> ordered;
  for (const Value* v : exe->model().graph->inputs) {
    auto it = inputs.tensors.find(v->name);
    ordered.push_back(it != inputs.tensors.end() ? it->second : Tensor());
  }
  // --vs ort: ONNX Runtime on the source model, its runs split around kiln's so that a drifting
  // host weighs on both sides alike.
  std::optional<TempDir> ort_dir;
  std::unique_ptr<OrtProfiler> ort;
  if (vs) {
    KILN_CHECK(source, "kiln profile --vs ort: needs the ONNX model: give MODEL.onnx, or an artifact whose manifest's ",
               "source model still exists");
    KILN_CHECK(!is_textual_ir_file(source_path), "kiln profile --vs ort: ", source_path,
               " is kiln's textual IR, and ONNX Runtime runs ONNX models: give the .onnx file");
    ort_dir.emplace("kiln-profile-ort");
    progress(str_cat("ONNX Runtime: ", opt.warmup, " warm-up and ", opt.runs / 2, " of its ", opt.runs,
                     " profiled runs"));
    ort = std::make_unique<OrtProfiler>(a.has("--ort-script") ? *a.get("--ort-script") : find_ort_script(),
                                        source_path, inputs.tensors, opt.threads, ort_dir->path());
    ort->run(opt.warmup + opt.runs / 2);
  }
  progress(str_cat(opt.warmup, " warm-up and ", opt.runs, " profiled runs, each after a plain run"));
  analysis::Profile p = analysis::profile_model(*exe, ordered, costed, sources, roof, opt);
  std::optional<analysis::PeerComparison> peer;
  if (ort) {
    progress(str_cat("ONNX Runtime: the other ", opt.runs - opt.runs / 2, " profiled runs"));
    ort->run(opt.runs - opt.runs / 2);
    std::vector<analysis::PeerNode> nodes;
    double run_ms = 0;
    ort->finish(opt.runs, nodes, run_ms);
    ort.reset();
    peer = analysis::compare_with_peer(p, *source->graph, nodes, run_ms);
  }
  p.model = path;
  p.placement = placement.value_or("");
  p.machine = machine.cpu + " x" + std::to_string(machine.cores);
  // --scaling: the same runs on one thread, right after, kernel by kernel.
  std::optional<analysis::Scaling> scaling;
  if (a.has("--scaling")) {
    progress(str_cat("the same ", opt.runs, " runs on one thread (--scaling)"));
    analysis::ProfileOptions one = opt;
    one.threads = 1;
    one.run_counts = nullptr;  // one thread: no placement to wait for
    scaling = analysis::compare_scaling(
        analysis::profile_model(*exe, ordered, costed, sources, analysis::roof_for(machine, 1), one), p);
  }

  // --rerun: runs of their own in which every kernel runs twice in a row.
  std::optional<analysis::Rerun> rerun;
  if (a.has("--rerun")) {
    progress(str_cat(opt.runs, " more runs, each kernel run a second time right after itself (--rerun)"));
    rerun = analysis::profile_rerun(*exe, ordered, opt);
  }

  // --balance: runs of their own with the pool's per-thread stats on.
  std::optional<analysis::Balance> balance;
  if (a.has("--balance")) {
    progress(str_cat(opt.runs, " more runs, the time each thread spends in each kernel's pieces (--balance)"));
    balance = analysis::profile_balance(*exe, ordered, opt);
  }

  std::optional<analysis::Diagnosis> diag;
  if (a.has("--explain")) {
    // The perf model for kiln's runtime on these threads, on the graph as compiled.
    analysis::Chip chip = analysis::chip_from_machine(machine, opt.threads);
    analysis::PerfOptions po;
    analysis::attach_predictions(p, analysis::estimate(costed, inputs.batch, chip, po, true));
    diag = analysis::diagnose(costed, chip, po, p.plain_ms, inputs.batch);
  }
  std::string out;
  if (a.has("--json")) {
    out = analysis::profile_to_json(p, diag ? &*diag : nullptr, scaling ? &*scaling : nullptr, peer ? &*peer : nullptr,
                                    rerun ? &*rerun : nullptr, balance ? &*balance : nullptr);
  } else {
    out = analysis::profile_to_text(p, static_cast<size_t>(top));
    if (scaling) out += analysis::scaling_to_text(*scaling, static_cast<size_t>(top));
    if (rerun) out += analysis::rerun_to_text(*rerun, static_cast<size_t>(top));
    if (balance) out += analysis::balance_to_text(*balance, static_cast<size_t>(top));
    if (peer) out += analysis::peer_to_text(*peer, static_cast<size_t>(top));
    if (diag) out += "\nexplain (perf model --chip cpu on the compiled graph):\n" + analysis::diagnosis_to_text(*diag);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (auto f = a.get("--trace")) {
    write_file(*f, analysis::profile_to_trace(p));
    std::fprintf(stderr, "wrote %s\n", f->c_str());
  }
  if (auto f = a.get("--html")) {
    write_file(*f, analysis::profile_to_html(p));
    std::fprintf(stderr, "wrote %s\n", f->c_str());
  }
  return 0;
}

}  // namespace kiln::cli

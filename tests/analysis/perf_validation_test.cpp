// Issue 5 item 6: with --chip cpu (this machine's measured ceilings and kernel rates), the perf
// model's predicted latency of each compiled zoo model is within +-30% of the measured compiled
// latency, at batch 1, 4 and 16. Prints the table; fails beyond the bound.
//
// It times real runs, so it is a benchmark, not part of `make test` (timed tests on a shared
// machine are flaky): disabled by default, run by scripts/perf_validate.sh, results recorded in
// BENCHMARKS.md.
//
// Rows: every zoo model at batch 1; batches 4 and 16 for the vision models and digits_cnn (the
// zoo's bert_base and gpt2 exports fix batch 1 in their Reshape targets; gpt2_decode's KV cache
// and Silero's state are batch-1 inputs too).
// One thread: the machine is shared by other builds and benchmarks, and a single-threaded run is
// disturbed by them far less than one that waits for a second core at every parallel region.
// Measured = the CPU time of the running thread (one thread: every kernel runs on it), fastest of
// a few runs (at least 2, up to ~0.25 s per row), as kiln machine keeps the best of its
// repetitions: time the thread spends descheduled by other work on the machine is not the
// model's to predict; then the median of that over 3 rounds taken across all rows in turn (a
// burst of load slows one round of every row, not every run of one row). Wall time likewise.
// The ceilings are measured afresh before each round (measure_machine: the FMA peak, the DRAM
// triad, the kernel rates, ~5 s) and that round's rows are predicted from them, so the model and
// the runs see the same host: other tenants moved the DRAM triad between 30 and 37 GB/s within an
// hour, and a row measured against a cache from a quieter hour read as the model's error (the
// nineteenth session's runs from the cached ceilings: 16, 18 and 9 of 18 rows within 30%). A
// row's ratio is the median of its rounds' predicted / measured. Artifacts persist in the build
// directory, so a rerun finds them up to date (kiln compile's recompile cache) and only measures.
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <algorithm>
#include <filesystem>

#include "kiln/analysis/chip.h"
#include "kiln/analysis/machine.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/compiler/compile.h"
#include "kiln/ir/npy.h"
#include "kiln/frontend/onnx.h"
#include "kiln/runtime/artifact.h"

namespace kiln::analysis {
namespace {

namespace fs = std::filesystem;

constexpr double kBound = 0.30;
constexpr int kMinRuns = 2, kMaxRuns = 50;
constexpr double kRowSeconds = 0.25;
constexpr int kRounds = 3;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// The zoo input `t` with its leading dim made `batch`: rows cycled (or cut).
Tensor with_batch(const Tensor& t, int64_t batch) {
  std::vector<int64_t> dims = t.dims();
  if (dims.empty() || dims[0] == batch) return t;
  int64_t rows = dims[0];
  size_t row_bytes = t.nbytes() / static_cast<size_t>(rows);
  dims[0] = batch;
  Tensor out(t.dtype(), dims);
  for (int64_t r = 0; r < batch; ++r)
    std::memcpy(static_cast<char*>(out.raw()) + r * row_bytes,
                static_cast<const char*>(t.raw()) + (r % rows) * row_bytes, row_bytes);
  return out;
}

struct Row {
  std::string model;
  int64_t batch = 0;
  double predicted_ms = 0, measured_ms = 0, wall_ms = 0;
  std::string bound;
  int64_t uncosted = 0;  // nodes whose shapes are known only at run time (If branches)
};

// One row: the compiled artifact, its inputs and the prediction; measured later in rounds.
struct Case {
  Row row;
  std::unique_ptr<Executable> exe;
  std::vector<Tensor> inputs;
  Model costed;                                     // the artifact's graph at this row's shapes
  std::vector<double> round_best, round_best_wall;  // per round: fastest run's CPU and wall ms
  std::vector<double> round_predicted;              // per round: the prediction from its ceilings
};

Case prepare(const fs::path& zoo, const std::string& name, int64_t batch) {
  fs::path model = zoo / name / "model.onnx";
  Model src = import_onnx(model.string());
  Case c;
  ops::InputSpec shapes;
  for (const Value* v : src.graph->inputs) {
    Tensor t = read_npy((zoo / name / "inputs" / (v->name + ".npy")).string());
    // Only a symbolic leading dim is the batch (Silero's state is [2, batch, 64]).
    if (v->shape.rank() > 0 && !v->shape.dims[0].is_static()) t = with_batch(t, batch);
    shapes.shapes[v->name] = t.dims();
    c.inputs.push_back(t);
  }
  fs::path dir = fs::path(KILN_BINARY_DIR) / "perf_validation";
  fs::create_directories(dir);
  std::string art = (dir / (name + "_b" + std::to_string(batch) + ".kiln")).string();
  compiler::CompileOptions copt;
  copt.inputs = shapes;
  copt.threads = 1;
  copt.cache_dir = (dir / "kernel_cache").string();
  compiler::compile_file(model.string(), art, copt);
  c.exe = Executable::load(art);
  c.costed = read_artifact(art).model;
  ops::specialize_inputs(c.costed, shapes);
  c.row.model = name;
  c.row.batch = batch;
  return c;
}

// This round's prediction of a row from the ceilings just measured.
void predict_round(Case& c, const Chip& chip) {
  PerfRow row = estimate(c.costed, c.row.batch, chip, PerfOptions{});
  c.round_predicted.push_back(row.latency_ms);
  c.row.bound = bound_name(row.bound);
  c.row.uncosted = row.uncosted_nodes;
}

// One round of one row: the fastest of a few runs (at least 2, up to ~0.25 s).
void measure_round(Case& c) {
  RunOptions ro;
  ro.threads = 1;
  std::vector<Tensor> outputs;
  c.exe->run(c.inputs, outputs, ro);  // warm: plan, first touch of the arena and weights
  double best = 1e30, best_wall = 1e30, spent = 0;
  for (int r = 0; r < kMaxRuns && (r < kMinRuns || spent < kRowSeconds * 1e3); ++r) {
    double c0 = thread_cpu_ms();
    auto t0 = std::chrono::steady_clock::now();
    c.exe->run(c.inputs, outputs, ro);
    double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, thread_cpu_ms() - c0);
    best_wall = std::min(best_wall, wall);
    spent += wall;
  }
  c.round_best.push_back(best);
  c.round_best_wall.push_back(best_wall);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST(PerfValidation, DISABLED_CompiledZooWithin30PercentOfThePrediction) {
  fs::path zoo = fs::path(KILN_BINARY_DIR) / "zoo";
  if (!fs::exists(zoo / "resnet18" / "model.onnx")) GTEST_SKIP() << "no model zoo at " << zoo;
  std::vector<std::pair<std::string, std::vector<int64_t>>> plan = {
      {"digits_cnn", {1, 4, 16}},   {"resnet18", {1, 4, 16}}, {"resnet50", {1, 4, 16}},
      {"mobilenet_v2", {1, 4, 16}}, {"efficientnet_b0", {1, 4, 16}}, {"bert_base", {1}},
      {"gpt2", {1}},                {"gpt2_decode", {1}},       {"silero_vad_legacy", {1}},
      {"silero_vad_v5", {1}},       {"silero_vad_v6", {1}}};
  std::vector<Case> cases;
  for (const auto& [name, batches] : plan) {
    if (!fs::exists(zoo / name / "model.onnx")) continue;
    for (int64_t b : batches) cases.push_back(prepare(zoo, name, b));
  }
  // Rounds over all rows, each after measuring the ceilings it is predicted from; the median of
  // each row's per-round fastest run: a burst of load on the shared machine then slows one round
  // of every row rather than every run of a few rows.
  std::vector<double> triads;
  for (int round = 0; round < kRounds; ++round) {
    const MachinePeaks machine = measure_machine();
    triads.push_back(machine.dram_gbs_one_core);
    const Chip chip = chip_from_machine(machine, 1);
    for (Case& c : cases) {
      predict_round(c, chip);
      measure_round(c);
    }
  }
  std::vector<Row> rows;
  std::vector<double> ratios;  // per row: the median of its rounds' predicted / measured
  for (Case& c : cases) {
    std::vector<double> r;
    for (size_t i = 0; i < c.round_best.size(); ++i) r.push_back(c.round_predicted[i] / c.round_best[i]);
    ratios.push_back(median(r));
    c.row.predicted_ms = median(c.round_predicted);
    c.row.measured_ms = median(c.round_best);
    c.row.wall_ms = median(c.round_best_wall);
    rows.push_back(c.row);
  }
  std::printf("perf model (--chip cpu, 1 thread, the ceilings measured before each round: DRAM triad");
  for (double t : triads) std::printf(" %.1f", t);
  std::printf(" GB/s) vs compiled kiln (thread CPU time, median over %d rounds of the fastest run):\n", kRounds);
  std::printf("%-18s %6s %13s %12s %9s %9s %9s\n", "model", "batch", "predicted_ms", "measured_ms", "wall_ms", "pred/meas",
              "bound");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::printf("%-18s %6lld %13.3f %12.3f %9.3f %9.2f %9s%s\n", r.model.c_str(), static_cast<long long>(r.batch),
                r.predicted_ms, r.measured_ms, r.wall_ms, ratios[i], r.bound.c_str(),
                r.uncosted ? str_cat("  not checked: ", r.uncosted, " nodes have run-time shapes").c_str()
                : std::abs(ratios[i] - 1) > kBound ? "  <-- beyond 30%" : "");
  }
  int checked = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    // Silero's compiled graph is one If whose branches the runtime interprets with shapes it
    // learns only when running: there is nothing static to cost, and the model says so.
    if (r.uncosted > 0) continue;
    ++checked;
    EXPECT_LE(std::abs(ratios[i] - 1), kBound)
        << r.model << " at batch " << r.batch << ": predicted / measured " << ratios[i] << " (median over rounds; "
        << r.predicted_ms << " against " << r.measured_ms << " ms)";
  }
  EXPECT_GE(checked, 16);  // 5 models x 3 batches + bert, gpt2, gpt2_decode
}

}  // namespace
}  // namespace kiln::analysis

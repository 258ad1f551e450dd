// What `kiln bench` measured, and how it is printed: a readable table, or one JSON object.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "kiln/analysis/compare.h"

namespace kiln::cli {

struct LatencyStats {
  double median_ms = 0, p90_ms = 0, min_ms = 0, mean_ms = 0;
  int runs = 0;
};
// Median (mean of the middle two for an even count), p90 (nearest rank), min, mean.
LatencyStats summarize(std::vector<double> ms);

// Inferences after which compiling has paid for itself: compile time over the time each
// compiled inference saves. nullopt ("never") when compiled is not faster.
std::optional<double> break_even_runs(double compile_seconds, double eager_ms, double compiled_ms);

struct BackendResult {
  std::string name;                  // "interp", "compiled", "ort"
  std::vector<double> times_ms;      // timed runs, in the order they ran
  LatencyStats stats;
  std::optional<double> compile_s;  // when the backend compiled in this run
  double idle_wait_ms = 0;           // median wait for it to go idle after its blocks
  std::optional<double> warmup_fastest_ms;  // its fastest warm-up run, when it warmed up
};

struct OutputCheck {
  std::string backend, output;
  Comparison c;
};

// kiln over ORT block by block: the two blocks of one round ran back to back, so the ratio of
// their medians sees one stretch of the machine's noise, and drifts that last seconds (a busy
// neighbour, a frequency change) fall out of it where the ratio of the overall medians keeps
// them. Quartiles by linear interpolation over the rounds' ratios.
struct PairedRatio {
  double median = 0, q25 = 0, q75 = 0;
  int blocks = 0;
};
// a's and b's times_ms cut into consecutive blocks of `block` runs (the last may be shorter);
// nullopt when the two did not run the same number of times or block < 1.
std::optional<PairedRatio> paired_ratio(const BackendResult& a, const BackendResult& b, int block);

struct BenchResult {
  std::string model;          // MODEL as given (an ONNX / IR file or a .kiln artifact)
  std::string source_model;   // the ONNX / IR file interp and ORT ran ("" when none ran)
  std::string source_sha256;  // its SHA-256
  int threads = 1;
  int64_t batch = 1;
  int runs = 0, warmup = 0, block = 0;
  int gap_ms = 0;          // idle time before each timed run (--gap-ms)
  double idle_spin_ms = 0;  // how long kiln's workers spin after a run (--idle-spin-ms)
  int cores = 1;                             // hardware threads of the machine
  std::string pinned_cpus;                   // the CPUs every backend ran on ("": not pinned)
  double load_before = -1, load_after = -1;  // 1-minute load averages (-1: unknown)
  // With more than one thread: the FMA throughput of min(threads, cores) threads together over
  // one alone, before and after the timed runs (analysis::parallel_capacity); 0 = not measured.
  int capacity_threads = 1;
  double capacity_before = 0, capacity_after = 0;
  // With more than one thread: a cache line's round trip between kiln's calling thread and its
  // pool worker (kernels::core_round_trip_ns), before and after the timed runs; -1 = not
  // measured (one thread, or the worker was not running). Above kernels::kFarCoresNs the cores
  // are far apart and kiln's write prefetch and output claims run (kernels/dispatch.h).
  double core_trip_before_ns = -1, core_trip_after_ns = -1;
  // With more than one thread: the same round trip read before each round of blocks and after
  // the last (rounds + 1 readings, -1 where the worker did not answer in time): which rounds ran
  // with the cores close and which far apart (split_by_placement).
  std::vector<double> round_trips_ns;
  std::vector<std::string> inputs;  // where each input came from
  bool random_integers = false;
  std::vector<BackendResult> backends;  // kiln backends in --backends order, then "ort"
  std::string kiln;                     // the backend reported as "kiln": compiled if measured
  std::string check_reference;          // "ort", "interp" or "" (no check)
  double check_tolerance = 1e-4;        // max|Δ| <= tol * max|ref|
  // int8 models (check_min_cosine > 0): ok when cosine >= check_min_cosine instead, since two
  // int8 implementations of one QDQ graph round differently (bench_measure.h's check_outputs).
  double check_min_cosine = 0;
  std::vector<OutputCheck> checks;

  const BackendResult* find(const std::string& name) const;
  bool checks_ok() const;
};

// The timed rounds by where the host had kiln's cores while they ran: "close" where the round
// trips read before and after a round are both at or under kernels::kFarCoresNs, "far" where
// both are over it. On a virtual machine the hypervisor moves the vCPUs every few seconds to
// minutes, and the peers gain differently from close cores (ORT's threads hand more data to
// each other), so a ratio over a whole bench mixes two machines. Rounds whose two readings
// disagree (the placement changed while they ran) or are missing count in neither.
struct PlacementRounds {
  std::string placement;                // "close" or "far"
  int rounds = 0;
  std::vector<BackendResult> backends;  // each backend's runs in those rounds, in order, and their stats
};
struct PlacementSplit {
  std::vector<PlacementRounds> placements;  // close, then far; only those with rounds
  int changed = 0, unread = 0;              // rounds left out: placement changed, a reading missing
};
// nullopt when the rounds were not probed (one thread) or the readings do not match the runs.
std::optional<PlacementSplit> split_by_placement(const BenchResult& r);

std::string render_text(const BenchResult& r);
std::string render_json(const BenchResult& r);  // one object, one line

}  // namespace kiln::cli

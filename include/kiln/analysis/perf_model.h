// `kiln perf`: an analytic performance model of a model on a chip at a batch size.
//
// FLOPs and bytes come only from the op table (ops::node_cost), one source of truth shared
// with `kiln graph` and the profiler. Per kernel: time = max(FLOPs / peak, bytes / bandwidth)
// + launch overhead, summed over the graph in order (no overlap between kernels). Matrix ops
// (Conv, MatMul, Gemm, ...) run at the chip's peak for the chosen precision; everything else
// at its vector rate. Views (Reshape, Squeeze, ...) and computations on constants (shape
// arithmetic, folded by the compiler) cost nothing and launch nothing.
// Precision scales the bytes of floating-point tensors (weights and activations) from the
// model's own float width to the target's; integer tensors (indices, ids) keep theirs.
// Memory = weights + activation arena + workspace, where the arena is the peak of live
// activation bytes over the topological order (views share their source's storage) — a
// simple live-range estimate, not the planner's packing.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/analysis/chip.h"
#include "kiln/ir/graph.h"

namespace kiln::analysis {

enum class Bound { compute, memory, overhead };
std::string_view bound_name(Bound b);
// The colour a bound is drawn in, the same in every chart (perf --svg, profile --html).
const char* bound_colour(Bound b);

// One kernel's time on a chip, from its FLOPs and bytes.
struct OpTime {
  double compute_s = 0;  // flops / peak
  double memory_s = 0;   // bytes / bandwidth
  double launch_s = 0;
  double stall_s = 0;    // memory time the kernel does not hide behind compute (--chip cpu)
  double total_s() const { return std::max(compute_s, memory_s) + stall_s + launch_s; }
  Bound bound() const;   // the largest of the three terms
};
OpTime op_time(double flops, double bytes, double peak_flops, const Chip& chip);

struct PerfOptions {
  Precision precision = Precision::fp32;
  // Name of the batch dim; empty: the first dim of every graph input is the batch.
  std::string batch_dim;
};

struct OpEstimate {
  const Node* node = nullptr;
  std::string path;        // node name (subgraph nodes: "parent/attr/name")
  double flops = 0;
  double bytes = 0;        // after precision scaling
  bool matrix = false;     // ran at the precision's matrix peak
  OpTime time;
};

struct PerfRow {
  int64_t batch = 0;
  double latency_ms = 0;
  double throughput_per_s = 0;
  int64_t memory_bytes = 0;     // weights + arena + workspace
  int64_t weight_bytes = 0;
  int64_t arena_bytes = 0;
  int64_t workspace_bytes = 0;
  bool fits = true;             // memory_bytes <= chip memory
  Bound bound = Bound::memory;
  double compute_ms = 0;        // sum of compute terms of ops where compute dominates
  double memory_ms = 0;         // sum of memory terms of ops where memory dominates
  double overhead_ms = 0;       // kernels x launch overhead
  int64_t kernels = 0;
  double flops = 0;
  double bytes = 0;
  int64_t uncosted_nodes = 0;   // nodes whose shapes stayed dynamic (left out)
  std::vector<OpEstimate> ops;  // filled when asked (diagnosis, tests)
};

struct PerfReport {
  std::string model;
  Chip chip;
  Precision precision = Precision::fp32;
  std::vector<PerfRow> rows;
  std::optional<int64_t> optimal_batch;
  std::string optimal_reason;
  std::optional<double> max_latency_ms;
  std::optional<int64_t> best_batch_under_latency;
};

// Binds a model's batch dim to chosen sizes and re-infers shapes. Other symbolic input dims
// must already be bound (kiln::Error names the first one left). Every shape is put back as it
// was when the binder goes away, so the model can be bound again.
class BatchBinder {
 public:
  BatchBinder(Model& m, const std::string& batch_dim);
  ~BatchBinder();
  BatchBinder(const BatchBinder&) = delete;
  BatchBinder& operator=(const BatchBinder&) = delete;
  void bind(int64_t batch);
  Model& model() { return m_; }

 private:
  Model& m_;
  std::vector<std::pair<Value*, Shape>> snapshot_;           // every value's shape as loaded
  std::vector<std::pair<Value*, std::vector<size_t>>> batch_positions_;  // per input: batch dims
  std::vector<std::string> batch_symbols_;
};

// The model at one batch (shapes must be bound: see BatchBinder). `keep_ops` fills row.ops.
PerfRow estimate(const Model& m, int64_t batch, const Chip& chip, const PerfOptions& opt, bool keep_ops = false);

// Binds each batch in turn and estimates; picks the optimal batch and, with max_latency_ms,
// the batch of highest throughput within it.
PerfReport predict(Model& m, const std::vector<int64_t>& batches, const Chip& chip, const PerfOptions& opt,
                   std::optional<double> max_latency_ms = std::nullopt);

std::string perf_to_text(const PerfReport& r);
struct Diagnosis;
// With `measured` (kiln perf --measured), its diagnosis is the last member, "measured".
std::string perf_to_json(const PerfReport& r, const Diagnosis* measured = nullptr);
// Latency and throughput vs batch (log2 x axis), points coloured by bound.
std::string perf_to_svg(const PerfReport& r);

}  // namespace kiln::analysis

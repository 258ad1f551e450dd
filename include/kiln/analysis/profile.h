// `kiln profile`: where the time of a compiled model goes, kernel by kernel, judged against this
// machine's measured roofline (`kiln machine`).
//
// Per kernel of the optimized graph (one compiled step): the median wall time over the profiled
// runs (Executable::profile_run), its share of the total, FLOPs and bytes from the op table
// (ops::node_cost: kiln's fused ops have their own cost entries, packed weights count at their
// logical `w_shape`), arithmetic intensity, the achieved GFLOP/s and GB/s, and how close it comes
// to the roofline bound:
//   roof time = max(FLOPs / peak, bytes / bandwidth)        (the fastest the kernel could run)
//   roof fraction = roof time / measured time               (1 = at the roof)
//   verdict = overhead  when the roof time is below the measured per-kernel dispatch cost
//                       (an empty parallel region of the thread pool): too small to reach a roof;
//             compute   when FLOPs / peak >= bytes / bandwidth;
//             memory    otherwise.
// Peak and bandwidth are this machine's measured FP32 FMA peak and triad bandwidth for the cores
// the run uses (per-core figures times the threads, the all-core ones when every core runs).
// Each original ONNX node a kernel covers (source_map.h) is given a share of the kernel's time in
// proportion to its own roof time in the source graph.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/analysis/machine.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/analysis/source_map.h"
#include "kiln/runtime/executable.h"

namespace kiln::analysis {

// The ceilings kernels are judged against.
struct Roof {
  double peak_gflops = 0;
  // INT8 multiply-accumulate peak in GOP/s (kiln machine's int8_gops; 0 = not measured): the
  // compute roof of the quantized kernels (kiln.QConv, kiln.QMatMul), whose ops are u8 x s8.
  double int8_peak_gops = 0;
  double bandwidth_gbs = 0;
  double dispatch_us = 0;  // fixed cost of one kernel: an empty thread-pool region, measured
  int threads = 1;
};
// Peak and bandwidth for `threads` threads from the measured machine (dispatch_us left 0).
Roof roof_for(const MachinePeaks& m, int threads);
// Median time of an empty parallel region over `threads` threads, in microseconds.
double measure_dispatch_us(int threads);

struct KernelJudgement {
  double intensity = 0;       // FLOP per byte
  double gflops = 0, gbs = 0; // achieved
  double roof_ms = 0;
  double roof_fraction = 0;   // roof_ms / ms
  Bound verdict = Bound::overhead;
};
// int8: the kernel's ops are INT8 multiply-adds, judged against roof.int8_peak_gops when known.
KernelJudgement judge_kernel(double flops, double bytes, double ms, const Roof& roof, bool int8 = false);
// Whether a kernel's op (as profiles name it, "kiln.QConv") computes with INT8 multiply-adds.
bool int8_op(const std::string& op);

struct KernelProfile {
  std::string name, op, tactic;
  bool fast = true;                 // false: the op table's reference kernel ran it
  std::vector<std::string> nodes;   // original ONNX nodes it covers
  double ms = 0;                    // median over the profiled runs
  double share = 0;                 // of the sum of kernel medians
  double flops = 0, bytes = 0;
  bool costed = true;               // the op table had a cost for it
  KernelJudgement j;
  double predicted_ms = -1;         // the perf model's time for it (--explain; -1: not predicted)
  int64_t fetch_ahead_bytes = 0;    // a later kernel's weights it fetched as it computed (StepTiming)
  std::string fetch_ahead_for;      // that kernel
};

struct SourceNodeProfile {
  std::string name, op;
  std::string kernel;               // the kernel that covers it (the first, if several)
  double ms = 0;                    // its share of that kernel's time
};

struct Suggestion {
  std::string kind;    // "fuse", "quantize-weights", "tune", "reference-kernel"
  std::string detail;  // one line naming the kernels and the numbers behind it
  double ms = 0;       // measured time at stake
};

struct Profile {
  std::string model;
  int threads = 1;
  int runs = 0;
  Roof roof;
  std::string machine;                     // cpu and cores, as measured
  std::vector<KernelProfile> kernels;      // in run order
  std::vector<SourceNodeProfile> sources;  // original nodes, in source order
  double kernel_ms = 0;                    // sum of the kernels' medians
  double profiled_ms = 0;                  // median wall time of a profiled run
  double plain_ms = 0;                     // median wall time of a plain run (interleaved)
  double overhead_fraction = 0;            // profiled / plain - 1
  std::vector<std::vector<StepTiming>> timeline;  // every profiled run's steps (for --trace)
  std::vector<double> run_start_ms;        // start of each profiled run since the first
  std::string placement;                   // "close" / "far": only such runs counted (kiln profile --placement)
  std::vector<Suggestion> suggestions;
};

struct ProfileOptions {
  int threads = 1;
  int runs = 10;
  int warmup = 2;
  // When set, called before and after each timed pair (a plain run and a profiled one): the pair
  // counts only when both calls return true, else it is dropped and another runs in its place
  // (kiln profile --placement: the cores' placement read before and after). It may throw
  // kiln::Error to give up.
  std::function<bool()> run_counts;
};

// Runs `exe` on `inputs` warmup + runs times, a plain run before every profiled one (so the
// profiler's own cost is measured under the same conditions), and judges every kernel.
// `costed` is the optimized graph with shapes bound to the inputs (FLOPs and bytes are read
// from it by node name); `sources` maps its node names to the original nodes they cover.
Profile profile_model(Executable& exe, const std::vector<Tensor>& inputs, const Model& costed, const SourceMap& sources,
                      const Roof& roof, const ProfileOptions& opt);

// Fills kernels[].share/j, sources and kernel_ms from kernels[].ms/flops/bytes (used by
// profile_model; exposed so tests can judge synthetic numbers).
void summarize(Profile& p, const SourceMap& sources);

// Suggestions derived from the numbers, largest time at stake first:
//   fuse              an elementwise kernel reading a single-use tensor another kernel wrote
//                     (chains named, with the time of the kernels that fusion would remove);
//   quantize-weights  a memory-bound matrix kernel whose bytes are mostly constant weights
//                     (int8 weights move a quarter of them);
//   tune              a compute-bound conv/GEMM under half of its roof;
//   reference-kernel  kernels the op table's reference kernel ran, with their time.
// `g` (the optimized graph) gives the producer/consumer links; kernels are found by name.
std::vector<Suggestion> suggest(const Profile& p, const Graph& g);

// Fills kernels[].predicted_ms from a perf-model row computed with keep_ops on `costed`.
void attach_predictions(Profile& p, const PerfRow& row);

// The runs of their own that --rerun and --balance time: opt.warmup, then opt.runs, each a plain
// run followed by one of `profiled_run` (an Executable::profile_run on opt.threads, with what it
// needs around it); the timed ones' steps. `what` names the option in errors.
std::vector<std::vector<StepTiming>> extra_profiled_runs(
    Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt, const std::string& what,
    const std::function<std::vector<StepTiming>(std::vector<Tensor>& outputs, const RunOptions& ro)>& profiled_run);

// The median of the values (the mean of the middle two for an even count); 0 for none. The
// profile's per-kernel times and those of --rerun and --balance.
double median(std::vector<double> v);

// Top-N kernels by time, then the suggestions.
std::string profile_to_text(const Profile& p, size_t top);
// {"model", "threads", "runs", "roof", "total_ms", "profiled_ms", "plain_ms", "overhead_fraction",
//  "kernels": [{"name","op","tactic","fast","nodes","ms","share","flops","bytes","intensity",
//               "gflops","gbs","roof_ms","roof_fraction","verdict"}], "nodes": [...], "suggestions": [...]}
// With `explain` (kiln profile --explain), the perf model's diagnosis is a member "explain"; with
// `scaling` (kiln profile --scaling, profile_scaling.h), the comparison with one thread is a
// member "scaling"; with `rerun` (kiln profile --rerun, profile_rerun.h), each kernel's second
// call is a member "rerun"; with `balance` (kiln profile --balance, profile_balance.h), each
// kernel's work per thread is a member "balance"; with `peer` (kiln profile --vs ort, profile_peer.h), the comparison
// with ONNX Runtime is the last member, "ort".
struct Scaling;
struct PeerComparison;
struct Rerun;
struct Balance;
std::string profile_to_json(const Profile& p, const Diagnosis* explain = nullptr, const Scaling* scaling = nullptr,
                            const PeerComparison* peer = nullptr, const Rerun* rerun = nullptr,
                            const Balance* balance = nullptr);
// Chrome / Perfetto trace: one complete ("X") event per step per run on the run's thread.
std::string profile_to_trace(const Profile& p);
// A self-contained page: the roofline (SVG; one circle per costed kernel, the memory and compute
// roofs from the measured machine) and the kernel table.
std::string profile_to_html(const Profile& p);

}  // namespace kiln::analysis

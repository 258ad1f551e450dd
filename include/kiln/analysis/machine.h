// `kiln machine`: this machine's measured ceilings — FP32 FMA peak (one core, all cores),
// INT8 VNNI and BF16 dot-product peaks where the CPU has them, DRAM bandwidth (STREAM-style
// triad, one core and all cores) and read bandwidth per cache level. Measured once and
// cached; every CPU roofline in kiln (perf model --chip cpu, profiler) uses these numbers,
// never a datasheet guess.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::analysis {

struct CacheBandwidth {
  std::string level;               // "L1", "L2", "L3"
  int64_t cache_bytes = 0;         // size the OS reports (L3: the whole socket's, shared)
  int64_t working_set_bytes = 0;   // buffer read to measure it
  double gbs_one_core = 0;
};

// One of kiln's own kernels timed on one core at a fixed calibration shape: what the compiled
// runtime reaches, next to the FMA peak it could reach. The perf model (--chip cpu) predicts
// kiln's kernels with these rates rather than with the bare peak (perf_cpu.h).
struct KernelRate {
  std::string name;            // "conv_gemm", "conv_pointwise", "conv_depthwise", "gemm",
                               // "reference_pool", "reference_elementwise"
  std::string shape;           // the calibration shape, for the record
  double gflops_one_core = 0;  // the op table's FLOPs / time
  double gbs_one_core = 0;     // the op table's bytes / time
  double seconds = 0;          // one call, best of the repetitions
  int64_t planes = 0;          // convolutions: output planes (N x K); 0 otherwise
  // The calibration's geometry as the perf model reads a node (perf_cpu.h): GEMM kernels, the
  // rows and columns of one call's register tiling; plane kernels (depthwise, pooling), the
  // vector operations issued. 0 when not measured (an older cache).
  int64_t rows = 0, cols = 0, vector_ops = 0;
  // The op table's bytes written (of gbs_one_core's bytes): a store to memory not in cache
  // first reads the line (write-allocate), so DRAM traffic is reads + 2 x writes (perf_cpu.h).
  double bytes_written = 0;
};

struct MachinePeaks {
  std::string cpu;                 // model name
  int cores = 0;                   // physical cores this process may run on
  std::vector<std::string> isa;    // "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", ...
  std::string fma_kernel;          // which loop measured the FP32 peak: "avx512", "avx2", "scalar"
  double fp32_gflops_per_core = 0;
  double fp32_gflops_all_cores = 0;
  std::optional<double> int8_gops_per_core;    // u8 x s8 -> s32 (int8_kernel); 1 MAC = 2 ops
  std::optional<double> int8_gops_all_cores;
  std::string int8_kernel;                     // "avx512-vnni", "avx-vnni" (vpdpbusd) or "avx2" (vpmaddubsw)
  std::optional<double> bf16_gflops_per_core;  // vdpbf16ps; 1 MAC = 2 flops
  std::optional<double> bf16_gflops_all_cores;
  double dram_gbs_one_core = 0;    // triad a = b + s*c, 24 bytes per element (STREAM's count)
  double dram_gbs_all_cores = 0;
  int64_t triad_array_bytes = 0;   // size of each of the three triad arrays
  std::vector<CacheBandwidth> caches;
  std::vector<KernelRate> kernels; // kiln's kernels at calibration shapes, one core
  int64_t memory_bytes = 0;        // physical memory
  double measure_seconds = 0;      // how long the measurement took
  // The share of its wall time the one-core FP32 run had its core (thread CPU time over wall
  // time): under kContendedShare, another process shared the core and every number is low. Not
  // in the cache file (such a measurement is not cached).
  double cpu_share = 1;
  std::string key;                 // cache key: cpu model + core count
  std::string build;               // the kiln build that measured (kiln/ir/build_identity.h): the
                                   // kernel rates are kiln's own code, so a rebuilt kiln re-measures

  const KernelRate* kernel(std::string_view name) const;  // nullptr when not measured
};

// Below this share of `threads` (or cores), parallel capacity means the host ran other work on
// the same physical cores: `kiln bench` and `kiln machine` then warn.
constexpr double kContendedShare = 0.85;

struct MeasureOptions {
  // Each number is the best of `repetitions` short runs: on a shared machine the best run is
  // the one least disturbed, and more short runs find one more often than a few long ones.
  int repetitions = 7;
  double seconds_per_rep = 0.02;   // target length of one compute repetition
  // load_or_measure_machine caches a measurement only when its best one-core FP32 run had its
  // core at least this share of the time (MachinePeaks::cpu_share).
  double min_cpu_share = kContendedShare;
};

// What this machine is (name, cores, ISA, cache sizes, memory) without measuring.
MachinePeaks describe_machine();
// Runs every measurement (a few seconds). Threads are pinned one per physical core.
MachinePeaks measure_machine(const MeasureOptions& opt = {});


// How many cores' worth of FP32 FMA throughput `threads` threads get right now: the FMA loop on
// `threads` cores together (pinned one per physical core) over the same loop on one core alone,
// best of `opt.repetitions` runs of `opt.seconds_per_rep` each, at most the thread count (a higher
// ratio means the one-thread runs were disturbed). ~2.0 for 2 threads on an idle
// 2-core machine; near 1.0 when the host runs other work on the same physical cores (a VM whose
// vCPUs share a core, a noisy neighbour), and then multi-thread timings show the host, not the
// code. `kiln bench` measures it before timing with more than one thread.
double parallel_capacity(int threads, const MeasureOptions& opt);

// When the one-core runs had their core under kContendedShare of the time (cpu_share), a line
// saying every number is low and was not cached; when all cores together reached under
// kContendedShare x cores of one core's FP32 FMA rate, a line saying the host was running other
// work on them while `m` was measured (its all-core numbers, and the perf model's multi-thread
// predictions, are then low); "" otherwise.
std::string contention_warning(const MachinePeaks& m);

// Names of the kernel calibrations measure_machine takes (a cache lacking one is re-measured).
const std::vector<std::string>& kernel_rate_names();

// Runs the widest FP32 FMA loop this CPU has (the one measure_machine times) for `iters`
// iterations on the calling thread and returns the flops it performed: for benchmarks that
// compare a kernel with the FMA peak measured in the same run, call by call, instead of with
// a cached figure from another minute of a shared host.
double run_fma_loop(int64_t iters);

std::string machine_to_json(const MachinePeaks& m);
// Reads what machine_to_json wrote; throws kiln::Error naming `origin` on a bad file.
MachinePeaks machine_from_json(const std::string& text, const std::string& origin);
std::string machine_to_text(const MachinePeaks& m);

// $HOME/.cache/kiln/machine.json (or $XDG_CACHE_HOME/kiln/machine.json).
std::string default_machine_cache_path();
// The cached numbers when `path` holds a measurement of this machine (same key) and
// `refresh` is false; otherwise measures and rewrites `path`. `measured` tells which. A
// measurement whose one-core runs did not have their core (cpu_share) is taken once more; if
// that one did not either, the better of the two is returned and nothing is cached (the next
// call measures again), so one busy minute does not set every later roofline. `cached`: whether
// the returned numbers are the cache's or were written to it.
MachinePeaks load_or_measure_machine(const std::string& path, bool refresh, bool* measured = nullptr,
                                     const MeasureOptions& opt = {}, bool* cached = nullptr);

}  // namespace kiln::analysis

// The chip database behind `kiln perf`: dense peak rates per precision, memory bandwidth and
// size, kernel launch overhead, interconnect. Shipped chips live in data/chips/<name>.json,
// each with a "source" naming the vendor datasheet; users pass their own with --chip FILE.json;
// `cpu` is this machine, from `kiln machine`'s measured (cached) ceilings.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/analysis/machine.h"

namespace kiln::analysis {

enum class Precision { fp32, tf32, bf16, fp16, int8, fp8 };
std::string_view precision_name(Precision p);
// "fp32", ...; throws kiln::Error listing the choices otherwise.
Precision precision_from_name(std::string_view name);
double precision_bytes(Precision p);  // 4, 4, 2, 2, 1, 1
const std::vector<Precision>& all_precisions();

struct Chip {
  std::string id;                     // "h100", "cpu", or the file name
  std::string name;                   // "NVIDIA H100 SXM5 80GB"
  std::string source;                 // where the numbers come from
  std::map<Precision, double> peak_tflops;  // dense (no structured sparsity), per chip
  double vector_tflops = 0;           // non-matrix units (elementwise, reductions): FP32 SIMT / SIMD
  double memory_gbs = 0;              // device (or main) memory bandwidth, GB/s (1e9)
  int64_t memory_bytes = 0;
  double launch_overhead_us = 0;      // per kernel
  int64_t workspace_bytes = 0;        // library scratch (GEMM/conv workspaces)
  bool device_memory = false;         // inputs/outputs cross a host link (a discrete GPU)
  // Interconnect, GB/s in each direction per device (datasheets quote both directions summed).
  double nvlink_gbs = 0;
  double pcie_gbs = 0;
  double link_latency_us = 0;         // per step of a ring collective
  // `--chip cpu`: the measured machine (kiln machine) and the threads the runtime uses. With
  // its kernel rates, fp32 kernels are timed as kiln's compiled runtime runs them (perf_cpu.h).
  std::optional<MachinePeaks> machine;
  int threads = 0;

  // Peak for `p` in FLOP/s (OP/s for int8); throws naming the chip and the precisions it has.
  double peak_flops(Precision p) const;
};

// Parses a chip file; every problem is one kiln::Error line naming `origin`.
Chip parse_chip_json(const std::string& text, const std::string& origin);
Chip load_chip_file(const std::string& path);
// This machine as a chip: measured all-core peaks and triad bandwidth; no launch overhead
// beyond a thread-pool wake-up (a few microseconds).
Chip chip_from_machine(const MachinePeaks& m);
// The same for a runtime on `threads` threads: peaks and bandwidth of that many cores (one
// core's figures times the threads, the all-core ones from all cores on), and a launch
// overhead measured as an empty parallel region of kiln's thread pool on those threads.
Chip chip_from_machine(const MachinePeaks& m, int threads);

// Folders searched for data/chips/<name>.json: next to the executable (build tree and
// install tree layouts).
std::vector<std::string> default_chip_dirs();
// "cpu" -> this machine (cached `kiln machine`, measured if missing); a path ending in
// .json -> that file; else a shipped chip by name from `dirs`.
Chip resolve_chip(const std::string& spec, const std::vector<std::string>& dirs, const std::string& machine_cache = "");
// Names of the shipped chips in `dirs` ("a100", "h100", ...).
std::vector<std::string> shipped_chips(const std::vector<std::string>& dirs);

}  // namespace kiln::analysis

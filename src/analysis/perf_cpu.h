// `kiln perf --chip cpu`: a kernel's time as kiln's compiled runtime runs it on this machine.
//
// The roofline against the bare FMA peak says what the hardware allows; kiln's kernels reach a
// measured fraction of it, and the ops it leaves to the op table's reference kernels far less.
// So for fp32 on a measured machine (Chip::machine with kernel rates), per kernel:
//   time = max(FLOPs / rate, bytes / bandwidth) + launch
// where
//   rate      = the measured one-core rate of the kiln kernel that runs the node (kiln machine's
//               calibration: conv_gemm / conv_pointwise for convolutions by tactic, gemm for
//               MatMul, Gemm, FusedMatMul and Attention), the FMA peak for the other fast
//               kernels (LayerNorm, Softmax, generated elementwise), or for a node no fast kernel
//               takes, the rate of the op table's reference kernel (reference_pool for windowed
//               pooling, reference_elementwise for everything else, global pooling included: it
//               is one pass like an elementwise op); scaled to the threads as the FMA peak scales.
//               Depthwise convolutions pay a fixed cost per output plane besides their FLOPs:
//               time = planes x a + FLOPs x b, with a and b solved from the two depthwise
//               calibrations (56x56 and 7x7 planes);
//   bandwidth = for fast kernels, activations at the read bandwidth of the smallest cache level
//               that holds the kernel's activation bytes (L1, L2, or the L3 working set kiln
//               machine measured, else DRAM) and constant weights at the level that holds all
//               of the model's weights (each run reads every weight once, so a weight stays in
//               cache only if they all fit); for reference kernels their own measured GB/s
//               (their loops, not the memory, are the limit). Gathers count the rows they copy,
//               not the whole table the op table's cost reads.
//
// Refinements from the kernels' structure (each checked by hand in perf_cpu_test.cpp):
//   - GEMM-shaped kernels (MatMul, Gemm, FusedMatMul and the gemm, pointwise, pixel-gemm and
//     direct convolution tactics) reach their calibration's rate scaled by register-tile
//     efficiency (perf_tiles.h): rate = calibration rate x efficiency(node) / efficiency(calibration),
//     with the node's tiling by tactic (gemm_geometry below);
//   - depthwise convolutions and pooling (plane kernels) cost planes x a + vector_ops x b: the
//     vector operations they issue (output rows x vectors per row, taps, stride-2 taps reading two
//     vectors) rather than their useful FLOPs, so lanes lost at a row's end are counted; a and b
//     solved from two calibrations (large and small planes) of the same kernel;
//   - convolutions and GEMMs pay the fixed cost of one call of the kernel (its smallest call,
//     timed by kiln machine: conv_call, gemm_call) besides the dispatch, in the launch term;
//   - the bodies of kiln ops (kiln.FusedElementwise) are part of their node's kernel;
//   - bytes from DRAM (activations beyond the L3 working set, weights when the model's do not
//     fit it): a store to a line not in cache first reads it (write-allocate), so the traffic is
//     reads + 2 x writes, at the triad's raw bandwidth (STREAM counts 24 of the triad's 32 bytes
//     per element: raw = triad x 32/24). One core hides only part of that behind arithmetic:
//       time = max(compute, memory) + (1 - overlap) x min(compute, dram)
//     with the overlap measured by kiln machine (conv_pointwise_dram: a thin 1x1 conv on 64 MB of
//     operands; its compute c at conv_pointwise's in-cache rate, its DRAM time d as above):
//       overlap = (c + d - measured) / min(c, d), clamped to [0, 1].
//     In-cache traffic keeps max(): the calibration rates were measured with cached operands,
//     so whatever they do not hide is in the rate already.
#pragma once
#include "kiln/analysis/chip.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/ir/graph.h"
#include "perf_residency.h"

namespace kiln::analysis {

// True when the chip carries the measurements this model needs.
bool has_kernel_rates(const Chip& chip);
// Which measured rate times node n: "conv_gemm", "gemm", "fma_peak", "reference_pool", ...
std::string cpu_kernel_class(const Node& n);
// One call's GEMM tiling of a GEMM-shaped node of class `cls` (cpu_kernel_class): `rows` on
// the micro-kernel's register rows, `cols` on its vector columns, `calls` the independent GEMMs
// (images x groups for convolutions, batch for batched MatMul). Zero rows: not a GEMM.
//   gemm, pointwise: output channels (per group) x output pixels, per image and group;
//   pixel-gemm:      output pixels x output channels, per image;
//   direct:          the pixels of one output row x output channels (tiles stay in a row),
//                    per output row of each image;
//   MatMul-like:     A's rows (all leading dims when B is a 2-D weight) x output columns.
struct GemmGeometry {
  int64_t rows = 0, cols = 0, calls = 0;
};
GemmGeometry gemm_geometry(const Node& n, const std::string& cls);
// Vector operations a plane kernel (depthwise convolution, pooling) issues: per plane,
// OH x ceil(OW / lanes) output vectors, rounded up to the kernel's 8 in flight, x R x S taps,
// x2 for a stride-2 row (each tap reads two vectors and keeps the even lanes). 0 if not a plane
// kernel or shapes are not static.
double plane_vector_ops(const Node& n, int64_t lanes);

// DRAM traffic of a kernel that reads `read` and writes `written` bytes (write-allocate).
double dram_traffic_bytes(double read, double written);
// The raw DRAM bandwidth behind a triad measurement (STREAM's count leaves out the write-allocate).
double dram_raw_gbs(double triad_gbs);
// max(compute, memory) + (1 - overlap) x min(compute, dram): `dram_s` is the DRAM part of `memory_s`.
double overlapped_seconds(double compute_s, double memory_s, double dram_s, double overlap);
// The fraction of DRAM time a kernel hides behind compute, from kiln machine's conv_pointwise_dram.
double dram_overlap(const MachinePeaks& m);

// What each cache level holds for residency (perf_residency.h): L1 and L2 their size, L3 the
// working set kiln machine measured it with (one core's share).
std::vector<int64_t> cache_capacities(const MachinePeaks& m);

// `model_weight_bytes`: all constant weights of the model (where they are read from when
// `where` is null). `where`: the node's residency from the memory plan (perf_residency.h).
OpTime cpu_kernel_time(const Node& n, double flops, double bytes, double model_weight_bytes, const Chip& chip,
                       const KernelResidency* where = nullptr);

}  // namespace kiln::analysis

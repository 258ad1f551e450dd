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
#pragma once
#include "kiln/analysis/chip.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/ir/graph.h"

namespace kiln::analysis {

// True when the chip carries the measurements this model needs.
bool has_kernel_rates(const Chip& chip);
// Which measured rate times node n: "conv_gemm", "gemm", "fma_peak", "reference_pool", ...
std::string cpu_kernel_class(const Node& n);
// `model_weight_bytes`: all constant weights of the model (where they are read from).
OpTime cpu_kernel_time(const Node& n, double flops, double bytes, double model_weight_bytes, const Chip& chip);

}  // namespace kiln::analysis

// Lowering: the optimized graph -> kernels with tactics, ready for the compiled runtime.
//
// Fusion groups are already single nodes after the passes (kiln.FusedConv, kiln.FusedMatMul,
// kiln.FusedElementwise, kiln.Attention, kiln.LayerNorm, ...), so lowering is per node:
//   1. canonicalise what the passes left plain (Conv -> FusedConv, MatMul/Gemm with a constant
//      weight -> FusedMatMul) so every convolution and weight GEMM takes the fast kernels;
//   2. pick a tactic per node (conv: depthwise / pointwise / gemm; GEMM: packed-B), saying why
//      the others do not apply;
//   3. pack constant weights for the chosen micro-kernel (the packed tensor replaces the weight
//      in the graph, so it is saved in and mmapped from the artifact like any weight) and mark
//      the node: `packed`=1, `tactic`, `isa`, and the logical weight shape (`w_shape`).
// Nodes with no fast kernel keep their op and run the reference kernel; the report lists them.
#pragma once
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::lower {

struct KernelChoice {
  std::string node;    // node name
  std::string op;      // op after lowering ("kiln::FusedConv")
  std::string tactic;  // "depthwise", "pointwise", "gemm", "packed-b", "generated", "reference", ...
  std::string why;     // why this tactic (and why not the others)
};

struct LowerReport {
  std::vector<KernelChoice> kernels;
  double packed_bytes = 0;       // bytes of packed weights written
  int reference_nodes = 0;       // nodes left to reference kernels
  int blocked_tensors = 0;       // activations kept channel-blocked between direct convolutions
  int wide_tensors = 0;          // of those, in 16-channel blocks (between direct convolutions alone)
  int nhwc_tensors = 0;          // INT8 activations kept pixel-major between QConvs (int8_nhwc_layout.cpp)
  int folded_means = 0;          // GlobalAveragePools folded into their depthwise convolution (channel_means.cpp)
  int padded_tensors = 0;        // blocked activations written into their reader's padded planes (padded_layout.cpp)
  int winograd_convs = 0;        // direct convolutions run as F(2x2, 3x3) Winograd tiles (winograd.cpp)
  int expand_depthwise = 0;      // expand 1x1 + strided depthwise pairs run band by band (expand_depthwise.cpp)
  int depthwise_project = 0;     // depthwise + 1x1 projection pairs run band by band (depthwise_project.cpp)
  int stem_depthwise_project = 0;  // of those, run band by band with the stem before them (stem_depthwise_project.cpp)
  std::string isa;               // micro-kernel ISA the weights were packed for
};

struct LowerOptions {
  bool pack_weights = true;      // false: choose tactics only (for reports)
};

// Rewrites `m` in place; the result verifies and infers like any graph.
LowerReport lower_model(Model& m, const LowerOptions& opt = {});

// False when the environment sets KILN_BLOCKED_LAYOUT=0: every activation then stays NCHW
// (for A/B measurements and bisecting; the compile cache keys on it).
bool blocked_layout_enabled();
// False when KILN_WIDE_BLOCKS=0 is set: blocked activations all keep 8-channel blocks (for A/B
// runs; the compile cache keys on it).
bool wide_blocks_enabled();
// False when KILN_WIDE_DEPTHWISE=0 is set: depthwise layers keep 8-channel blocks, and so do the
// tensors around them (for A/B runs; the compile cache keys on it).
bool wide_depthwise_enabled();
// KILN_INT8_NHWC=0 turns off pixel-major INT8 activations (lower/int8_nhwc_layout.cpp).
bool int8_nhwc_enabled();
// False when KILN_PADDED_PLANES=0 is set: padded direct convolutions then copy their input into
// padded planes themselves (padded_layout.cpp; for A/B runs).
bool padded_planes_enabled();
// False when KILN_FOLD_MEANS=0 is set: global averages stay pools (channel_means.cpp; for A/B runs).
bool fold_means_enabled();
// False when KILN_EXPAND_DEPTHWISE=0 is set: expand 1x1 + depthwise pairs stay two kernels
// (expand_depthwise.cpp; for A/B runs, the compile cache keys on it).
bool expand_depthwise_enabled();
// False when KILN_DEPTHWISE_PROJECT=0 is set: depthwise + projection pairs stay two kernels
// (depthwise_project.cpp; for A/B runs, the compile cache keys on it).
bool depthwise_project_enabled();
// False when KILN_STEM_DEPTHWISE_PROJECT=0 is set: an RGB stem and the depthwise + projection pair
// after it stay two kernels (stem_depthwise_project.cpp; for A/B runs, the compile cache keys on it).
bool stem_depthwise_project_enabled();

// Tactic names of a lowered node ("" when the node was not lowered).
std::string node_tactic(const Node& n);

}  // namespace kiln::lower

// Pieces of the lowering shared between its files.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/kernels/conv.h"

#include "kiln/ir/env.h"
#include "kiln/lower/lower.h"

namespace kiln::lower {

// The lowering's switches for A/B runs (KILN_BLOCKED_LAYOUT, KILN_INT8_NHWC, KILN_FOLD_MEANS,
// KILN_PADDED_PLANES, ...; lower.h) are read through kiln::env_switch_on (kiln/ir/env.h).

// What lower_conv adds to a direct convolution's note when it packs it for the 6 x 64 tile
// (assign_winograd takes it out again).
constexpr const char* kP64Note = "on the 6 x 64 tile (output channels a multiple of 64, rows of 24 or more); ";

// Plain Conv/MatMul/Gemm -> kiln.FusedConv/FusedMatMul; returns how many were rewritten.
// Nodes it cannot rewrite get a note saying why.
int canonicalize(Graph& g, std::vector<KernelChoice>& notes);

// 1-D f32 Conv / FusedConv with a constant weight -> a 2-D FusedConv of height 1 between two
// Reshapes (conv1d.cpp); returns how many. Run before canonicalize.
int conv1d_as_2d(Graph& g);

// Lone f32 elementwise ops -> one-op kiln.FusedElementwise (generated loops); returns how many.
int wrap_lone_elementwise(Graph& g);

// Picks the tactic of a kiln.FusedConv / kiln.FusedMatMul and (when `pack`) replaces its
// constant weight by the packed one. Returns the choice; adds the packed bytes to `bytes`.
// `direct_between_blocks`: a convolution the pointwise tactic would take runs direct instead
// (pointwise_between_blocks).
KernelChoice lower_conv(Graph& g, Node& n, bool pack, double& bytes, bool direct_between_blocks = false);
// The tactic lower_conv picks by cost (nullopt: none; `why` says why), and why not the others.
std::optional<kernels::ConvTactic> choose_conv_tactic(const Node& n, std::string& why, std::string& others);
KernelChoice lower_matmul(Graph& g, Node& n, bool pack, double& bytes);

// Marks the tensors that pass between packed direct convolutions only as channel-blocked
// (attributes x_blocked / y_blocked on the convolutions; blocked_layout.cpp); returns how many.
// Those between direct convolutions alone get 16-channel blocks on AVX-512 (x_block / y_block
// 16); `wide_tensors`, when given, receives how many.
int assign_blocked_layout(Graph& g, int* wide_tensors = nullptr);

// Marks the channel-blocked tensors that a direct convolution writes and one padded direct
// convolution alone reads as padded planes (attributes y_pad on the producer, x_padded on the
// reader; padded_layout.cpp), after assign_blocked_layout; returns how many.
int assign_padded_planes(Graph& g);

// Marks the INT8 tensors that pass between kiln.QConvs on the pixels path only as pixel-major
// (attributes x_nhwc / y_nhwc and tactic "nhwc" on the convolutions; int8_nhwc_layout.cpp);
// returns how many. KILN_INT8_NHWC=0 turns it off (for A/B runs; int8_nhwc_enabled in lower.h).
int assign_int8_nhwc_layout(Graph& g);

// Marks the depthwise convolutions that may write over their input (in_place_convs.cpp), after
// the layouts; the memory plan's report lists them ("in place of").
void mark_in_place_convs(Graph& g);

// Folds each GlobalAveragePool of a packed depthwise kiln.FusedConv's output into the
// convolution as its second output M (channel_means.cpp), after the in-place marks; drops the
// pools' entries from `kernels` and notes the fold on the convolutions'. Returns how many.
// KILN_FOLD_MEANS=0 turns it off (for A/B runs; fold_means_enabled in lower.h).
int fold_channel_means(Graph& g, std::vector<KernelChoice>& kernels);

// Fuses each expand 1x1 (direct) and the strided depthwise convolution that alone reads its output
// into one kiln.ExpandDepthwise (expand_depthwise.cpp), after Winograd: the depthwise node takes
// the expand in and keeps its entry of `kernels` (noted), the expand's goes; the depthwise
// convolutions left as they were get a note saying why. Returns how many pairs.
// KILN_EXPAND_DEPTHWISE=0 turns it off (for A/B runs; expand_depthwise_enabled in lower.h).
int fuse_expand_depthwise(Graph& g, std::vector<KernelChoice>& kernels);

// Fuses each depthwise convolution and the 1x1 projection (direct) that alone reads its output
// into one kiln.DepthwiseProject (depthwise_project.cpp), after the expand + depthwise pairs: the
// projection node takes the depthwise one in and keeps its entry of `kernels` (noted), the
// depthwise one's goes; projections after a depthwise layer left as they were get a note saying
// why. Returns how many pairs. KILN_DEPTHWISE_PROJECT=0 turns it off (for A/B runs;
// depthwise_project_enabled in lower.h).
int fuse_depthwise_project(Graph& g, std::vector<KernelChoice>& kernels);

// Fuses each RGB stem (direct, kernels::stem_depthwise_project_unsupported says which) and the
// kiln.DepthwiseProject that alone reads its output into one kiln.StemDepthwiseProject
// (stem_depthwise_project.cpp), after the depthwise + projection pairs: the pair's node takes the
// stem in and keeps its entry of `kernels` (noted), the stem's goes; pairs after a direct
// convolution left as they were get a note saying why. Returns how many.
// KILN_STEM_DEPTHWISE_PROJECT=0 turns it off (for A/B runs; stem_depthwise_project_enabled in
// lower.h).
int fuse_stem_depthwise_project(Graph& g, std::vector<KernelChoice>& kernels);

// Turns the direct convolutions that can into F(2x2, 3x3) Winograd tiles (winograd.cpp), after the
// layouts (they need 16-channel blocks on both sides): packs their weights again from the ONNX
// weights in `weights` (each FusedConv's before lower_conv packed it), sets attribute
// `winograd`, notes it on their entries of `kernels` and moves `bytes` by the size change.
// Returns how many. KILN_WINOGRAD=0 turns it off (kernels::conv_winograd_enabled).
int assign_winograd(Graph& g, const std::map<const Node*, const Value*>& weights, std::vector<KernelChoice>& kernels,
                    double& bytes);

// The 1x1 convolutions (pointwise by cost) to run direct because they sit between direct
// ones: their input comes from, and their output goes only to, convolutions that are direct
// or such 1x1s, so the activations around them stay channel-blocked. AVX-512 only (measured there).
std::set<const Node*> pointwise_between_blocks(const Graph& g);

}  // namespace kiln::lower

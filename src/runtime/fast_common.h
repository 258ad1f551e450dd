// Pieces the fast kernels of the kiln ops share: the epilogue a node asks for, and the tactic
// the lowering recorded.
#pragma once
#include "kiln/kernels/conv.h"
#include "kiln/kernels/epilogue.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {

// alpha, activation and its parameters from the node (bias and residual pointers are bound per run).
kernels::Epilogue epilogue_of(const Node& n);

// The `tactic` attribute of a lowered kiln.FusedConv; throws naming the node when unknown.
kernels::ConvTactic conv_tactic_of(const Node& n);

// A convolution node's averages output M (outputs[1]), when it has one: f32 [N, K, 1, 1] of the
// static output Y; throws naming the node otherwise.
void check_channel_means_output(const Node& n);

// The checks of a banded convolution node (kiln.ExpandDepthwise, kiln.DepthwiseProject,
// kiln.StemDepthwiseProject; `what` names it in the messages): the lowering's packed weights,
// packed for this CPU's micro-kernel, and a static f32 NCHW input; returns the input's dims.
std::vector<int64_t> banded_conv_input_dims(const Node& n, const char* what);

// A kiln.DepthwiseProject's (or a kiln.StemDepthwiseProject's) depthwise and projection
// epilogues, per-row biases, after checking that its residual (input `z_input`, if any) has the
// output's shape; throws naming the node otherwise.
void depthwise_project_epilogues(const Node& n, size_t z_input, kernels::Epilogue& depthwise,
                                 kernels::Epilogue& project);

// Product of dims [begin, end).
int64_t dims_product(const std::vector<int64_t>& d, size_t begin, size_t end);

}  // namespace kiln::runtime

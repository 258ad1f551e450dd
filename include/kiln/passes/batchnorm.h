// Folding an inference BatchNormalization into the op that feeds it: the arithmetic and the
// checks, shared by the fold-batchnorm pass and user passes (samples/passes/fuse_conv_bn_relu).
//
// BatchNormalization at inference is per channel c (axis 1): y = x * scale[c] + shift[c] with
// scale = gamma / sqrt(var + epsilon) and shift = beta - mean * scale (computed in double,
// stored as f32). An op that is linear in its output channels absorbs it: its weights are
// multiplied by scale per output channel and its bias becomes bias * scale + shift.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kiln/passes/rewrite.h"

namespace kiln::passes {

struct BatchNormAffine {
  std::vector<float> scale, shift;  // per channel
  size_t channels() const { return scale.size(); }
};

// Reads bn's parameters. Declines (with the reason) unless bn is in inference mode, its
// scale, bias, mean and var are constant f32 vectors of one length, and only its first output
// is used.
Decision batchnorm_affine(const Node& bn, BatchNormAffine& out);

// w with every slice along `axis` multiplied by scale[slice] (f32; scale.size() == dims[axis]).
Tensor scale_along_axis(const Tensor& w, size_t axis, const std::vector<float>& scale);
// bias * scale + shift, as an f32 [C] tensor; a null bias counts as zeros. The bias must
// hold C values or one (broadcast).
Tensor fold_bias(const Tensor* bias, const BatchNormAffine& a);

// Whether Conv `conv` can absorb a BatchNormalization with `channels` channels: its output
// feeds only that BN, its weight is a constant f32 with `channels` output channels and its
// bias is a constant or absent.
Decision conv_can_absorb(const Node& conv, size_t channels);
// Creates, before the rewriter's insertion point, a copy of Conv `conv` with the BN folded
// into its weight and bias, as op `domain::op` with `conv`'s attributes plus `extra_attrs`.
// Returns the new node; the caller replaces the BN's output with its output.
Node* create_conv_with_batchnorm(Rewriter& rw, const Node& conv, const BatchNormAffine& a, const std::string& op = "Conv",
                                 const std::string& domain = "", const std::map<std::string, Attribute>& extra_attrs = {});

}  // namespace kiln::passes

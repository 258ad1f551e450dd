// Convolutions that write their output over one of their inputs, marked `in_place` for the
// memory planner (plan::memory_effect), which then gives the output that input's bytes when the
// input dies there. After the layouts are assigned: the rules need both sides' layout.
// - Depthwise convolutions over their input X (kernels::conv_depthwise_in_place says when).
// - Direct convolutions over their residual Z (`in_place_input` 3: never over X, which every
//   output pixel reads). The direct kernel reads Z[i] only to write Y[i], right before it
//   (ConvTileOut, epilogue_blocks, transpose_epilogue), and keeps its partial sums in its own
//   slots until the last K block: so a ResNet block's last 1x1 adds into the bytes it reads,
//   one line per output line instead of the residual's line and the output's (read for
//   ownership, then written back). resnet50's 64 -> 256 1x1 at 56x56 with its residual:
//   0.89 of the time, 256 -> 64 0.97 (one thread, in-process pairs).
#include <optional>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {

namespace {

// The direct tactic's residual Z, when Y may take its bytes: same dims and dtype, and Z is not
// also the convolution's input X or its bias.
bool residual_in_place(const Node& n) {
  const Value* z = n.input(3);
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!z || !y || z->shape != y->shape || z->dtype != y->dtype || n.outputs.size() != 1) return false;
  return z != n.input(0) && z != n.input(1) && z != n.input(2);
}

}  // namespace

void mark_in_place_convs(Graph& g) {
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (n.domain != ops::kKilnDomain || n.op != "FusedConv" || !n.has_attr("packed")) continue;
    if (n.attr_s("tactic", "") == kernels::conv_tactic_name(kernels::ConvTactic::Direct)) {
      if (residual_in_place(n)) n.attrs["in_place"] = int64_t{1}, n.attrs["in_place_input"] = int64_t{3};
      continue;
    }
    if (n.input(3) || n.attr_s("tactic", "") != kernels::conv_tactic_name(kernels::ConvTactic::Depthwise))
      continue;
    const Value* x = n.input(0);
    const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
    if (!x || !y || y->shape != x->shape || y->dtype != x->dtype) continue;
    // A symbolic batch counts as 1: the rule reads one image's planes, and the planner gives
    // each batch's plan the same in-place output (the zoo's models all export the batch as N).
    const std::optional<std::vector<int64_t>> dims = ops::dims_batch_as_one(x->shape);
    if (!dims || dims->size() != 4) continue;
    kernels::Conv2dShape s = ops::fused_conv_shape(n, *dims, n.attr_ints("w_shape", {}));
    if (!kernels::conv_depthwise_in_place(s)) continue;
    n.attrs["in_place"] = int64_t{1};
  }
}

}  // namespace kiln::lower

// Depthwise convolutions that write their output over their input (kernels::
// conv_depthwise_in_place says when that is safe): marked `in_place` for the memory planner
// (plan::memory_effect), which then gives the output the input's bytes when the input dies
// there. After the layouts are assigned: the rule needs both sides' layout.
#include <optional>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {

void mark_in_place_convs(Graph& g) {
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (n.domain != ops::kKilnDomain || n.op != "FusedConv" || !n.has_attr("packed") || n.input(3) ||
        n.attr_s("tactic", "") != kernels::conv_tactic_name(kernels::ConvTactic::Depthwise))
      continue;
    const Value* x = n.input(0);
    const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
    if (!x || !y || y->shape != x->shape || y->dtype != x->dtype) continue;
    // A symbolic batch counts as 1: the rule reads one image's planes, and the planner gives
    // each batch's plan the same in-place output (the zoo's models all export the batch as N).
    const std::optional<std::vector<int64_t>> dims = ops::dims_batch_as_one(x->shape);
    if (!dims || dims->size() != 4) continue;
    kernels::Conv2dShape s = ops::fused_conv_shape(n, *dims, n.attr_ints("w_shape", {}));
    s.x_blocked = n.attr_i("x_blocked", 0) != 0, s.y_blocked = n.attr_i("y_blocked", 0) != 0;
    if (!kernels::conv_depthwise_in_place(s)) continue;
    n.attrs["in_place"] = int64_t{1};
  }
}

}  // namespace kiln::lower

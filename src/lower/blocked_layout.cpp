// Channel-blocked activations between direct convolutions (kernels/conv.h, Conv2dShape::
// x_blocked / y_blocked). The direct tactic computes pixel-major register tiles: writing NCHW
// costs a transpose of every output, and the next direct convolution transposes its input
// back into blocks of 8 channels for its padded copy. A tensor that only direct convolutions
// produce and read skips both: its producer writes [N][C/8][H][W][8] and its readers copy
// rows (padded) or read it in place (unpadded). In resnet18 at 2 threads those transposes were
// ~10% of the time.
//
// A tensor is blocked when
//   - a packed direct kiln.FusedConv produces it, with output channels a multiple of 8;
//   - it is not a graph output, and every reader is a packed direct kiln.FusedConv (group 1,
//     input channels a multiple of 8) reading it as X or as the residual Z;
//   - a convolution's residual and output agree: the epilogue reads Z in the output's layout,
//     so a residual that must stay NCHW keeps the output NCHW, and the other way round.
// The last rule is solved by dropping tensors until nothing changes (the largest set that
// keeps it). A tensor a subgraph reads (Graph::users looks inside bodies) is not blocked: no
// node in a body is a packed convolution.
#include <cstdlib>
#include <set>
#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

bool is_direct_conv(const Node& n) {
  return n.domain == ops::kKilnDomain && n.op == "FusedConv" && n.has_attr("packed") &&
         n.attr_s("tactic", "") == kernels::conv_tactic_name(kernels::ConvTactic::Direct) &&
         n.attr_i("group", 1) == 1 && n.attr_ints("w_shape", {}).size() == 4;
}

// Whether the residual Z (input 3) has the output's shape: a broadcast one cannot be blocked.
bool residual_matches(const Node& n) {
  const Value* z = n.input(3);
  return z && z->shape == n.outputs[0]->shape;
}

}  // namespace

bool blocked_layout_enabled() {
  const char* env = std::getenv("KILN_BLOCKED_LAYOUT");
  return !env || std::string(env) != "0";
}

int assign_blocked_layout(Graph& g) {
  if (!blocked_layout_enabled()) return 0;
  const std::set<const Value*> outputs(g.outputs.begin(), g.outputs.end());
  std::set<const Value*> blocked;
  for (const auto& up : g.nodes()) {
    const Node& p = *up;
    if (!is_direct_conv(p) || p.outputs.empty()) continue;
    const Value* v = p.outputs[0];
    if (p.attr_ints("w_shape", {})[0] % kernels::kConvBlock != 0 || outputs.count(v)) continue;
    if (p.input(3) && !residual_matches(p)) continue;
    const std::vector<Node*> users = g.users(v);
    bool ok = !users.empty();
    for (const Node* u : users) {
      ok = ok && is_direct_conv(*u) && u->attr_ints("w_shape", {})[1] % kernels::kConvBlock == 0;
      for (size_t i = 0; ok && i < u->inputs.size(); ++i)
        if (u->inputs[i] == v) ok = i == 0 || (i == 3 && residual_matches(*u));
    }
    if (ok) blocked.insert(v);
  }
  // A residual and its convolution's output: both blocked or neither.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& up : g.nodes()) {
      const Node& n = *up;
      if (!is_direct_conv(n) || !n.input(3)) continue;
      const bool z = blocked.count(n.input(3)) > 0, y = blocked.count(n.outputs[0]) > 0;
      if (z == y) continue;
      blocked.erase(z ? n.input(3) : n.outputs[0]);
      changed = true;
    }
  }
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (!is_direct_conv(n)) continue;
    if (blocked.count(n.input(0))) n.attrs["x_blocked"] = int64_t{1};
    if (blocked.count(n.outputs[0])) n.attrs["y_blocked"] = int64_t{1};
  }
  return static_cast<int>(blocked.size());
}

}  // namespace kiln::lower

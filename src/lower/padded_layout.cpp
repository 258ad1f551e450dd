// Padded planes between two direct convolutions (kernels::Conv2dShape::y_pad_*, x_padded). A
// direct convolution that pads reads a zero-padded copy of its input, which the kernel writes
// first: with the copy skipped, resnet50's 3x3 layers took 0.96 of the time at 56x56 (64
// channels), 0.90 for the 3x3/2 at 56x56 and 0.94 at 28x28, 0.98-0.995 at 14x14 and 7x7 (one
// Ice Lake core, in-process pairs). When that input has no other reader and comes from a direct
// convolution, the producer writes its blocks straight into the reader's padded planes (and
// their zero border) and the reader takes them in place: the copy, and its workspace, go.
//
// A tensor gets padded planes when
//   - it is channel-blocked (blocked_layout.cpp runs first), not a graph output, and its one
//     reader (Graph::users looks inside bodies) is a packed direct kiln.FusedConv that pads,
//     reading it as X only;
//   - its producer is a packed direct kiln.FusedConv writing it as its only output, with no
//     residual (the epilogue reads Z at the output's offsets, which the border moves);
//   - the direct tactic accepts both shapes so marked (kernels::conv_tactic_unsupported): the
//     producer's tiles must each lie on one output row, since a tile stores its pixels
//     consecutively (AVX-512's 14 pixels divide resnet's 56-, 28- and 14-wide rows; 7-wide rows
//     take 7-pixel tiles).
// The reader's padding becomes the producer's `y_pad` [top, left, bottom, right]; the reader
// gets `x_padded`. The memory planner sizes the tensor with its border
// (ops::padded_planes_bytes).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

bool packed_direct(const Node& n) {
  return n.domain == ops::kKilnDomain && n.op == "FusedConv" && n.has_attr("packed") &&
         n.attr_s("tactic", "") == kernels::conv_tactic_name(kernels::ConvTactic::Direct);
}

// The node's geometry for its input X (a symbolic batch counts as 1), or nullopt when X's
// channels or spatial dims are not static.
std::optional<kernels::Conv2dShape> geometry(const Node& n) {
  const Value* x = n.input(0);
  if (!x || !x->shape.rank_known || x->shape.rank() != 4) return std::nullopt;
  const std::optional<std::vector<int64_t>> dims = ops::dims_batch_as_one(x->shape);
  if (!dims) return std::nullopt;
  return ops::fused_conv_shape(n, *dims, n.attr_ints("w_shape", {}));
}

// The producer of reader r's X when the two may share padded planes, else null.
Node* padded_producer(const Graph& g, const Node& r, const std::set<const Value*>& graph_outputs) {
  if (!packed_direct(r) || r.attr_i("x_blocked", 0) == 0) return nullptr;
  const Value* x = r.input(0);
  Node* p = x->producer;
  if (!p || graph_outputs.count(x) || !packed_direct(*p) || p->attr_i("y_blocked", 0) == 0) return nullptr;
  if (p->outputs[0] != x || p->input(3) || (p->outputs.size() > 1 && p->outputs[1])) return nullptr;
  const std::vector<Node*> users = g.users(x);
  if (users.size() != 1 || users[0] != &r) return nullptr;
  for (size_t i = 1; i < r.inputs.size(); ++i)
    if (r.inputs[i] == x) return nullptr;
  return p;
}

}  // namespace

bool padded_planes_enabled() {
  return env_switch_on("KILN_PADDED_PLANES");
}

int assign_padded_planes(Graph& g) {
  if (!padded_planes_enabled()) return 0;
  const std::set<const Value*> graph_outputs(g.outputs.begin(), g.outputs.end());
  int count = 0;
  for (const auto& up : g.nodes()) {
    Node& r = *up;
    Node* p = padded_producer(g, r, graph_outputs);
    if (!p) continue;
    std::optional<kernels::Conv2dShape> rs = geometry(r), ps = geometry(*p);
    if (!rs || !ps || !rs->padded()) continue;
    ps->y_pad_top = rs->pad_top, ps->y_pad_left = rs->pad_left;
    ps->y_pad_bottom = rs->pad_bottom, ps->y_pad_right = rs->pad_right;
    rs->x_padded = true;
    if (!kernels::conv_tactic_unsupported(kernels::ConvTactic::Direct, *ps).empty() ||
        !kernels::conv_tactic_unsupported(kernels::ConvTactic::Direct, *rs).empty())
      continue;
    p->attrs["y_pad"] = std::vector<int64_t>{rs->pad_top, rs->pad_left, rs->pad_bottom, rs->pad_right};
    r.attrs["x_padded"] = int64_t{1};
    ++count;
  }
  return count;
}

}  // namespace kiln::lower

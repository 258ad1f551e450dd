// An expanding 1x1 convolution and the strided depthwise convolution that alone reads its output
// (mobilenet_v2's inverted residual blocks that halve the map) -> one kiln.ExpandDepthwise, which
// the runtime runs band by band of the depthwise output's rows (kernels::expand_depthwise): the
// expanded tensor (mobilenet_v2's first: 112x112 x 96 channels, 4.8 MB) never goes out to L3 or
// DRAM and back. After the layouts, the in-place marks, the folded averages and Winograd: the
// rule needs both convolutions' tactics and layouts. The depthwise node becomes the fused one
// (its name, output and place in the order stay; the expand's packed weight and bias join its
// inputs; its folded average M, when it has one, stays its second output) and the expand node
// goes, so the profile maps the fused kernel to both source nodes.
#include <optional>
#include <string>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

bool packed_conv(const Node& n, kernels::ConvTactic t) {
  return n.domain == ops::kKilnDomain && n.op == "FusedConv" && n.has_attr("packed") &&
         n.attr_s("tactic", "") == kernels::conv_tactic_name(t);
}

// The expand 1x1 whose output depthwise node d alone reads, when the pair may run fused, else
// nullptr with `why`.
Node* expand_before(const Graph& g, const Node& d, std::string& why) {
  if (d.outputs.empty() || d.input(3) || !d.input(2) || d.has_attr("in_place"))
    return why = "the depthwise convolution has a residual, no bias or runs in place", nullptr;
  const Value* m = d.input(0);
  Node* e = m ? m->producer : nullptr;
  if (!e || e->owner != &g || !packed_conv(*e, kernels::ConvTactic::Direct))
    return why = "its input does not come from a packed direct convolution", nullptr;
  if (e->outputs.size() != 1 || e->input(3) || !e->input(2) || e->has_attr("in_place") || e->has_attr("y_pad"))
    return why = "the convolution before it has a residual, a second output, no bias or a padded output", nullptr;
  if (g.users(m).size() != 1) return why = "another node reads the expanded tensor", nullptr;
  for (const Value* o : g.outputs)
    if (o == m) return why = "the expanded tensor is a graph output", nullptr;
  const Value* x = e->input(0);
  if (!x || x->dtype != DType::f32 || m->dtype != DType::f32) return why = "not f32", nullptr;
  // A symbolic batch counts as 1 (the rule reads one image; the kernel runs images in turn).
  const std::optional<std::vector<int64_t>> xd = ops::dims_batch_as_one(x->shape);
  const std::optional<std::vector<int64_t>> md = ops::dims_batch_as_one(m->shape);
  if (!xd || !md || xd->size() != 4 || md->size() != 4) return why = "the image size is not known", nullptr;
  const kernels::Conv2dShape se = ops::fused_conv_shape(*e, *xd, e->attr_ints("w_shape", {}));
  const kernels::Conv2dShape sd = ops::fused_conv_shape(d, *md, d.attr_ints("w_shape", {}));
  if (std::string bad = kernels::expand_depthwise_unsupported(se, sd); !bad.empty()) return why = bad, nullptr;
  if (!kernels::expand_depthwise_pays(se, sd))
    return why = "band by band pays only for strided depthwise layers on maps of 28 rows or more", nullptr;
  return e;
}

// d takes e in: op, inputs (X, W1, B1, W2, B2) and the expand's attributes, prefixed.
void fuse(Graph& g, Node& e, Node& d) {
  d.op = "ExpandDepthwise";
  d.inputs = {e.inputs[0], e.inputs[1], e.inputs[2], d.inputs[1], d.inputs[2]};
  d.attrs["tactic"] = std::string("expand-depthwise");
  d.attrs["expand_w_shape"] = e.attr_ints("w_shape", {});
  for (const char* a : {"activation", "act_alpha", "act_beta", "x_blocked", "x_block"})
    if (auto it = e.attrs.find(a); it != e.attrs.end()) d.attrs[std::string("expand_") + a] = it->second;
  g.remove_node(&e);  // and the expanded tensor with it
}

}  // namespace

bool expand_depthwise_enabled() { return env_switch_on("KILN_EXPAND_DEPTHWISE"); }

int fuse_expand_depthwise(Graph& g, std::vector<KernelChoice>& kernels) {
  if (!expand_depthwise_enabled()) return 0;
  std::vector<std::pair<Node*, Node*>> pairs;  // (expand, depthwise)
  for (const auto& up : g.nodes()) {
    Node& d = *up;
    if (!packed_conv(d, kernels::ConvTactic::Depthwise)) continue;
    std::string why;
    if (Node* e = expand_before(g, d, why)) {
      pairs.emplace_back(e, &d);
      continue;
    }
    for (KernelChoice& c : kernels)
      if (c.node == d.name) c.why += "; not run band by band with the convolution before it: " + why;
  }
  for (auto [e, d] : pairs) {
    const std::string expand_name = e->name;
    fuse(g, *e, *d);
    for (KernelChoice& c : kernels) {
      if (c.node != d->name) continue;
      c.op = "kiln::ExpandDepthwise";
      c.tactic = "expand-depthwise";
      c.why = "the expand 1x1 '" + expand_name + "' (direct) and this depthwise convolution run band by band of "
              "output rows, each band's expanded rows in the thread's L2 (kernels::expand_depthwise; one thread: "
              "one after the other); " + c.why;
    }
    std::erase_if(kernels, [&](const KernelChoice& c) { return c.node == expand_name; });
  }
  return static_cast<int>(pairs.size());
}

}  // namespace kiln::lower

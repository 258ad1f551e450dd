// A depthwise convolution and the 1x1 projection that alone reads its output (mobilenet_v2's
// inverted residual blocks) -> one kiln.DepthwiseProject, which the runtime runs band by band of
// output rows (kernels::depthwise_project): the depthwise output (56x56 x 144 channels: 1.8 MB)
// never goes out to L3 and back, and the two convolutions are one parallel region. After the
// layouts, the in-place marks, the folded averages and the expand + depthwise pairs (a depthwise
// convolution already joined to its expand stays as it is). The projection node becomes the
// fused one (its name, output, residual and place in the order stay; the depthwise input, packed
// weight and bias join its inputs, the depthwise node's attributes join its own with the prefix
// `depthwise_`) and the depthwise node goes, so the profile maps the fused kernel to both source
// nodes.
#include <optional>
#include <string>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/depthwise_project.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

bool packed_conv(const Node& n, kernels::ConvTactic t) {
  return n.domain == ops::kKilnDomain && n.op == "FusedConv" && n.has_attr("packed") &&
         n.attr_s("tactic", "") == kernels::conv_tactic_name(t);
}

// The depthwise convolution whose output projection p alone reads, when the pair may run fused,
// else nullptr with `why`.
Node* depthwise_before(const Graph& g, const Node& p, std::string& why) {
  if (p.outputs.size() != 1 || p.has_attr("y_pad"))
    return why = "the projection has a second output or writes padded planes", nullptr;
  const std::vector<int64_t> wp = p.attr_ints("w_shape", {});
  if (wp.size() != 4 || wp[2] != 1 || wp[3] != 1) return why = "not a 1x1 convolution", nullptr;
  const Value* m = p.input(0);
  Node* d = m ? m->producer : nullptr;
  if (!d || d->owner != &g || !packed_conv(*d, kernels::ConvTactic::Depthwise))
    return why = "its input does not come from a packed depthwise convolution", nullptr;
  if (d->outputs.size() != 1 || d->input(3))
    return why = "the depthwise convolution before it has a residual or a second output", nullptr;
  if (g.users(m).size() != 1) return why = "another node reads the depthwise output", nullptr;
  for (const Value* o : g.outputs)
    if (o == m) return why = "the depthwise output is a graph output", nullptr;
  const Value* x = d->input(0);
  if (!x || x->dtype != DType::f32 || m->dtype != DType::f32) return why = "not f32", nullptr;
  // A symbolic batch counts as 1 (the rule reads one image; the kernel runs images in turn).
  const std::optional<std::vector<int64_t>> xd = ops::dims_batch_as_one(x->shape);
  const std::optional<std::vector<int64_t>> md = ops::dims_batch_as_one(m->shape);
  if (!xd || !md || xd->size() != 4 || md->size() != 4) return why = "the image size is not known", nullptr;
  const kernels::Conv2dShape sd = ops::fused_conv_shape(*d, *xd, d->attr_ints("w_shape", {}));
  const kernels::Conv2dShape sp = ops::fused_conv_shape(p, *md, wp);
  if (std::string bad = kernels::depthwise_project_unsupported(sd, sp); !bad.empty()) return why = bad, nullptr;
  return d;
}

// p takes d in: op, inputs (X, Wd, Bd, Wp, Bp, Z) and d's attributes, prefixed.
void fuse(Graph& g, Node& d, Node& p) {
  p.op = "DepthwiseProject";
  std::vector<Value*> in = {d.inputs[0], d.inputs[1], d.inputs[2], p.inputs[1], p.inputs[2]};
  if (p.input(3)) in.push_back(p.inputs[3]);
  p.inputs = in;
  p.attrs["tactic"] = std::string("depthwise-project");
  for (const auto& [k, v] : d.attrs)
    if (k != "in_place" && k != "in_place_input") p.attrs["depthwise_" + k] = v;
  // Written over its residual (mark_in_place_convs: in_place_input 3) stays so, the residual now
  // input 5: each band reads the residual's rows as it writes them, as the projection alone did.
  // Only over Z: the bands read halo rows of X that other bands would have overwritten.
  if (p.attr_i("in_place_input", -1) == 3) p.attrs["in_place_input"] = int64_t{5};
  else p.attrs.erase("in_place"), p.attrs.erase("in_place_input");
  g.remove_node(&d);  // and the depthwise output with it
}

}  // namespace

bool depthwise_project_enabled() { return env_switch_on("KILN_DEPTHWISE_PROJECT"); }

int fuse_depthwise_project(Graph& g, std::vector<KernelChoice>& kernels) {
  if (!depthwise_project_enabled()) return 0;
  std::vector<std::pair<Node*, Node*>> pairs;  // (depthwise, projection)
  for (const auto& up : g.nodes()) {
    Node& p = *up;
    if (!packed_conv(p, kernels::ConvTactic::Direct)) continue;
    std::string why;
    if (Node* d = depthwise_before(g, p, why)) {
      pairs.emplace_back(d, &p);
      continue;
    }
    if (why == "its input does not come from a packed depthwise convolution" || why == "not a 1x1 convolution")
      continue;  // not a projection after a depthwise layer: nothing to say
    for (KernelChoice& c : kernels)
      if (c.node == p.name) c.why += "; not run band by band with the depthwise convolution before it: " + why;
  }
  for (auto [d, p] : pairs) {
    const std::string depthwise_name = d->name;
    fuse(g, *d, *p);
    for (KernelChoice& c : kernels) {
      if (c.node != p->name) continue;
      c.op = "kiln::DepthwiseProject";
      c.tactic = "depthwise-project";
      c.why = "the depthwise convolution '" + depthwise_name + "' and this 1x1 run band by band of output rows, "
              "each band's depthwise rows in the thread's cache (kernels::depthwise_project; one thread: one after "
              "the other); " + c.why;
    }
    std::erase_if(kernels, [&](const KernelChoice& c) { return c.node == depthwise_name; });
  }
  return static_cast<int>(pairs.size());
}

}  // namespace kiln::lower

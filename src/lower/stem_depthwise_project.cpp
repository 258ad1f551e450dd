// An RGB stem and the depthwise + 1x1 projection pair that alone reads its output
// (mobilenet_v2's features.0 and features.1) -> one kiln.StemDepthwiseProject, which the runtime
// runs band by band of output rows (kernels::stem_depthwise_project): the stem's output (112x112 x
// 32 channels: 1.6 MB) and the depthwise rows never go out to L3 and back, and the three
// convolutions are one parallel region. After the depthwise + projection pairs: the rule needs
// the pair's node and the stem's tactic and layout. The pair's node becomes the fused one (its
// name, output, residual and place in the order stay; the stem's input, packed weight and bias
// come first among its inputs, the stem's attributes join its own with the prefix `stem_`) and
// the stem node goes, so the profile maps the fused kernel to all three source nodes.
#include <optional>
#include <string>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/stem_depthwise_project.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// The reasons the rule gives no note for: the node before the pair is no stem at all (an expand
// 1x1, a 3x3 over many channels).
constexpr const char* kNotDirect = "its input does not come from a packed direct convolution";
constexpr const char* kNoStem = "the convolution before it reads more channels than a stem";

bool packed_direct_conv(const Node& n) {
  return n.domain == ops::kKilnDomain && n.op == "FusedConv" && n.has_attr("packed") &&
         n.attr_s("tactic", "") == kernels::conv_tactic_name(kernels::ConvTactic::Direct);
}

// The stem whose output pair q alone reads, when the three may run fused, else nullptr with `why`.
Node* stem_before(const Graph& g, const Node& q, std::string& why) {
  const Value* m = q.input(0);
  Node* s = m ? m->producer : nullptr;
  if (!s || s->owner != &g || !packed_direct_conv(*s))
    return why = kNotDirect, nullptr;
  if (const Value* in = s->input(0);
      in && in->shape.rank_known && in->shape.rank() == 4 && in->shape[1].is_static() &&
      in->shape[1].value > kernels::kStemMaxInputChannels)
    return why = kNoStem, nullptr;
  if (s->outputs.size() != 1 || s->input(3) || !s->input(2) || s->has_attr("in_place") || s->has_attr("y_pad"))
    return why = "the convolution before it has a residual, a second output, no bias or a padded output", nullptr;
  if (g.users(m).size() != 1) return why = "another node reads the convolution's output", nullptr;
  for (const Value* o : g.outputs)
    if (o == m) return why = "the convolution's output is a graph output", nullptr;
  const Value* x = s->input(0);
  if (!x || x->dtype != DType::f32 || m->dtype != DType::f32) return why = "not f32", nullptr;
  // A symbolic batch counts as 1 (the rule reads one image; the kernel runs images in turn).
  const std::optional<std::vector<int64_t>> xd = ops::dims_batch_as_one(x->shape);
  const std::optional<std::vector<int64_t>> md = ops::dims_batch_as_one(m->shape);
  if (!xd || !md || xd->size() != 4 || md->size() != 4) return why = "the image size is not known", nullptr;
  const kernels::Conv2dShape ss = ops::fused_conv_shape(*s, *xd, s->attr_ints("w_shape", {}));
  const ops::DepthwiseProjectShapes pair = ops::depthwise_project_shapes(q, *md);
  // kernels::Act mirrors ops::Activation value for value (runtime/fast_common.cpp checks it).
  if (std::string bad = kernels::stem_depthwise_project_unsupported(ss, static_cast<kernels::Act>(ops::activation_of(*s).act), pair.depthwise,
                                                                    pair.project);
      !bad.empty())
    return why = bad, nullptr;
  return s;
}

// q takes s in: op, inputs (X, Ws, Bs, Wd, Bd, Wp, Bp, Z) and s's attributes, prefixed.
void fuse(Graph& g, Node& s, Node& q) {
  q.op = "StemDepthwiseProject";
  std::vector<Value*> in = {s.inputs[0], s.inputs[1], s.inputs[2]};
  for (size_t i = 1; i < q.inputs.size(); ++i) in.push_back(q.inputs[i]);
  q.inputs = in;
  q.attrs["tactic"] = std::string("stem-depthwise-project");
  for (const auto& [k, v] : s.attrs)
    if (k != "in_place" && k != "in_place_input") q.attrs["stem_" + k] = v;
  // Written over its residual (input 5 of the pair), which is now input 7.
  if (q.attr_i("in_place_input", -1) == 5) q.attrs["in_place_input"] = int64_t{7};
  g.remove_node(&s);  // and the stem's output with it
}

}  // namespace

bool stem_depthwise_project_enabled() { return env_switch_on("KILN_STEM_DEPTHWISE_PROJECT"); }

int fuse_stem_depthwise_project(Graph& g, std::vector<KernelChoice>& kernels) {
  if (!stem_depthwise_project_enabled()) return 0;
  std::vector<std::pair<Node*, Node*>> triples;  // (stem, pair)
  for (const auto& up : g.nodes()) {
    Node& q = *up;
    if (q.domain != ops::kKilnDomain || q.op != "DepthwiseProject") continue;
    std::string why;
    if (Node* s = stem_before(g, q, why)) {
      triples.emplace_back(s, &q);
      continue;
    }
    if (why == kNotDirect || why == kNoStem) continue;  // no stem before it: nothing to say
    for (KernelChoice& c : kernels)
      if (c.node == q.name) c.why += "; not run band by band with the convolution before it: " + why;
  }
  for (auto [s, q] : triples) {
    const std::string stem_name = s->name;
    fuse(g, *s, *q);
    for (KernelChoice& c : kernels) {
      if (c.node != q->name) continue;
      c.op = "kiln::StemDepthwiseProject";
      c.tactic = "stem-depthwise-project";
      c.why = "the stem '" + stem_name + "' (direct, pixel vectors), the depthwise convolution and this 1x1 run "
              "band by band of output rows, each band's stem and depthwise rows in the thread's L2 "
              "(kernels::stem_depthwise_project; one thread: the stem, then the pair); " + c.why;
    }
    std::erase_if(kernels, [&](const KernelChoice& c) { return c.node == stem_name; });
  }
  return static_cast<int>(triples.size());
}

}  // namespace kiln::lower

// Direct convolutions that run as F(2x2, 3x3) Winograd tiles (kernels/conv_winograd.h): 3x3
// windows at stride 1 whose input and output the layout passes left in 16-channel blocks (so
// this runs after them), on images of 14x14 and up. Their weights are packed again, as the 16
// transformed matrices, from the ONNX weight lower_conv packed for the direct tiles.
//
// Measured in process on the Xeon 5th gen host (one thread, each layer against the direct
// tactic's 6 x 64 tiles on the same blocked activations): resnet's 64 -> 64 at 56x56 0.68-0.70
// of the time, 128 -> 128 at 28x28 0.62-0.64, 256 -> 256 at 14x14 0.58-0.66, 512 -> 512 at 7x7
// 0.96 (left direct: 4x4 tiles pad 7x7 to 8x8).
#include <map>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {

int assign_winograd(Graph& g, const std::map<const Node*, const Value*>& weights, std::vector<KernelChoice>& kernels,
                    double& bytes) {
  if (!kernels::conv_winograd_enabled()) return 0;
  std::map<std::string, KernelChoice*> choice;
  for (auto& c : kernels) choice[c.node] = &c;
  int count = 0;
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (n.domain != ops::kKilnDomain || n.op != "FusedConv" || n.attr_i("packed", 0) == 0 ||
        n.attr_s("tactic", "") != kernels::conv_tactic_name(kernels::ConvTactic::Direct))
      continue;
    const auto w = weights.find(&n);
    const Shape& xs = n.inputs[0]->shape;
    if (w == weights.end() || !w->second->initializer || xs.rank() != 4 || !xs[1].is_static() ||
        !xs[2].is_static() || !xs[3].is_static())
      continue;
    const Tensor& wt = *w->second->initializer;
    kernels::Conv2dShape s = ops::fused_conv_shape(
        n, {1, xs[1].value, xs[2].value, xs[3].value}, wt.dims());
    s.p64 = false;
    s.winograd = true;
    const std::string why_not = kernels::conv_winograd_unsupported(s);
    KernelChoice* c = choice.count(n.name) ? choice[n.name] : nullptr;
    if (!why_not.empty()) {
      if (c && s.R == 3 && s.S == 3 && s.stride_h == 1 && s.stride_w == 1 && s.group == 1)
        c->why += "; not as Winograd tiles: " + why_not;
      continue;
    }
    const size_t floats = kernels::conv_packed_weight_floats(kernels::ConvTactic::Direct, s);
    Tensor packed(DType::f32, {static_cast<int64_t>(floats)});
    kernels::conv_pack_weight(kernels::ConvTactic::Direct, s, wt.data<float>(), packed.data<float>());
    if (const Value* old = n.input(1); old && old->initializer)
      bytes -= static_cast<double>(old->initializer->numel()) * sizeof(float);
    bytes += static_cast<double>(floats) * sizeof(float);
    n.inputs[1] = g.add_initializer(g.unique_name(w->second->name + ".winograd"), std::move(packed));
    n.attrs.erase("p64");
    n.attrs["winograd"] = int64_t{1};
    if (c) {
      // Not the 6 x 64 tile any more (lower_conv noted it when it packed the direct panels).
      const std::string p64 = kP64Note;
      if (const size_t at = c->why.find(p64); at != std::string::npos) c->why.erase(at, p64.size());
      c->why = "as F(2x2, 3x3) Winograd tiles (16 products of the channels per 4x4 input tile: 2.25x fewer "
               "multiply-adds; 3x3 at stride 1 between channel-blocked activations, 14x14 and up); " + c->why;
    }
    ++count;
  }
  return count;
}

}  // namespace kiln::lower

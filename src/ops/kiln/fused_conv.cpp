// kiln.FusedConv(X, W, B?, Z?) = act(Conv(X, W) + B + Z): a Conv with its bias, residual Add
// and activation in one node (made by the fuse-epilogue pass). Shape inference, cost and the
// reference kernel are Conv's, followed by the epilogue.
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

void infer_fused_conv(InferContext& c) {
  Value standin;
  if (std::optional<Node> logical = logical_weight_node(c.node(), standin)) {
    InferContext lc(*logical, c.opset());
    onnx_op("Conv").infer(lc);
  } else {
    onnx_op("Conv").infer(c);  // reads X, W, B and the Conv attributes, sets Y
  }
  if (c.has_output(0)) check_broadcasts_into(c, c.node().outputs[0]->shape, 3, "residual Z");
  activation_of(c.node());    // an unknown activation name fails here, not at run time
}

Cost cost_fused_conv(const CostContext& packed_or_not) {
  CostContext c = logical_weight_cost(packed_or_not);
  Cost k = onnx_op("Conv").cost(c);  // conv + bias flops; io bytes count Z once and no intermediate
  double outs = static_cast<double>(numel_of(c.out_dims[0]));
  if (c.node.input(3)) k.flops += outs;
  k.flops += outs * activation_flops(activation_of(c.node).act);
  return k;
}

void fused_conv_kernel(KernelContext& c) {
  refuse_packed(c);
  DType dt = c.input(0).dtype();
  Tensor x = f32_input(c, 0), w = f32_input(c, 1);
  std::optional<Tensor> b;
  if (c.has_input(2)) b = f32_input(c, 2);
  Tensor y = run_onnx_kernel(c, "Conv", {&x, &w, b ? &*b : nullptr});
  if (c.has_input(3)) add_into(c, y, f32_input(c, 3), "residual Z");
  activate(y, activation_of(c.node()));
  c.set_output(0, from_f32(y, dt));
}

std::vector<AttrSpec> fused_conv_attrs() {
  std::vector<AttrSpec> a = def_Conv().attrs;  // not the table: it is being built when this runs
  for (const AttrSpec& s : activation_attrs()) a.push_back(s);
  for (const AttrSpec& s : lowering_attrs()) a.push_back(s);
  return a;
}

}  // namespace

OpDef def_FusedConv() {
  return {.name = "FusedConv",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 2,
          .max_inputs = 4,
          .attrs = fused_conv_attrs(),
          .infer = infer_fused_conv,
          .cost = cost_fused_conv,
          .kernel = fused_conv_kernel,
          .doc = "act(Conv(X, W) + B + Z): Conv with bias, residual Add and activation fused"};
}

}  // namespace kiln::ops

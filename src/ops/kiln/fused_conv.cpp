// kiln.FusedConv(X, W, B?, Z?) -> Y, M? with Y = act(Conv(X, W) + B + Z): a Conv with its bias,
// residual Add and activation in one node (made by the fuse-epilogue pass). Shape inference,
// cost and the reference kernel are Conv's, followed by the epilogue. The optional M is
// GlobalAveragePool(Y), [N, K, 1, 1], which the lowering folds in (lower/channel_means.cpp) so
// that the depthwise kernel averages its output while it still has it in cache.
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
  infer_channel_means_output(c);
}

Cost cost_fused_conv(const CostContext& packed_or_not) {
  CostContext c = logical_weight_cost(packed_or_not);
  Cost k = onnx_op("Conv").cost(c);  // conv + bias flops; io bytes count Z once and no intermediate
  double outs = static_cast<double>(numel_of(c.out_dims[0]));
  if (c.node.input(3)) k.flops += outs;
  k.flops += outs * activation_flops(activation_of(c.node).act);
  if (c.out_dims.size() > 1 && !c.out_dims[1].empty()) k.flops += outs;  // M: one add an element (io bytes count it)
  // Winograd tiles (kernels/conv_winograd.h) multiply 16 transformed values per 4x4 input tile and
  // channel pair where the window takes 36 products for its 2x2 outputs: count the work the
  // kernel does (the 16 GEMMs, the transforms' 32 adds per input and 24 per output channel and
  // tile), so that rooflines and predictions see its real rate, not 2.25x the direct one's.
  const std::vector<int64_t>& y = c.out_dims[0];
  if (c.node.attr_i("winograd", 0) != 0 && y.size() == 4 && c.in_dims.size() > 1 && c.in_dims[1].size() == 4) {
    const double conv = 2.0 * y[0] * y[1] * c.in_dims[1][1] * y[2] * y[3] * 9;  // Conv's multiply-adds x 2
    const double tiles = static_cast<double>(y[0]) * ((y[2] + 1) / 2) * ((y[3] + 1) / 2);
    const double C = static_cast<double>(c.in_dims[1][1]), K = static_cast<double>(y[1]);
    k.flops += 2.0 * 16 * C * K * tiles + (32 * C + 24 * K) * tiles - conv;
  }
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
  if (c.has_output(1)) c.set_output(1, from_f32(run_onnx_kernel(c, "GlobalAveragePool", {&y}), dt));
  c.set_output(0, from_f32(y, dt));
}

std::vector<AttrSpec> fused_conv_attrs() {
  std::vector<AttrSpec> a = def_Conv().attrs;  // not the table: it is being built when this runs
  for (const AttrSpec& s : activation_attrs()) a.push_back(s);
  for (const AttrSpec& s : lowering_attrs()) a.push_back(s);
  // Padded blocked planes between direct convolutions (lower/padded_layout.cpp): the input is
  // stored in this convolution's padded planes; the output inside planes with a border of
  // y_pad = [top, left, bottom, right] pixels.
  a.push_back({"x_padded", AttrKind::Int});
  a.push_back({"y_pad", AttrKind::Ints});
  // Channels per block of a blocked input / output when not kConvBlock (kernels::Conv2dShape::
  // x_block, y_block: 16 between direct convolutions on AVX-512, lower/blocked_layout.cpp).
  a.push_back({"x_block", AttrKind::Int});
  a.push_back({"y_block", AttrKind::Int});
  // 1: the direct tactic's weights are packed for AVX-512's 6 x 64 tile (kernels::Conv2dShape::p64,
  // lower/pack_weights.cpp).
  a.push_back({"p64", AttrKind::Int});
  // 1: the direct tactic runs F(2x2, 3x3) Winograd tiles, its weights packed as 16 transformed
  // matrices (kernels::Conv2dShape::winograd, lower/winograd.cpp).
  a.push_back({"winograd", AttrKind::Int});
  return a;
}

}  // namespace

OpDef def_FusedConv() {
  return {.name = "FusedConv",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 2,
          .max_inputs = 4,
          .max_outputs = 2,
          .attrs = fused_conv_attrs(),
          .infer = infer_fused_conv,
          .cost = cost_fused_conv,
          .kernel = fused_conv_kernel,
          .doc = "act(Conv(X, W) + B + Z): Conv with bias, residual Add and activation fused; optional 2nd output: its "
                 "GlobalAveragePool"};
}

}  // namespace kiln::ops

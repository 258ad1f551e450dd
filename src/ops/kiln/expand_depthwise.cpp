// kiln.ExpandDepthwise(X, W1, B1, W2, B2) -> Y, M?: an expanding 1x1 convolution and the depthwise
// convolution that alone reads its output (mobilenet_v2's inverted residual blocks), as one node:
//   M = act1(Conv(X, W1) + B1)   (1x1, stride 1, no padding, one group: W1 [E, C, 1, 1])
//   Y = act2(Conv(M, W2) + B2)   (group E: W2 [E, 1, R, S]; the node's Conv attributes)
// The lowering makes it from two packed kiln.FusedConv (lower/expand_depthwise.cpp) so that the
// kernel runs them band by band, M never leaving the thread's L2 (kernels::expand_depthwise).
// act2 and the Conv attributes are the node's own, as on FusedConv; the expand's are prefixed
// `expand_`. The optional M is GlobalAveragePool(Y), [N, E, 1, 1], as FusedConv's (a folded
// squeeze-excitation average, lower/channel_means.cpp). Shape inference, cost and the reference
// kernel are the two Convs' (and the pool's).
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

// W1's logical dims: `expand_w_shape` once packed, else its own.
std::optional<std::vector<int64_t>> expand_weight_dims(const Node& n) {
  if (n.has_attr("packed")) return n.attr_ints("expand_w_shape", {});
  const Value* w = n.input(1);
  if (!w || !w->shape.is_static()) return std::nullopt;
  return w->shape.static_dims();
}

void infer_expand_depthwise(InferContext& c) {
  const Node& n = c.node();
  const Value* x = n.input(0);
  KILN_CHECK(x && x->shape.rank_known && x->shape.rank() == 4, n.describe(), ": X must be 4-D [N, C, H, W], got ",
             x ? x->shape.str() : std::string("nothing"));
  const std::optional<std::vector<int64_t>> w1 = expand_weight_dims(n);
  KILN_CHECK(w1, n.describe(), ": the expand weight W1 needs a static shape");
  KILN_CHECK(w1->size() == 4 && (*w1)[2] == 1 && (*w1)[3] == 1, n.describe(), ": W1 must be [E, C, 1, 1], got ",
             dims_str(*w1));
  KILN_CHECK(!x->shape[1].is_static() || x->shape[1].value == (*w1)[1], n.describe(), ": X has ",
             x->shape[1].str(), " channels, W1 takes ", (*w1)[1]);
  // The depthwise Conv over M = [N, E, H, W], as a Conv node of its own.
  Value m, w2;
  m.name = n.name + ":expanded", m.dtype = x->dtype;
  m.shape = Shape({x->shape[0], Dim((*w1)[0]), x->shape[2], x->shape[3]});
  Node conv = n;
  conv.inputs = {&m, n.inputs[3], n.inputs[4]};
  if (std::optional<Node> logical = logical_weight_node(conv, w2)) conv = *logical;
  conv.outputs.resize(1);  // Y; M below
  InferContext lc(conv, c.opset());
  onnx_op("Conv").infer(lc);
  infer_channel_means_output(c);
  activation_of(n);  // an unknown activation name fails here, not at run time
  expand_activation_of(n);
}

Cost cost_expand_depthwise(const CostContext& c) {
  Cost k;
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  const std::optional<std::vector<int64_t>> w1 = expand_weight_dims(c.node);
  if (!w1 || w1->size() != 4 || c.in_dims.empty() || c.in_dims[0].size() != 4 || c.out_dims.empty() ||
      c.out_dims[0].size() != 4)
    return k;
  const std::vector<int64_t>& x = c.in_dims[0];
  const std::vector<int64_t>& y = c.out_dims[0];
  // W2's logical dims [E, 1, R, S].
  const std::vector<int64_t> w2 = c.node.has_attr("packed") ? c.node.attr_ints("w_shape", {})
                                  : c.in_dims.size() > 3 ? c.in_dims[3] : std::vector<int64_t>{};
  const double mid = static_cast<double>(x[0]) * (*w1)[0] * x[2] * x[3];
  const double outs = static_cast<double>(y[0]) * y[1] * y[2] * y[3];
  const double taps = w2.size() == 4 ? static_cast<double>(w2[2] * w2[3]) : 1.0;
  // Both Convs' multiply-adds, bias adds and activations (M is never stored: no bytes for it).
  k.flops = mid * (2.0 * x[1] + 1 + activation_flops(expand_activation_of(c.node).act)) +
            outs * (2.0 * taps + 1 + activation_flops(activation_of(c.node).act));
  if (c.out_dims.size() > 1 && !c.out_dims[1].empty()) k.flops += outs;  // M: one add an element
  return k;
}

void expand_depthwise_kernel(KernelContext& c) {
  refuse_packed(c);
  const DType dt = c.input(0).dtype();
  Tensor x = f32_input(c, 0), w1 = f32_input(c, 1), b1 = f32_input(c, 2), w2 = f32_input(c, 3), b2 = f32_input(c, 4);
  Node expand;  // a plain 1x1 Conv
  Value expanded;
  expand.op = "Conv", expand.name = c.node().name + ":expand";
  expand.outputs = {&expanded};
  KernelContext ec(expand, c.opset(), {&x, &w1, &b1}, nullptr, c.threads());
  onnx_op("Conv").kernel(ec);
  Tensor m = std::move(ec.outputs()[0]);
  activate(m, expand_activation_of(c.node()));
  Tensor y = run_onnx_kernel(c, "Conv", {&m, &w2, &b2});
  activate(y, activation_of(c.node()));
  if (c.has_output(1)) c.set_output(1, from_f32(run_onnx_kernel(c, "GlobalAveragePool", {&y}), dt));
  c.set_output(0, from_f32(y, dt));
}

std::vector<AttrSpec> expand_depthwise_attrs() {
  std::vector<AttrSpec> a = def_Conv().attrs;  // the depthwise Conv's
  for (const AttrSpec& s : activation_attrs()) a.push_back(s);
  for (const AttrSpec& s : lowering_attrs()) a.push_back(s);  // w_shape: W2's
  a.push_back({"expand_activation", AttrKind::String});  // activation_attrs(), prefixed
  a.push_back({"expand_act_alpha", AttrKind::Float});
  a.push_back({"expand_act_beta", AttrKind::Float});
  // The expand's packed weight's logical shape, and its input's layout (kernels::Conv2dShape's
  // x_blocked / x_block; M is in 8-channel blocks, the depthwise output as y_blocked says).
  a.push_back({"expand_w_shape", AttrKind::Ints});
  a.push_back({"expand_x_blocked", AttrKind::Int});
  a.push_back({"expand_x_block", AttrKind::Int});
  return a;
}

}  // namespace

ActivationSpec expand_activation_of(const Node& n) {
  Node probe;  // the expand's attributes under their plain names
  probe.op = n.op;
  for (const char* a : {"activation", "act_alpha", "act_beta"})
    if (auto it = n.attrs.find(std::string("expand_") + a); it != n.attrs.end()) probe.attrs[a] = it->second;
  return activation_of(probe);
}

ExpandDepthwiseShapes expand_depthwise_shapes(const Node& n, const std::vector<int64_t>& x) {
  const std::vector<int64_t> w1 = n.attr_ints("expand_w_shape", {});
  KILN_CHECK(x.size() == 4 && w1.size() == 4 && w1[2] == 1 && w1[3] == 1, n.describe(),
             ": needs a 4-D input and a packed expand weight of logical shape [E, C, 1, 1] (expand_w_shape), got ",
             dims_str(x), " and ", dims_str(w1));
  ExpandDepthwiseShapes s;
  kernels::Conv2dShape& e = s.expand;
  e.N = x[0], e.C = x[1], e.H = x[2], e.W = x[3], e.K = w1[0];
  e.x_blocked = n.attr_i("expand_x_blocked", 0) != 0;
  e.x_block = n.attr_i("expand_x_block", kernels::kConvBlock);
  s.depthwise = fused_conv_shape(n, {x[0], w1[0], x[2], x[3]}, n.attr_ints("w_shape", {}));
  e.y_blocked = s.depthwise.x_blocked, e.y_block = s.depthwise.x_block;
  return s;
}

OpDef def_ExpandDepthwise() {
  return {.name = "ExpandDepthwise",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 5,
          .max_inputs = 5,
          .max_outputs = 2,
          .attrs = expand_depthwise_attrs(),
          .infer = infer_expand_depthwise,
          .cost = cost_expand_depthwise,
          .kernel = expand_depthwise_kernel,
          .doc = "act2(DepthwiseConv(act1(Conv1x1(X, W1) + B1), W2) + B2): an expanding 1x1 convolution and the "
                 "depthwise one after it, run band by band; optional 2nd output: its GlobalAveragePool"};
}

}  // namespace kiln::ops

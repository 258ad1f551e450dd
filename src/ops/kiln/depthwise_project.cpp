// kiln.DepthwiseProject(X, Wd, Bd, Wp, Bp, Z?) -> Y: a depthwise convolution and the 1x1
// projection that alone reads its output (mobilenet_v2's inverted residual blocks), as one node:
//   M = actd(Conv(X, Wd) + Bd)        (group C: Wd [C, 1, R, S]; the `depthwise_` attributes)
//   Y = act(Conv(M, Wp) + Bp + Z)     (1x1: Wp [K, C, 1, 1]; the node's own attributes)
// The lowering makes it from two packed kiln.FusedConv (lower/depthwise_project.cpp) so that the
// kernel runs them band by band of output rows, M never leaving the thread's cache
// (kernels::depthwise_project). The node is the projection's, with its attributes; the depthwise
// convolution's are kept with the prefix `depthwise_`. Shape inference, cost and the reference
// kernel are the two FusedConvs'.
#include "kiln_common.h"

namespace kiln::ops {

OpDef def_FusedConv();

namespace {

using namespace kiln_domain;

constexpr std::string_view kPrefix = "depthwise_";

// The projection as a FusedConv node of its own over `m`: the node's attributes and inputs
// Wp, Bp, Z, its output Y.
Node projection_node(const Node& n, Value* m) {
  Node p;
  p.op = "FusedConv", p.domain = kKilnDomain, p.name = n.name;
  for (const auto& [k, v] : n.attrs)
    if (k.rfind(kPrefix, 0) != 0) p.attrs[k] = v;
  p.inputs = {m, n.input(3) ? n.inputs[3] : nullptr, n.input(4) ? n.inputs[4] : nullptr,
              n.input(5) ? n.inputs[5] : nullptr};
  while (!p.inputs.empty() && !p.inputs.back()) p.inputs.pop_back();
  p.outputs = n.outputs;
  return p;
}

// The depthwise convolution's dims [N, C, OH, OW] for input dims x (its logical weight dims from
// `depthwise_w_shape` once packed, else Wd's).
std::vector<int64_t> depthwise_output_dims(const Node& n, const std::vector<int64_t>& x,
                                           const std::vector<int64_t>& wd) {
  const kernels::Conv2dShape s = fused_conv_shape(depthwise_half(n), x, wd);
  return {s.N, s.K, s.out_h(), s.out_w()};
}

std::vector<int64_t> depthwise_weight_dims(const Node& n, const std::vector<int64_t>& stored) {
  return n.has_attr("packed") ? n.attr_ints("depthwise_w_shape", {}) : stored;
}

void infer_depthwise_project(InferContext& c) {
  const Node& n = c.node();
  KILN_CHECK(n.input(0) && n.input(1) && n.input(3), n.describe(), ": needs X, Wd and Wp");
  // M as the depthwise FusedConv's output.
  Value m;
  m.name = n.name + ":depthwise";
  Node d = depthwise_half(n);
  d.inputs = {n.inputs[0], n.inputs[1], n.input(2) ? n.inputs[2] : nullptr};
  while (!d.inputs.empty() && !d.inputs.back()) d.inputs.pop_back();
  d.outputs = {&m};
  InferContext dc(d, c.opset());
  def_FusedConv().infer(dc);
  // Y as the projection's, over M.
  Node p = projection_node(n, &m);
  InferContext pc(p, c.opset());
  def_FusedConv().infer(pc);
}

Cost cost_depthwise_project(const CostContext& c) {
  Cost k;
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  if (c.in_dims.size() < 4 || c.in_dims[0].size() != 4 || c.out_dims.empty() || c.out_dims[0].size() != 4) return k;
  const std::vector<int64_t> wd = depthwise_weight_dims(c.node, c.in_dims[1]);
  if (wd.size() != 4) return k;
  const std::vector<int64_t> md = depthwise_output_dims(c.node, c.in_dims[0], wd);
  Node d = depthwise_half(c.node);
  d.inputs = {c.node.inputs[0], c.node.inputs[1], c.node.input(2) ? c.node.inputs[2] : nullptr};  // Conv's cost reads B's presence
  CostContext dc{d, {c.in_dims[0], wd, c.in_dims[2]}, {c.in_dtypes[0], c.in_dtypes[1], c.in_dtypes[2]}, {md},
                 {c.out_dtypes[0]}};
  Value m;
  Node p = projection_node(c.node, &m);
  CostContext pc{p, {md}, {c.out_dtypes[0]}, c.out_dims, c.out_dtypes};
  for (size_t i = 3; i < c.in_dims.size(); ++i) pc.in_dims.push_back(c.in_dims[i]), pc.in_dtypes.push_back(c.in_dtypes[i]);
  // Both convolutions' work; M is never stored, so no bytes for it.
  k.flops = def_FusedConv().cost(dc).flops + def_FusedConv().cost(pc).flops;
  return k;
}

void depthwise_project_kernel(KernelContext& c) {
  refuse_packed(c);
  Value m;
  Node d = depthwise_half(c.node());
  d.inputs = {c.node().inputs[0], c.node().inputs[1], c.has_input(2) ? c.node().inputs[2] : nullptr};
  d.outputs = {&m};
  KernelContext dc(d, c.opset(), {&c.input(0), &c.input(1), c.has_input(2) ? &c.input(2) : nullptr}, nullptr,
                   c.threads());
  def_FusedConv().kernel(dc);
  const Tensor mid = std::move(dc.outputs()[0]);
  Node p = projection_node(c.node(), &m);
  std::vector<const Tensor*> in = {&mid, &c.input(3)};
  for (size_t i = 4; i < 6; ++i) in.push_back(c.has_input(i) ? &c.input(i) : nullptr);
  KernelContext pc(p, c.opset(), in, nullptr, c.threads());
  def_FusedConv().kernel(pc);
  c.set_output(0, std::move(pc.outputs()[0]));
}

std::vector<AttrSpec> depthwise_project_attrs() {
  std::vector<AttrSpec> a = def_FusedConv().attrs;  // the projection's
  for (const AttrSpec& s : prefixed_attrs(kPrefix, def_FusedConv().attrs)) a.push_back(s);  // the depthwise one's
  return a;
}

}  // namespace

Node depthwise_half(const Node& n) { return kiln_domain::prefixed_part(n, kPrefix, "FusedConv", "depthwise"); }

DepthwiseProjectShapes depthwise_project_shapes(const Node& n, const std::vector<int64_t>& x) {
  const std::vector<int64_t> wd = n.attr_ints("depthwise_w_shape", {}), wp = n.attr_ints("w_shape", {});
  KILN_CHECK(x.size() == 4 && wd.size() == 4 && wp.size() == 4 && wp[2] == 1 && wp[3] == 1, n.describe(),
             ": needs a 4-D input and packed weights of logical shapes [C, 1, R, S] (depthwise_w_shape) and "
             "[K, C, 1, 1] (w_shape), got ",
             dims_str(x), ", ", dims_str(wd), " and ", dims_str(wp));
  DepthwiseProjectShapes s;
  s.depthwise = fused_conv_shape(depthwise_half(n), x, wd);
  s.project = fused_conv_shape(n, {x[0], s.depthwise.K, s.depthwise.out_h(), s.depthwise.out_w()}, wp);
  return s;
}

OpDef def_DepthwiseProject() {
  return {.name = "DepthwiseProject",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 4,
          .max_inputs = 6,
          .max_outputs = 1,
          .attrs = depthwise_project_attrs(),
          .infer = infer_depthwise_project,
          .cost = cost_depthwise_project,
          .kernel = depthwise_project_kernel,
          .doc = "act(Conv1x1(actd(DepthwiseConv(X, Wd) + Bd), Wp) + Bp + Z): a depthwise convolution and the 1x1 "
                 "projection after it, run band by band"};
}

}  // namespace kiln::ops

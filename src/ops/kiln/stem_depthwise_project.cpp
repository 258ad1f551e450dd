// kiln.StemDepthwiseProject(X, Ws, Bs, Wd, Bd, Wp, Bp, Z?) -> Y: an RGB stem and the depthwise +
// 1x1 projection pair that alone reads its output (mobilenet_v2's features.0 and features.1), as
// one node:
//   S = acts(Conv(X, Ws) + Bs)        (the stem: the `stem_` attributes)
//   Y = DepthwiseProject(S, Wd, Bd, Wp, Bp, Z)   (the node's other attributes, as that node's)
// The lowering makes it from a packed kiln.FusedConv and a kiln.DepthwiseProject
// (lower/stem_depthwise_project.cpp) so that the kernel runs all three convolutions band by band,
// S never leaving the thread's L2 (kernels::stem_depthwise_project). The node is the pair's, with
// its attributes; the stem's are kept with the prefix `stem_`. Shape inference, cost and the
// reference kernel are the FusedConv's and then the DepthwiseProject's.
#include "kiln_common.h"

namespace kiln::ops {

OpDef def_FusedConv();
OpDef def_DepthwiseProject();

namespace {

using namespace kiln_domain;

constexpr std::string_view kPrefix = "stem_";

// The pair as a kiln.DepthwiseProject node of its own over `s`: the node's unprefixed attributes
// and inputs Wd, Bd, Wp, Bp, Z, its output Y.
Node pair_node(const Node& n, Value* s) {
  Node p;
  p.op = "DepthwiseProject", p.domain = kKilnDomain, p.name = n.name;
  for (const auto& [k, v] : n.attrs)
    if (k.rfind(kPrefix, 0) != 0) p.attrs[k] = v;
  p.inputs = {s};
  for (size_t i = 3; i < n.inputs.size(); ++i) p.inputs.push_back(n.inputs[i]);
  while (!p.inputs.empty() && !p.inputs.back()) p.inputs.pop_back();
  p.outputs = n.outputs;
  return p;
}

// The stem node with inputs X, Ws, Bs and output s.
Node stem_node(const Node& n, Value* s) {
  Node st = stem_half(n);
  st.inputs = {n.inputs[0], n.inputs[1], n.input(2) ? n.inputs[2] : nullptr};
  while (!st.inputs.empty() && !st.inputs.back()) st.inputs.pop_back();
  st.outputs = {s};
  return st;
}

void infer_stem_depthwise_project(InferContext& c) {
  const Node& n = c.node();
  KILN_CHECK(n.input(0) && n.input(1) && n.input(3) && n.input(5), n.describe(), ": needs X, Ws, Wd and Wp");
  Value s;
  s.name = n.name + ":stem";
  Node st = stem_node(n, &s);
  InferContext sc(st, c.opset());
  def_FusedConv().infer(sc);
  Node p = pair_node(n, &s);
  InferContext pc(p, c.opset());
  def_DepthwiseProject().infer(pc);
}

Cost cost_stem_depthwise_project(const CostContext& c) {
  Cost k;
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  if (c.in_dims.size() < 6 || c.in_dims[0].size() != 4 || c.out_dims.empty() || c.out_dims[0].size() != 4) return k;
  const std::vector<int64_t> ws = c.node.has_attr("packed") ? c.node.attr_ints("stem_w_shape", {}) : c.in_dims[1];
  if (ws.size() != 4) return k;
  const Node sh = stem_half(c.node);
  const kernels::Conv2dShape g = fused_conv_shape(sh, c.in_dims[0], ws);
  const std::vector<int64_t> sd = {g.N, g.K, g.out_h(), g.out_w()};
  Value v;
  Node st = stem_node(c.node, &v);
  CostContext sc{st, {c.in_dims[0], ws, c.in_dims[2]}, {c.in_dtypes[0], c.in_dtypes[1], c.in_dtypes[2]}, {sd},
                 {c.out_dtypes[0]}};
  Node p = pair_node(c.node, &v);
  CostContext pc{p, {sd}, {c.out_dtypes[0]}, c.out_dims, c.out_dtypes};
  for (size_t i = 3; i < c.in_dims.size(); ++i) pc.in_dims.push_back(c.in_dims[i]), pc.in_dtypes.push_back(c.in_dtypes[i]);
  // The three convolutions' work; S and the depthwise rows are never stored: no bytes for them.
  k.flops = def_FusedConv().cost(sc).flops + def_DepthwiseProject().cost(pc).flops;
  return k;
}

void stem_depthwise_project_kernel(KernelContext& c) {
  refuse_packed(c);
  Value s;
  Node st = stem_node(c.node(), &s);
  KernelContext sc(st, c.opset(), {&c.input(0), &c.input(1), c.has_input(2) ? &c.input(2) : nullptr}, nullptr,
                   c.threads());
  def_FusedConv().kernel(sc);
  const Tensor stem = std::move(sc.outputs()[0]);
  Node p = pair_node(c.node(), &s);
  std::vector<const Tensor*> in = {&stem};
  for (size_t i = 3; i < 8; ++i) in.push_back(c.has_input(i) ? &c.input(i) : nullptr);
  while (!in.empty() && !in.back()) in.pop_back();
  KernelContext pc(p, c.opset(), in, nullptr, c.threads());
  def_DepthwiseProject().kernel(pc);
  c.set_output(0, std::move(pc.outputs()[0]));
}

std::vector<AttrSpec> stem_depthwise_project_attrs() {
  std::vector<AttrSpec> a = def_DepthwiseProject().attrs;  // the pair's
  for (const AttrSpec& s : prefixed_attrs(kPrefix, def_FusedConv().attrs)) a.push_back(s);  // the stem's
  return a;
}

}  // namespace

Node stem_half(const Node& n) { return kiln_domain::prefixed_part(n, kPrefix, "FusedConv", "stem"); }

StemDepthwiseProjectShapes stem_depthwise_project_shapes(const Node& n, const std::vector<int64_t>& x) {
  const std::vector<int64_t> ws = n.attr_ints("stem_w_shape", {});
  KILN_CHECK(x.size() == 4 && ws.size() == 4, n.describe(),
             ": needs a 4-D input and a packed stem weight of logical shape [K, C, R, S] (stem_w_shape), got ",
             dims_str(x), " and ", dims_str(ws));
  StemDepthwiseProjectShapes s;
  s.stem = fused_conv_shape(stem_half(n), x, ws);
  const DepthwiseProjectShapes pair = depthwise_project_shapes(n, {s.stem.N, s.stem.K, s.stem.out_h(), s.stem.out_w()});
  s.depthwise = pair.depthwise, s.project = pair.project;
  return s;
}

OpDef def_StemDepthwiseProject() {
  return {.name = "StemDepthwiseProject",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 6,
          .max_inputs = 8,
          .max_outputs = 1,
          .attrs = stem_depthwise_project_attrs(),
          .infer = infer_stem_depthwise_project,
          .cost = cost_stem_depthwise_project,
          .kernel = stem_depthwise_project_kernel,
          .doc = "DepthwiseProject(acts(Conv(X, Ws) + Bs), Wd, Bd, Wp, Bp, Z): an RGB stem and the depthwise + "
                 "1x1 projection pair after it, run band by band"};
}

}  // namespace kiln::ops

// kiln.FusedElementwise(inputs...) -> outputs...: a group of elementwise ops kept as the graph
// attribute `body` (its inputs are the node's inputs in order, its outputs the node's outputs),
// made by fuse-elementwise; codegen emits one loop nest for it. Every output has the same
// shape, the broadcast of the inputs (the calling convention of codegen/fused_abi.h). The
// reference kernel runs the body with the interpreter (KernelContext::run_subgraph). `y_blocked`
// (lowering): the outputs and the full-size inputs are channel-blocked, [N][C/8][H][W][8].
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

Graph& body_of(const Node& n) {
  const Attribute* a = n.find_attr("body");
  KILN_CHECK(a && a->kind() == AttrKind::Graph && a->g(), n.describe(), ": graph attribute 'body' is missing");
  KILN_CHECK(a->g()->inputs.size() == n.inputs.size(), n.describe(), ": body takes ", a->g()->inputs.size(),
             " inputs, the node has ", n.inputs.size());
  KILN_CHECK(a->g()->outputs.size() == n.outputs.size(), n.describe(), ": body gives ", a->g()->outputs.size(),
             " outputs, the node has ", n.outputs.size());
  return *a->g();
}

void infer_fused_elementwise(InferContext& c) {
  const Node& n = c.node();
  Graph& body = body_of(n);
  // The body's inputs take the node's input types, then each body node is inferred in order
  // (the body is elementwise: no shape computations to evaluate).
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!c.has_input(i)) c.fail(str_cat("input ", i, " is missing; every body input needs a value"));
    body.inputs[i]->dtype = c.in_dtype(i);
    body.inputs[i]->shape = c.in_shape(i);
  }
  for (const auto& bn : body.nodes()) {
    const OpDef* def = find_op(bn->domain, bn->op);
    if (def == nullptr || def->infer == nullptr) c.fail(str_cat("body node ", bn->describe(), " is not a known op"));
    InferContext bc(*bn, c.opset());
    def->infer(bc);
  }
  const Shape* first = nullptr;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* o = body.outputs[i];
    if (first && first->rank_known && o->shape.rank_known && *first != o->shape)
      c.fail(str_cat("body outputs differ in shape: ", first->str(), " and ", o->shape.str(),
                     " (a fused elementwise group has one output shape)"));
    if (!first) first = &o->shape;
    c.set_output(i, o->dtype, o->shape);
  }
}

// Sum of the body nodes' own costs at the concrete shapes of this call: dims flow from the
// node's inputs through the body by broadcasting (every body op is elementwise).
Cost cost_fused_elementwise(const CostContext& c) {
  const Graph& body = body_of(c.node);
  std::map<const Value*, std::vector<int64_t>> dims;
  for (size_t i = 0; i < body.inputs.size(); ++i) dims[body.inputs[i]] = c.in_dims[i];
  for (const Value* v : body.initializers) dims[v] = v->initializer->dims();
  Cost total;
  for (const auto& bn : body.nodes()) {
    CostContext bc{*bn, {}, {}, {}, {}};
    std::vector<int64_t> out;
    for (const Value* v : bn->inputs) {
      bc.in_dims.push_back(v && dims.count(v) ? dims[v] : std::vector<int64_t>{});
      bc.in_dtypes.push_back(v ? v->dtype : DType::undefined);
      if (v) out = broadcast_dims(out, bc.in_dims.back(), *bn);
    }
    for (const Value* o : bn->outputs) {
      dims[o] = out;
      bc.out_dims.push_back(out);
      bc.out_dtypes.push_back(o ? o->dtype : DType::undefined);
    }
    const OpDef* def = find_op(bn->domain, bn->op);
    total.flops += (def && def->cost ? def->cost(bc) : cost_elementwise(bc)).flops;
  }
  total.bytes_read = c.io_bytes_read();  // intermediates stay in registers
  total.bytes_written = c.io_bytes_written();
  return total;
}

void fused_elementwise_kernel(KernelContext& c) {
  // Set by lowering for the generated kernel (lower/blocked_layout.cpp): the body's ops read NCHW.
  if (c.node().attr_i("y_blocked", 0) != 0)
    c.fail("channel-blocked operands run only on the generated kernel; recompile the model");
  const Graph& body = body_of(c.node());
  std::vector<Tensor> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.input(i));
  std::vector<Tensor> outs = c.run_subgraph(body, ins);
  KILN_CHECK(outs.size() == c.num_outputs(), c.node().describe(), ": body gave ", outs.size(), " outputs");
  for (size_t i = 0; i < outs.size(); ++i) c.set_output(i, std::move(outs[i]));
}

}  // namespace

OpDef def_FusedElementwise() {
  return {.name = "FusedElementwise",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 0,
          .max_inputs = -1,
          .min_outputs = 1,
          .max_outputs = -1,
          .attrs = {{"body", AttrKind::Graph, true}, {"kernel", AttrKind::String}, {"y_blocked", AttrKind::Int}},
          .infer = infer_fused_elementwise,
          .cost = cost_fused_elementwise,
          .kernel = fused_elementwise_kernel,
          .doc = "a group of elementwise ops run as one loop nest (graph attribute body)"};
}

}  // namespace kiln::ops

// If: runs then_branch or else_branch (graphs without inputs that read outer values) on a
// one-element bool condition; the node's outputs are the chosen branch's outputs.
#include "subgraph.h"

namespace kiln::ops {
int control::known_branch(const InferContext& c) {
  const Tensor* cond = c.in_const(0);
  if (!cond || cond->dtype() != DType::boolean || cond->numel() != 1) return -1;
  return cond->data<bool>()[0] ? 0 : 1;
}

namespace {

void check_cond(const InferContext& c) {
  DType dt = c.in_dtype(0);
  if (dt != DType::undefined && dt != DType::boolean)
    c.fail(str_cat("cond must be bool, got ", dtype_name(dt)));
  const Shape& s = c.in_shape(0);
  if (s.is_static() && s.numel() != 1) c.fail(str_cat("cond must have one element, got shape ", s.str()));
}

// Branch output shapes were inferred by the driver (subgraphs first); the node's output
// holds whatever both branches agree on, or the taken branch's when the condition is known
// (a shape test such as Silero VAD's rank checks: the other branch may not even be consistent).
void infer_if(InferContext& c) {
  check_cond(c);
  const Graph& then_g = control::body_attr(c.node(), "then_branch");
  const Graph& else_g = control::body_attr(c.node(), "else_branch");
  if (!then_g.inputs.empty() || !else_g.inputs.empty()) c.fail("branches must not have inputs");
  if (then_g.outputs.size() != c.num_outputs() || else_g.outputs.size() != c.num_outputs())
    c.fail(str_cat("node has ", c.num_outputs(), " outputs but then_branch has ", then_g.outputs.size(),
                   " and else_branch ", else_g.outputs.size()));
  const int taken = control::known_branch(c);
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    const Value& t = *then_g.outputs[i];
    const Value& e = *else_g.outputs[i];
    if (taken >= 0) {
      const Value& b = taken == 0 ? t : e;
      c.set_output(i, b.dtype, b.shape);
      continue;
    }
    DType dt = control::merge_dtypes(c, t.dtype, e.dtype, str_cat("output ", i, " of the branches"));
    c.set_output(i, dt, control::merge_shapes(t.shape, e.shape));
  }
}

void kernel_if(KernelContext& c) {
  bool cond = control::read_bool(c, c.input(0), "cond");
  const char* which = cond ? "then_branch" : "else_branch";
  const Graph& branch = control::body_attr(c.node(), which);
  std::vector<Tensor> outs = control::run_body(c, branch, which, {}, c.num_outputs());
  for (size_t i = 0; i < outs.size(); ++i) c.set_output(i, std::move(outs[i]));
}

}  // namespace

std::vector<Graph*> compiled_branches(const Node& n) {
  if (!n.domain.empty() || n.op != "If") return {};
  std::vector<Graph*> out;
  for (const char* name : {"then_branch", "else_branch"}) {
    const Attribute* a = n.find_attr(name);
    Graph* g = a && a->kind() == AttrKind::Graph ? a->g().get() : nullptr;
    if (!g || !g->inputs.empty() || g->outputs.size() != n.outputs.size()) return {};
    out.push_back(g);
  }
  return out;
}

OpDef def_If() {
  return {.name = "If",
          .since = 1,
          .min_inputs = 1,
          .max_inputs = 1,
          .min_outputs = 1,
          .max_outputs = -1,
          .attrs = {{"then_branch", AttrKind::Graph, true}, {"else_branch", AttrKind::Graph, true}},
          .infer = infer_if,
          .cost = cost_data_movement,
          .kernel = kernel_if,
          .doc = "runs then_branch or else_branch depending on a bool condition"};
}

}  // namespace kiln::ops

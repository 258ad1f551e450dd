#include "constant_eval.h"

#include "kiln/ops/op.h"

namespace kiln::passes {
namespace {

bool is_random(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Multinomial" || op == "Bernoulli";
}

std::string mib(double bytes) { return str_cat(static_cast<int64_t>(bytes / (1 << 20)), " MiB"); }

}  // namespace

Decision can_fold(const Node& n) {
  if (is_random(n.op)) return Decision::no("random op: folding would freeze one sample");
  if (!n.subgraphs().empty()) return Decision::no("has a subgraph");
  const ops::OpDef* def = ops::find_op(n.domain, n.op);
  if (!def || !def->kernel) return Decision::no("op has no reference kernel");
  if (n.outputs.empty()) return Decision::no("node has no outputs");
  for (const Value* v : n.inputs)
    if (v && !constant_of(v)) return Decision::no(str_cat("input '", v->name, "' is not a constant"));
  if (n.op == "DequantizeLinear" && n.domain.empty())
    return Decision::no("keeps DequantizeLinear of constant weights (int8 weights stay int8)");
  return Decision::yes();
}

std::vector<Tensor> evaluate_node(const Node& n, int64_t opset) {
  const ops::OpDef* def = ops::find_op(n.domain, n.op);
  KILN_CHECK(def && def->kernel, n.describe(), ": no reference kernel to evaluate it");
  std::vector<const Tensor*> ins;
  for (const Value* v : n.inputs) ins.push_back(v ? constant_of(v) : nullptr);
  ops::KernelContext kc(n, opset, std::move(ins));
  def->kernel(kc);
  return std::move(kc.outputs());
}

Decision fold_node(Node& n, Rewriter& rw, int64_t max_bytes) {
  if (Decision d = can_fold(n); !d) return d;
  // Decline before computing when the outputs' sizes are known.
  double known_bytes = 0;
  for (const Value* o : n.outputs)
    if (o && o->shape.is_static()) known_bytes += static_cast<double>(*o->shape.numel()) * dtype_size(o->dtype);
  if (known_bytes > static_cast<double>(max_bytes))
    return Decision::no(str_cat("result would be ", mib(known_bytes), " (cap ", mib(max_bytes), ")"));
  std::vector<Tensor> outs;
  try {
    outs = evaluate_node(n, rw.model().opset(""));
  } catch (const Error& e) {
    return Decision::no(str_cat("evaluation failed: ", e.what()));
  }
  double bytes = 0;
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] && outs[i].defined()) bytes += static_cast<double>(outs[i].nbytes());
  if (bytes > static_cast<double>(max_bytes))
    return Decision::no(str_cat("result is ", mib(bytes), " (cap ", mib(max_bytes), ")"));
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    Value* o = n.outputs[i];
    if (!o) continue;
    KILN_CHECK(outs[i].defined(), n.describe(), ": kernel produced no value for '", o->name, "'");
    // A kernel may return a view of a constant input: both stay immutable, so sharing is fine.
    rw.make_constant(o, outs[i]);
  }
  rw.erase_if_dead(&n);
  return Decision::yes();
}

}  // namespace kiln::passes

// Stepper: the interpreter's loop, one node at a time, values freed after their last reader.
#include "stepper.h"

#include "kiln/kernels/parallel.h"
#include "kiln/ops/op.h"
#include "kiln/plan/plan.h"

namespace kiln::compress {

Stepper::Stepper(const Model& m, const std::map<std::string, Tensor>& inputs, int threads)
    : model_(m), nodes_(m.graph->nodes()), threads_(threads > 0 ? threads : kernels::default_threads()) {
  const Graph& g = *m.graph;
  for (const Value* in : g.inputs) {
    auto it = inputs.find(in->name);
    if (it != inputs.end()) values_[in] = it->second;
    else KILN_CHECK(in->initializer.has_value(), "missing input '", in->name, "'");
  }
  std::unordered_map<const Value*, size_t> last_use;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    KILN_CHECK(nodes_[i]->subgraphs().empty(), nodes_[i]->describe(), ": subgraphs are not supported here");
    std::vector<const Value*> reads;
    plan::collect_reads(*nodes_[i], reads);
    for (const Value* v : reads) last_use[v] = i;
    for (const Value* o : nodes_[i]->outputs)
      if (o) last_use.emplace(o, i);
  }
  for (const Value* v : g.outputs) last_use.erase(v);
  dies_after_.resize(nodes_.size());
  for (const auto& [v, i] : last_use)
    if (!v->is_constant()) dies_after_[i].push_back(v);
}

const Tensor& Stepper::value(const Value* v) const {
  auto it = values_.find(v);
  if (it != values_.end()) return it->second;
  KILN_CHECK(v->is_constant(), "value '", v->name, "' is not computed (or no longer kept) at node ", next_);
  return *v->initializer;
}

void Stepper::run_to(size_t node) {
  const int64_t opset = model_.opset("");
  for (; next_ < node && next_ < nodes_.size(); ++next_) {
    const Node& n = *nodes_[next_];
    const ops::OpDef* def = ops::find_op(n.domain, n.op);
    KILN_CHECK(def && def->kernel, n.describe(), ": op '", n.op, "' has no reference kernel");
    std::vector<const Tensor*> ins;
    for (const Value* v : n.inputs) ins.push_back(v ? &value(v) : nullptr);
    ops::KernelContext ctx(n, opset, std::move(ins), nullptr, threads_);
    def->kernel(ctx);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (const Value* o = n.outputs[k]) values_[o] = std::move(ctx.outputs()[k]);
    for (const Value* v : dies_after_[next_]) values_.erase(v);
  }
}

}  // namespace kiln::compress

// Reference interpreter: executes nodes in order with the op table's reference kernels.
// Intermediate tensors are released after their last use so whole models fit in memory.
#include "kiln/runtime/interpreter.h"

#include <unordered_map>

#include "kiln/kernels/parallel.h"
#include "kiln/ops/op.h"
#include "kiln/plan/plan.h"

namespace kiln {
namespace {

struct Env {
  const Env* parent = nullptr;
  const ValueLookup* outer = nullptr;  // values kept outside the interpreter (outermost Env only)
  std::unordered_map<const Value*, Tensor> values;

  const Tensor* lookup(const Value* v) const {
    const Env* root = this;
    for (const Env* e = this; e != nullptr; root = e, e = e->parent) {
      auto it = e->values.find(v);
      if (it != e->values.end()) return &it->second;
    }
    if (root->outer != nullptr)
      if (const Tensor* t = (*root->outer)(v)) return t;
    if (v->initializer) return &*v->initializer;
    return nullptr;
  }
};

class Runner {
 public:
  Runner(const Model& m, int threads) : model_(m), threads_(threads) {}

  std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs, const Env* parent,
                          const ValueLookup* outer = nullptr) {
    Env env;
    env.parent = parent;
    env.outer = outer;
    KILN_CHECK(inputs.size() <= g.inputs.size(), "graph '", g.name, "': got ", inputs.size(), " inputs, takes ",
               g.inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) env.values[g.inputs[i]] = inputs[i];

    // Values of this graph to free after each node: after their last reader, or right after
    // the node that made them when nothing reads them. Graph outputs and outer values stay.
    std::unordered_map<const Value*, size_t> last_use;
    const auto& nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::vector<const Value*> reads;
      plan::collect_reads(*nodes[i], reads);
      for (const Value* v : reads) last_use[v] = i;
      for (const Value* o : nodes[i]->outputs)
        if (o) last_use.emplace(o, i);  // unread outputs die where they are made
    }
    for (const Value* v : g.outputs) last_use.erase(v);
    std::vector<std::vector<const Value*>> dies_after(nodes.size());
    for (const auto& [v, i] : last_use)
      if (v->owner == &g) dies_after[i].push_back(v);

    int64_t opset = model_.opset("");
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = *nodes[i];
      const ops::OpDef* def = ops::find_op(n.domain, n.op);
      KILN_CHECK(def && def->kernel, n.describe(), ": op '", n.op, "' has no reference kernel");
      std::vector<const Tensor*> ins;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Value* v = n.inputs[k];
        if (!v) {
          ins.push_back(nullptr);
          continue;
        }
        const Tensor* t = env.lookup(v);
        KILN_CHECK(t != nullptr, n.describe(), ": input '", v->name, "' has no value at run time");
        ins.push_back(t);
      }
      ops::KernelContext ctx(
          n, opset, std::move(ins),
          [this, &env](const Graph& sg, const std::vector<Tensor>& sin) { return run(sg, sin, &env); }, threads_);
      def->kernel(ctx);
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const Value* o = n.outputs[k];
        if (!o) continue;
        Tensor& t = ctx.outputs()[k];
        KILN_CHECK(t.defined(), n.describe(), ": kernel produced no value for output '", o->name, "'");
        KILN_CHECK(o->dtype == DType::undefined || o->dtype == t.dtype(), n.describe(), ": kernel produced ",
                   dtype_name(t.dtype()), " for output '", o->name, "', declared ", dtype_name(o->dtype));
        env.values[o] = std::move(t);
      }
      for (const Value* v : dies_after[i]) env.values.erase(v);
    }
    std::vector<Tensor> outs;
    for (const Value* v : g.outputs) {
      const Tensor* t = env.lookup(v);
      KILN_CHECK(t != nullptr, "graph '", g.name, "': output '", v->name, "' was not computed");
      outs.push_back(*t);
    }
    return outs;
  }

 private:
  const Model& model_;
  int threads_;
};

}  // namespace

std::map<std::string, Tensor> run_model(const Model& m, const std::map<std::string, Tensor>& inputs,
                                        const RunOptions& opt, const DimRanges& ranges) {
  const Graph& g = *m.graph;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const Value* v : g.inputs) known |= v->name == name;
    KILN_CHECK(known, "model has no input named '", name, "'");
  }
  std::vector<Tensor> ordered;
  std::map<std::string, int64_t> bound;
  for (const Value* v : g.inputs) {
    auto it = inputs.find(v->name);
    if (it == inputs.end()) {
      // An input with an initializer is optional (its default is the initializer).
      KILN_CHECK(v->initializer.has_value(), "missing input '", v->name, "' (", dtype_name(v->dtype), v->shape.str(),
                 ")");
      ordered.push_back(*v->initializer);
      continue;
    }
    check_input(*v, it->second, bound, ranges);
    ordered.push_back(it->second);
  }
  int threads = opt.threads > 0 ? opt.threads : kernels::hardware_threads();
  kernels::set_default_threads(threads);
  Runner r(m, threads);
  std::vector<Tensor> outs = r.run(g, ordered, nullptr);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < g.outputs.size(); ++i) result[g.outputs[i]->name] = outs[i];
  return result;
}

std::vector<Tensor> run_subgraph(const Model& m, const Graph& g, const std::vector<Tensor>& inputs,
                                 const ValueLookup& outer, int threads) {
  Runner r(m, threads > 0 ? threads : kernels::default_threads());
  return r.run(g, inputs, nullptr, &outer);
}

std::vector<Tensor> run_graph(const Model& m, const std::vector<Tensor>& inputs, const RunOptions& opt) {
  std::map<std::string, Tensor> named;
  const Graph& g = *m.graph;
  KILN_CHECK(inputs.size() <= g.inputs.size(), "model takes ", g.inputs.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) named[g.inputs[i]->name] = inputs[i];
  auto out = run_model(m, named, opt);
  std::vector<Tensor> v;
  for (const Value* o : g.outputs) v.push_back(out.at(o->name));
  return v;
}

}  // namespace kiln

// Shape inference driver: walks the graph in order, asks each op's infer function for its
// outputs, and evaluates small constant sub-computations (Shape -> Gather -> Concat chains)
// with the reference kernels so that ops like Reshape see their target shape.
#include "control/subgraph.h"
#include "op_helpers.h"
#include "symbolic_values.h"

namespace kiln::ops {
namespace {

constexpr int64_t kMaxFoldElements = 1 << 16;  // only shape-sized computations are evaluated

// Keeps what was declared where inference knows less (e.g. value_info from the exporter).
Shape merge_shapes(const Shape& inferred, const Shape& declared) {
  if (!inferred.rank_known) return declared;
  if (!declared.rank_known || declared.rank() != inferred.rank()) return inferred;
  Shape out = inferred;
  for (size_t i = 0; i < out.rank(); ++i)
    if (out.dims[i].is_unknown()) out.dims[i] = declared.dims[i];
  return out;
}

void try_evaluate(const Node& n, const OpDef& def, int64_t opset, InferContext::KnownValues& known) {
  if (!def.kernel || !n.subgraphs().empty()) return;
  std::vector<const Tensor*> ins;
  for (const Value* v : n.inputs) {
    if (v == nullptr) {
      ins.push_back(nullptr);
      continue;
    }
    const Tensor* t = v->initializer ? &*v->initializer : nullptr;
    if (!t) {
      auto it = known.find(v);
      if (it != known.end()) t = &it->second;
    }
    if (!t || t->numel() > kMaxFoldElements) return;
    ins.push_back(t);
  }
  if (n.op == "RandomNormal" || n.op == "RandomUniform") return;
  try {
    KernelContext kc(n, opset, ins);
    def.kernel(kc);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] && kc.outputs()[i].defined() && kc.outputs()[i].numel() <= kMaxFoldElements)
        known[n.outputs[i]] = kc.outputs()[i];
  } catch (const Error&) {
    // Not evaluable here; the op's own shape inference reports real problems.
  }
}

// An If whose condition is known here passes on what is known of the taken branch's outputs
// (a shape computed in a branch, as Silero VAD's rank tests compute them).
void pass_known_branch_outputs(const Node& n, int64_t opset, InferContext::KnownValues& known) {
  const std::vector<Graph*> branches = compiled_branches(n);
  const int taken = branches.empty() ? -1 : control::known_branch(InferContext(n, opset, &known));
  if (taken < 0) return;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* b = branches[taken]->outputs[i];
    if (!n.outputs[i] || !b) continue;
    if (b->initializer) known[n.outputs[i]] = *b->initializer;
    else if (auto it = known.find(b); it != known.end()) known[n.outputs[i]] = it->second;
  }
}

// Every value made inside `g` (and its subgraphs) back to an unknown shape.
void forget_shapes(Graph& g, InferContext::KnownValues& known) {
  for (const auto& n : g.nodes()) {
    for (Value* o : n->outputs)
      if (o) {
        o->shape = Shape::unknown_rank();
        known.erase(o);
      }
    for (Graph* sg : n->subgraphs()) forget_shapes(*sg, known);
  }
}

void infer_graph(Graph& g, int64_t opset, const DimBindings& b, InferContext::KnownValues& known,
                 SymbolicValues& sv) {
  for (const auto& v : g.values())
    if (!b.empty()) v->shape = bind_dims(v->shape, b);
  for (const auto& np : g.nodes()) {
    Node& n = *np;
    const OpDef* def = find_op(n.domain, n.op);
    if (def == nullptr) throw Error(str_cat(n.describe(), ": unknown op '", n.domain.empty() ? "" : n.domain + ".",
                                            n.op, "' (opset ", opset, ")"));
    // Loop/Scan body inputs often carry no type in the model: derive them from the node first.
    control::seed_body_inputs(n, opset);
    for (Graph* sg : n.subgraphs()) {
      if (n.op != "If") {
        infer_graph(*sg, opset, b, known, sv);
        continue;
      }
      // Only one branch of an If runs. With concrete input shapes the branch that will not be
      // taken can be inconsistent (Silero VAD's 8 kHz branch squeezes a dim that is 1 only at
      // 8 kHz): its values become unknown rather than failing inference of the whole model.
      try {
        infer_graph(*sg, opset, b, known, sv);
      } catch (const Error&) {
        forget_shapes(*sg, known);
      }
    }
    if (n.op == "Shape" && n.input(0) && n.input(0)->shape.is_static() && n.attrs.empty()) {
      auto d = n.input(0)->shape.static_dims();
      known[n.outputs[0]] = Tensor::from_vector<int64_t>({static_cast<int64_t>(d.size())}, d);
    }
    std::vector<std::pair<DType, Shape>> declared;
    for (Value* o : n.outputs) declared.emplace_back(o ? o->dtype : DType::undefined, o ? o->shape : Shape());
    if (def->infer) {
      InferContext c(n, opset, &known);
      def->infer(c);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Value* o = n.outputs[i];
      if (!o) continue;
      if (o->dtype == DType::undefined) o->dtype = declared[i].first;
      o->shape = merge_shapes(o->shape, declared[i].second);
    }
    if (n.op == "If" && n.domain.empty()) pass_known_branch_outputs(n, opset, known);
    refine_with_symbolic(n, known, sv);
    if (!known.count(n.outputs.empty() ? nullptr : n.outputs[0])) try_evaluate(n, *def, opset, known);
    // A computed constant pins the output's shape exactly.
    for (Value* o : n.outputs) {
      if (!o) continue;
      auto it = known.find(o);
      if (it != known.end()) {
        o->shape = Shape::of(it->second.dims());
        o->dtype = it->second.dtype();
      }
    }
    propagate_symbolic(n, known, sv);
  }
}

}  // namespace

void infer_shapes(Model& m, const DimBindings& bindings) {
  InferContext::KnownValues known;
  SymbolicValues sv;
  infer_graph(*m.graph, m.opset(""), bindings, known, sv);
}

std::optional<Cost> node_cost(const Node& n, const DimBindings& assume) {
  const OpDef* def = find_op(n.domain, n.op);
  if (!def) return std::nullopt;
  CostContext c{n, {}, {}, {}, {}};
  for (const Value* v : n.inputs) {
    if (!v) {
      c.in_dims.emplace_back();
      c.in_dtypes.push_back(DType::undefined);
      continue;
    }
    Shape sh = assume.empty() ? v->shape : bind_dims(v->shape, assume);
    if (!sh.is_static()) return std::nullopt;
    c.in_dims.push_back(sh.static_dims());
    c.in_dtypes.push_back(v->dtype);
  }
  for (const Value* v : n.outputs) {
    if (!v) {
      c.out_dims.emplace_back();
      c.out_dtypes.push_back(DType::undefined);
      continue;
    }
    Shape sh = assume.empty() ? v->shape : bind_dims(v->shape, assume);
    if (!sh.is_static()) return std::nullopt;
    c.out_dims.push_back(sh.static_dims());
    c.out_dtypes.push_back(v->dtype);
  }
  return def->cost ? def->cost(c) : cost_elementwise(c);
}

}  // namespace kiln::ops

// apply_pruning: the planned slices of weights, biases and per-channel constants, as new
// initializers; shapes re-inferred from the inputs.
#include <cstring>

#include "kiln/compress/prune.h"
#include "kiln/ops/op.h"
#include "kiln/passes/manager.h"
#include "kiln/passes/rewrite.h"

namespace kiln::compress {
namespace {

// t with only the indices `idx` of dimension `axis` (any dtype).
Tensor take(const Tensor& t, int64_t axis, const std::vector<int64_t>& idx) {
  std::vector<int64_t> dims = t.dims();
  int64_t outer = 1, inner = dtype_size(t.dtype());
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[axis];
  dims[axis] = static_cast<int64_t>(idx.size());
  Tensor out(t.dtype(), dims);
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < idx.size(); ++k)
      std::memcpy(dst + (o * static_cast<int64_t>(idx.size()) + static_cast<int64_t>(k)) * inner,
                  src + (o * n + idx[k]) * inner, static_cast<size_t>(inner));
  return out;
}

}  // namespace

// Runs laid end to end; pruned groups keep their kept channels (each `unit` elements long).
std::vector<int64_t> surviving_indices(const std::vector<ChannelRun>& runs, const PrunePlan& plan) {
  std::vector<int64_t> idx;
  int64_t offset = 0;
  for (const auto& r : runs) {
    if (r.group >= 0 && plan.groups[r.group].pruned()) {
      for (int64_t k : plan.groups[r.group].kept)
        for (int64_t u = 0; u < r.unit; ++u) idx.push_back(offset + k * r.unit + u);
    } else {
      for (int64_t e = 0; e < r.channels * r.unit; ++e) idx.push_back(offset + e);
    }
    offset += r.channels * r.unit;
  }
  return idx;
}

void apply_pruning(Model& m, const PrunePlan& plan) {
  Graph& g = *m.graph;
  std::map<std::string, Node*> by_name;
  for (const auto& up : g.nodes()) by_name[up->name] = up.get();
  for (const auto& e : plan.edits) {
    Node* n = by_name.at(e.node);
    Value* v = n->input(static_cast<size_t>(e.input));
    const Tensor* t = passes::constant_of(v);
    KILN_CHECK(t != nullptr, "prune: ", n->describe(), " input ", e.input, " is not a constant");
    std::vector<int64_t> idx = surviving_indices(e.runs, plan);
    KILN_CHECK(e.axis >= 0 && e.axis < static_cast<int64_t>(t->rank()), "prune: ", n->describe(), " input ", e.input,
               " has no axis ", e.axis);
    int64_t total = 0;
    for (const auto& r : e.runs) total += r.channels * r.unit;
    KILN_CHECK(t->dim(static_cast<size_t>(e.axis)) == total, "prune: ", n->describe(), " input ", e.input, " has ",
               t->dim(static_cast<size_t>(e.axis)), " elements on axis ", e.axis, ", the channels ", total);
    if (static_cast<int64_t>(idx.size()) == total) continue;
    Value* nv = g.add_initializer(g.unique_name(v->name + "_pruned"), take(*t, e.axis, idx));
    n->inputs[static_cast<size_t>(e.input)] = nv;
    // A depthwise convolution keeps one group per (remaining) channel.
    if (e.kind == ChannelEdit::PerChannel && n->op == "Conv" && e.input == 1)
      n->attrs["group"] = static_cast<int64_t>(idx.size());
  }
  // Every computed shape is derived again; old constants nobody reads any more go.
  for (const auto& up : g.nodes())
    for (Value* o : up->outputs)
      if (o) o->shape = Shape::unknown_rank();
  ops::infer_shapes(m);
  passes::PipelineOptions po;
  po.passes = "dce";
  passes::PassContext ctx;
  passes::PassManager::from_options(po).run(m, ctx);
  ops::verify_model(m);
}

}  // namespace kiln::compress

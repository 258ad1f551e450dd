// eliminate-identity: removes nodes that return their input unchanged and collapses pairs
// that undo each other:
//   Identity; Dropout at inference (mask unused); Cast to the dtype it already has;
//   Reshape/Squeeze/Unsqueeze/Flatten whose output shape equals the input shape;
//   a reshape-like op of a reshape-like op (one Reshape of the original, or nothing when the
//   shapes match); Transpose of Transpose (nothing when the permutations cancel, else one);
//   a Transpose that only moves size-1 axes (BERT's [1,128,768] <-> [128,1,768]): a Reshape,
//   which the planner runs as a view instead of a copy.
// Graph outputs keep their names: the value feeding a removed node takes the name over, or
// (when it is a graph input, a constant or another output) the node becomes an Identity.
//
// Deliberately does not: remove an Identity between a graph input (or constant) and a graph
// output (it is what keeps the output's name), touch Dropout in training mode, Casts that
// change precision, or reshapes whose shapes are not fully known.
#include <numeric>
#include <optional>

#include "builtin_passes.h"
#include "kiln/passes/rewrite.h"

namespace kiln::passes {
namespace {

bool fully_known(const Shape& s) {
  if (!s.rank_known) return false;
  for (const Dim& d : s.dims)
    if (d.is_unknown()) return false;
  return true;
}

bool same_known_shape(const Value* a, const Value* b) {
  return a && b && fully_known(a->shape) && fully_known(b->shape) && a->shape == b->shape;
}

bool reshape_like(const Node& n) {
  return n.domain.empty() && (n.op == "Reshape" || n.op == "Squeeze" || n.op == "Unsqueeze" || n.op == "Flatten");
}

Decision dropout_is_identity(const Node& n) {
  if (n.outputs.size() > 1 && n.outputs[1] && (is_graph_output(n.outputs[1]) || !users_of(n.outputs[1]).empty()))
    return Decision::no("its mask output is used");
  if (const Value* training = n.input(2)) {
    const Tensor* t = constant_of(training);
    if (!t || t->numel() != 1 || t->as_double(0) != 0) return Decision::no("training_mode is not a constant false");
  }
  return Decision::yes();
}

// Ops whose output 0 equals input 0 when `match` says so.
class RemoveNoOp : public RewritePattern {
 public:
  std::string name() const override { return "no-op"; }
  std::vector<std::string> root_ops() const override {
    return {"Identity", "Dropout", "Cast", "Reshape", "Squeeze", "Unsqueeze", "Flatten"};
  }
  Decision match(const Node& n, const Model&) const override {
    const Value* x = n.input(0);
    const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
    if (!x || !y) return Decision::no("no data input or output");
    if (n.op == "Dropout") {
      if (Decision d = dropout_is_identity(n); !d) return d;
    } else if (n.op == "Cast") {
      if (x->dtype == DType::undefined || y->dtype != x->dtype) return Decision::no("changes the dtype");
    } else if (n.op != "Identity") {
      if (!same_known_shape(x, y)) return Decision::no("changes the shape (or the shapes are not known)");
    }
    if (n.op == "Identity" && !can_replace_without_copy(y, x))
      return Decision::no("keeps the name of a graph output whose source cannot take it");
    return Decision::yes();
  }
  void apply(Node& n, Rewriter& rw) const override { rw.replace(n.outputs[0], n.inputs[0]); }
  std::string describe_apply(const Node& n) const override { return "removed " + n.op + " (no-op)"; }
};

// Reshape(x) to the static shape of `like`, with the shape as a new constant named after `name`.
Node* reshape_to(Rewriter& rw, Value* x, const Value& like, const std::string& name) {
  auto dims = like.shape.static_dims();
  Value* shape = rw.constant(name + "_shape", Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims));
  return rw.create("Reshape", {x, shape});
}

// reshape-like(reshape-like(x)): only the last shape matters.
class CollapseReshapes : public RewritePattern {
 public:
  std::string name() const override { return "reshape-of-reshape"; }
  std::vector<std::string> root_ops() const override { return {"Reshape", "Squeeze", "Unsqueeze", "Flatten"}; }
  Decision match(const Node& n, const Model&) const override {
    const Value* mid = n.input(0);
    if (!mid || !mid->producer || !reshape_like(*mid->producer) || mid->owner != n.owner)
      return Decision::no("input is not made by a reshape-like op");
    const Value* x = mid->producer->input(0);
    if (same_known_shape(x, n.outputs[0])) return Decision::yes();
    if (n.op == "Reshape") {
      const Tensor* shape = constant_of(n.input(1));
      if (!shape) return Decision::no("target shape is not a constant");
      // A 0 copies a dim of the input, which is a different tensor once the inner op goes.
      std::vector<int64_t> target = shape->to_int64_vector();
      bool copies = n.attr_i("allowzero", 0) == 0 && std::find(target.begin(), target.end(), 0) != target.end();
      if (copies) return Decision::no("target shape copies input dims (0 entries)");
      return Decision::yes();
    }
    if (n.outputs[0] && n.outputs[0]->shape.is_static()) return Decision::yes();
    return Decision::no("output shape is not static");
  }
  void apply(Node& n, Rewriter& rw) const override {
    Node* inner = n.inputs[0]->producer;
    Value* x = inner->inputs[0];
    if (same_known_shape(x, n.outputs[0])) {
      rw.replace(n.outputs[0], x);
    } else if (n.op == "Reshape") {
      n.inputs[0] = x;
    } else {
      rw.replace(n.outputs[0], reshape_to(rw, x, *n.outputs[0], n.name)->outputs[0]);
    }
    rw.erase_if_dead(inner);
  }
  std::string describe_apply(const Node& n) const override {
    return str_cat("merged ", n.op, " with the ", n.inputs[0]->producer->op, " before it");
  }
};

std::optional<std::vector<int64_t>> perm_of(const Node& t) {
  if (const Attribute* a = t.find_attr("perm")) return a->ints();
  const Value* x = t.input(0);
  if (!x || !x->shape.rank_known) return std::nullopt;
  std::vector<int64_t> p(x->shape.rank());
  std::iota(p.rbegin(), p.rend(), 0);  // no perm = reverse the dims
  return p;
}

class CollapseTransposes : public RewritePattern {
 public:
  std::string name() const override { return "transpose-pair"; }
  std::vector<std::string> root_ops() const override { return {"Transpose"}; }
  Decision match(const Node& n, const Model&) const override {
    const Value* mid = n.input(0);
    if (!mid || !mid->producer || mid->producer->op != "Transpose" || !mid->producer->domain.empty() ||
        mid->owner != n.owner)
      return Decision::no("input is not a Transpose");
    auto outer = perm_of(n), inner = perm_of(*mid->producer);
    if (!outer || !inner || outer->size() != inner->size()) return Decision::no("permutations unknown");
    return Decision::yes();
  }
  void apply(Node& n, Rewriter& rw) const override {
    Node* inner = n.inputs[0]->producer;
    auto p_out = *perm_of(n), p_in = *perm_of(*inner);
    // y[i] = mid[p_out[i]] = x[p_in[p_out[i]]]
    std::vector<int64_t> q(p_out.size());
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = p_in[static_cast<size_t>(p_out[i])];
      identity &= q[i] == static_cast<int64_t>(i);
    }
    Value* x = inner->inputs[0];
    if (identity) {
      rw.replace(n.outputs[0], x);
    } else {
      n.inputs[0] = x;
      n.attrs["perm"] = q;
    }
    rw.erase_if_dead(inner);
  }
  std::string describe_apply(const Node&) const override { return "merged two Transposes"; }
};

// Transpose(x) whose axes of size other than 1 keep their order: the same elements in the same
// order, so a Reshape to the output shape (a view, no copy).
class TransposeAsReshape : public RewritePattern {
 public:
  std::string name() const override { return "transpose-as-reshape"; }
  std::vector<std::string> root_ops() const override { return {"Transpose"}; }
  Decision match(const Node& n, const Model&) const override {
    const Value* x = n.input(0);
    const Value* y = n.outputs[0];
    if (!x || !y || !x->shape.is_static() || !y->shape.is_static()) return Decision::no("shapes not static");
    auto perm = perm_of(n);
    if (!perm || perm->size() != x->shape.rank()) return Decision::no("permutation unknown");
    const auto dims = x->shape.static_dims();
    int64_t last = -1;
    for (int64_t axis : *perm) {
      if (axis < 0 || axis >= static_cast<int64_t>(dims.size())) return Decision::no("permutation out of range");
      if (dims[static_cast<size_t>(axis)] == 1) continue;
      if (axis < last) return Decision::no("moves axes of size other than 1");
      last = axis;
    }
    return Decision::yes();
  }
  void apply(Node& n, Rewriter& rw) const override {
    rw.set_insertion_point(&n);
    Node* r = reshape_to(rw, n.inputs[0], *n.outputs[0], n.name);
    r->name = n.name;
    rw.replace(n.outputs[0], r->outputs[0]);
  }
  std::string describe_apply(const Node&) const override { return "Transpose of size-1 axes as a Reshape (a view)"; }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_identity() {
  auto p = std::make_unique<PatternPass>(
      "eliminate-identity",
      "remove Identity, inference Dropout, same-dtype Cast, no-op reshapes; merge reshape and transpose pairs");
  p->add(std::make_unique<RemoveNoOp>());
  p->add(std::make_unique<CollapseReshapes>());
  p->add(std::make_unique<CollapseTransposes>());
  p->add(std::make_unique<TransposeAsReshape>());
  return p;
}

}  // namespace kiln::passes

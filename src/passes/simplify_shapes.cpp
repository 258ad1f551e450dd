// simplify-shapes: turns shape computations into constants where the dims they read are
// known (static, or bound by the compile's --dim bindings):
//   Shape(x) and Size(x) of a known-shaped x; Gather(Shape(x), const indices) that picks
//   only known dims of an otherwise symbolic shape; then every node downstream whose inputs
//   have all become constants and whose result is shape-sized (<= 4 KiB) — so a
//   Shape→Gather→Unsqueeze→Concat chain ends as one constant feeding the Reshape.
//
// Deliberately does not: fold anything that does not start from a Shape/Size it resolved
// (fold-constants does the rest), guess symbolic dims, or rewrite the Reshape itself.
#include <optional>
#include <unordered_set>

#include "builtin_passes.h"
#include "constant_eval.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr int64_t kMaxShapeBytes = 4096;

// dims [start, end) of a rank-r shape as Shape(start, end) reads them (opset 15 clamping).
std::pair<int64_t, int64_t> shape_slice(const Node& n, int64_t r) {
  auto clamp = [r](int64_t v) {
    if (v < 0) v += r;
    return std::min(std::max<int64_t>(v, 0), r);
  };
  return {clamp(n.attr_i("start", 0)), clamp(n.attr_i("end", r))};
}

// The static dims [b, e) of x, or nullopt naming the first unknown one in `why`.
std::optional<std::vector<int64_t>> known_dims(const Shape& s, int64_t b, int64_t e, std::string& why) {
  std::vector<int64_t> out;
  for (int64_t i = b; i < e; ++i) {
    const Dim& d = s.dims[static_cast<size_t>(i)];
    if (!d.is_static()) {
      why = str_cat("dim ", i, " is '", d.str(), "', not known");
      return std::nullopt;
    }
    out.push_back(d.value);
  }
  return out;
}

Tensor i64_vector(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

class SimplifyShapes : public Pass {
 public:
  std::string_view name() const override { return "simplify-shapes"; }
  std::string_view summary() const override {
    return "fold Shape/Size of known shapes, and the shape computations that read them, into constants";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_graph(*m.graph, [&](Graph& g) {
      Rewriter rw(m, g, nullptr);
      std::unordered_set<const Value*> made;  // values this pass turned into constants
      for (Node* n : node_list(g)) {
        if (rw.was_erased(n)) continue;
        std::string what = n->describe();
        std::optional<Tensor> value;
        Decision d = Decision::no("");
        if (n->domain.empty() && (n->op == "Shape" || n->op == "Size")) {
          d = resolve_shape_op(*n, ctx.bindings, value);
        } else if (n->domain.empty() && n->op == "Gather" && reads_shape_op(*n)) {
          d = resolve_gather_of_shape(*n, ctx.bindings, value);
        } else if (reads_any(*n, made)) {
          std::vector<Value*> outs = n->outputs;  // the Values stay, as initializers, after the fold
          d = fold_node(*n, rw, kMaxShapeBytes);
          if (d) {
            for (Value* o : outs)
              if (o) made.insert(o);
            ctx.remarks.push_back(Remark{std::string(name()), what, true, "folded shape computation"});
            changed = true;
          } else {
            ctx.decline(name(), *n, d);
          }
          continue;
        } else {
          continue;
        }
        if (!d) {
          if (!d.reason().empty()) ctx.decline(name(), *n, d);
          continue;
        }
        Value* out = n->outputs[0];
        rw.make_constant(out, std::move(*value));
        rw.erase_if_dead(n);
        made.insert(out);
        ctx.remarks.push_back(Remark{std::string(name()), what, true, "replaced by the constant it computes"});
        changed = true;
      }
    });
    return changed;
  }

 private:
  static bool reads_any(const Node& n, const std::unordered_set<const Value*>& vs) {
    for (const Value* v : n.inputs)
      if (v && vs.count(v)) return true;
    return false;
  }

  static bool reads_shape_op(const Node& n) {
    const Value* data = n.input(0);
    return data && data->producer && data->producer->op == "Shape" && data->producer->domain.empty();
  }

  static Decision resolve_shape_op(const Node& n, const DimBindings& b, std::optional<Tensor>& value) {
    const Value* x = n.input(0);
    if (!x || !x->shape.rank_known) return Decision::no("input rank is not known");
    if (!n.outputs[0]) return Decision::no("");
    Shape s = bind_dims(x->shape, b);
    std::string why;
    if (n.op == "Size") {
      auto dims = known_dims(s, 0, static_cast<int64_t>(s.rank()), why);
      if (!dims) return Decision::no(why);
      value = Tensor::scalar<int64_t>(numel_of(*dims));
      return Decision::yes();
    }
    auto [start, end] = shape_slice(n, static_cast<int64_t>(s.rank()));
    auto dims = known_dims(s, start, std::max(start, end), why);
    if (!dims) return Decision::no(why);
    value = i64_vector(*dims);
    return Decision::yes();
  }

  // Gather(Shape(x), idx, axis=0) where the picked dims are known, even if others are not.
  static Decision resolve_gather_of_shape(const Node& n, const DimBindings& b, std::optional<Tensor>& value) {
    const Node* shape_op = n.input(0)->producer;
    if (n.attr_i("axis", 0) != 0) return Decision::no("gathers along an axis other than 0");
    const Tensor* idx = constant_of(n.input(1));
    if (!idx) return Decision::no("indices are not a constant");
    const Value* x = shape_op->input(0);
    if (!x || !x->shape.rank_known) return Decision::no("rank of the shaped value is not known");
    Shape s = bind_dims(x->shape, b);
    auto [start, end] = shape_slice(*shape_op, static_cast<int64_t>(s.rank()));
    int64_t len = std::max<int64_t>(end - start, 0);
    std::vector<int64_t> picked;
    for (int64_t i : idx->to_int64_vector()) {
      if (i < 0) i += len;
      if (i < 0 || i >= len) return Decision::no(str_cat("index ", i, " is out of range"));
      const Dim& d = s.dims[static_cast<size_t>(start + i)];
      if (!d.is_static()) return Decision::no(str_cat("picks dim '", d.str(), "', which is not known"));
      picked.push_back(d.value);
    }
    value = Tensor::from_vector<int64_t>(idx->dims(), picked);
    return Decision::yes();
  }
};

}  // namespace

std::unique_ptr<Pass> make_simplify_shapes() { return std::make_unique<SimplifyShapes>(); }

}  // namespace kiln::passes

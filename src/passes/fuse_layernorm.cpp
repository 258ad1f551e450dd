// fuse-layernorm: layer normalisation written out in ops -> kiln.LayerNorm.
//
//   m = ReduceMean(x, axes)        d = Sub(x, m)         p = Pow(d, 2)  (or Mul(d, d))
//   v = ReduceMean(p, axes)        s = Sqrt(Add(v, eps)) n = Div(d, s)
//   y = Add(Mul(n, gamma), beta)   (gamma and beta optional, either operand order)
//   -> y = kiln.LayerNorm(x, gamma, beta) {axis, epsilon}
//
// This is what PyTorch exports for nn.LayerNorm before opset 17 (BERT, GPT-2). `axes` must be
// the trailing dims (both ReduceMeans alike, keepdims = 1), eps a scalar constant, gamma/beta
// must broadcast over the normalised dims only. Without gamma the scale is a ones constant
// (needs static normalised dims). Every intermediate must have no reader outside the
// pattern; otherwise it is declined with the reason. ONNX LayerNormalization whose Mean and
// InvStdDev outputs are unused becomes kiln.LayerNorm too (stash_type 1 only).
//
// Numerics: kiln.LayerNorm accumulates mean and variance in double; the decomposed f32 chain
// differs by float rounding only (checked at 1e-4 · max|y| on bert_base and gpt2).
#include <algorithm>
#include <set>

#include "fuse_match.h"
#include "fuse_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr std::string_view kName = "fuse-layernorm";

struct Match {
  Value* x = nullptr;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  int64_t axis = -1;
  float epsilon = 0;
  std::vector<Node*> nodes;
  Value* out = nullptr;
};

// Axes a ReduceMean (keepdims = 1) reduces, normalised to [0, rank); nullopt when unknown.
std::optional<std::vector<int64_t>> mean_axes(const Node& n) {
  if (n.attr_i("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  if (const Tensor* t = fuse::constant_value(n.input(1)))
    for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(t->as_int64(i));
  const Shape& s = n.inputs[0]->shape;
  if (axes.empty() || !s.rank_known) return std::nullopt;
  int64_t r = static_cast<int64_t>(s.rank());
  for (int64_t& a : axes) {
    if (a < -r || a >= r) return std::nullopt;
    if (a < 0) a += r;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// The first normalised axis when `axes` are exactly the trailing dims of a rank-r tensor.
std::optional<int64_t> trailing_axis(const std::vector<int64_t>& axes, int64_t r) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != r - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) return std::nullopt;
  return axes.front();
}

// The node reading v that is `op`, when v's only reader.
Node* only(const Value* v, std::string_view op) {
  Node* u = fuse::single_user(v);
  return u && fuse::is_onnx(*u, op) ? u : nullptr;
}

// An affine parameter broadcasting over the normalised dims only (rank <= normalised rank
// once leading 1s are dropped).
bool affine_ok(const Value* p, int64_t norm_rank) {
  if (!p->shape.rank_known) return false;
  int64_t r = static_cast<int64_t>(p->shape.rank());
  for (int64_t i = 0; i < r - norm_rank; ++i)
    if (p->shape[i] != Dim(1)) return false;
  return true;
}

Decision match(Node& mean, Match& m) {
  m.x = mean.inputs[0];
  if (!fuse::is_fusable_float(m.x->dtype)) return Decision::no("not a float tensor");
  auto axes = mean_axes(mean);
  if (!axes) return Decision::no("ReduceMean axes are not constant or keepdims = 0");
  int64_t r = static_cast<int64_t>(m.x->shape.rank());
  auto axis = trailing_axis(*axes, r);
  if (!axis) return Decision::no("the reduced axes are not the trailing dims");
  m.axis = *axis - r;  // negative: stays right when a batch dim is added
  // d = x - mean, read by the square and the division only.
  Node* sub = nullptr;
  for (Node* u : fuse::users(mean.outputs[0]))
    if (fuse::is_onnx(*u, "Sub") && u->inputs[0] == m.x && u->inputs[1] == mean.outputs[0]) sub = u;
  if (!sub || fuse::users(mean.outputs[0]).size() != 1) return Decision::no("no x - mean(x) with mean read once");
  Value* d = sub->outputs[0];
  Node *sq = nullptr, *div = nullptr;
  for (Node* u : fuse::users(d)) {
    if (fuse::is_onnx(*u, "Pow") && u->inputs[0] == d && fuse::is_scalar(u->inputs[1], 2.0)) sq = u;
    else if (fuse::is_onnx(*u, "Mul") && u->inputs[0] == d && u->inputs[1] == d) sq = u;
    else if (fuse::is_onnx(*u, "Div") && u->inputs[0] == d) div = u;
  }
  if (!sq || !div || !fuse::used_only_by(d, {sq, div})) return Decision::no("x - mean is not squared and divided (only)");
  Node* var = only(sq->outputs[0], "ReduceMean");
  if (!var || mean_axes(*var) != axes) return Decision::no("the square is not averaged over the same axes");
  Node* add_eps = only(var->outputs[0], "Add");
  auto eps = add_eps ? fuse::scalar_constant(fuse::other_operand(*add_eps, var->outputs[0])) : std::nullopt;
  if (!eps) return Decision::no("the variance is not plus a scalar constant epsilon");
  m.epsilon = static_cast<float>(*eps);
  Node* sqrt = only(add_eps->outputs[0], "Sqrt");
  if (!sqrt || fuse::single_user(sqrt->outputs[0]) != div || div->inputs[1] != sqrt->outputs[0])
    return Decision::no("(x - mean) is not divided by sqrt(variance + epsilon)");
  m.nodes = {&mean, sub, sq, var, add_eps, sqrt, div};
  m.out = div->outputs[0];
  int64_t norm_rank = r - *axis;
  if (Node* mul = only(m.out, "Mul")) {
    Value* g = fuse::other_operand(*mul, m.out);
    if (g && affine_ok(g, norm_rank)) {
      m.gamma = g;
      m.nodes.push_back(mul);
      m.out = mul->outputs[0];
      if (Node* add = only(m.out, "Add")) {
        Value* b = fuse::other_operand(*add, m.out);
        if (b && affine_ok(b, norm_rank)) {
          m.beta = b;
          m.nodes.push_back(add);
          m.out = add->outputs[0];
        }
      }
    }
  }
  return Decision::yes();
}

class FuseLayerNorm : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "decomposed layer normalisation (ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add) and LayerNormalization -> kiln.LayerNorm";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_compiled_graph(*m.graph, [&](Graph& g) { changed |= run_graph(m, g, ctx); });
    return changed;
  }

  bool run_graph(Model& m, Graph& g, PassContext& ctx) {
    std::vector<Node*> roots;
    for (const auto& n : g.nodes())
      if (fuse::is_onnx(*n, "ReduceMean") || fuse::is_onnx(*n, "LayerNormalization")) roots.push_back(n.get());
    bool changed = false;
    std::set<const Node*> removed;  // the variance ReduceMean of a match is a root too
    for (Node* root : roots) {
      if (removed.count(root)) continue;
      if (fuse::is_onnx(*root, "LayerNormalization")) {
        changed |= convert_onnx(m, *root, ctx);
        continue;
      }
      Match mt;
      Decision d = match(*root, mt);
      if (!d) {
        // Only a mean that is subtracted from its input is a layer-norm candidate worth a remark.
        std::vector<Node*> readers = fuse::users(root->outputs[0]);
        if (std::any_of(readers.begin(), readers.end(), [](const Node* u) { return fuse::is_onnx(*u, "Sub"); }))
          ctx.decline(kName, *root, d);
        continue;
      }
      Value* scale = mt.gamma;
      if (!scale) {
        std::vector<int64_t> norm;
        for (size_t i = mt.x->shape.rank() + mt.axis; i < mt.x->shape.rank(); ++i) {
          if (!mt.x->shape[i].is_static()) {
            ctx.decline(kName, *root, Decision::no("no gamma and the normalised dims are not static"));
            norm.clear();
            break;
          }
          norm.push_back(mt.x->shape[i].value);
        }
        if (norm.empty()) continue;
        scale = fuse::add_f32_constant(g, root->name + ".ones", norm, std::vector<float>(numel_of(norm), 1.f));
      }
      fuse::import_kiln_domain(m);
      std::vector<Value*> ins = {mt.x, scale};
      if (mt.beta) ins.push_back(mt.beta);
      std::vector<const Node*> gone;
      Node* ln = fuse::replace_group(g, mt.nodes, mt.out, "LayerNorm", ins, {{"axis", mt.axis}, {"epsilon", mt.epsilon}},
                                     std::string(ops::kKilnDomain), *root, &gone);
      removed.insert(gone.begin(), gone.end());
      size_t n_nodes = mt.nodes.size();
      ctx.applied(kName, *ln, str_cat(n_nodes, " nodes -> LayerNorm"));
      changed = true;
    }
    return changed;
  }

 private:
  static bool convert_onnx(Model& m, Node& n, PassContext& ctx) {
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (n.outputs[i] && (!fuse::users(n.outputs[i]).empty() || fuse::is_graph_output(n.outputs[i]))) {
        ctx.decline(kName, n, Decision::no("its Mean/InvStdDev outputs are used"));
        return false;
      }
    if (n.attr_i("stash_type", 1) != 1) {
      ctx.decline(kName, n, Decision::no("stash_type is not 1 (float)"));
      return false;
    }
    fuse::import_kiln_domain(m);
    Graph& g = *n.owner;
    std::map<std::string, Attribute> attrs = {{"axis", n.attr_i("axis", -1)}, {"epsilon", n.attr_f("epsilon", 1e-5f)}};
    Node* ln = fuse::replace_group(g, {&n}, n.outputs[0], "LayerNorm", n.inputs, std::move(attrs),
                                   std::string(ops::kKilnDomain), n);
    ctx.applied(kName, *ln, "LayerNormalization -> LayerNorm");
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_layernorm() { return std::make_unique<FuseLayerNorm>(); }

}  // namespace kiln::passes

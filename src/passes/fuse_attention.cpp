// fuse-attention: scaled dot-product attention written out in ops -> kiln.Attention.
//
//   s = MatMul(Q, Kt)                      Kt = Kᵀ of the last two dims (a Transpose, or any
//   s = s · c | s / c          (any number)     [.., D, Sk] tensor)
//   s = s + mask               (additive; either operand order)
//     | Where(cond, fill, s) | Where(cond, s, fill)    (fill -inf or <= -1e30)
//   p = Softmax(s, last axis)
//   y = MatMul(p, V)
//   -> y = kiln.Attention(Q, K, V, mask?) {scale, causal}
//
// A scalar Mul/Div on Q or Kt before the product (BERT scales Q) is folded into `scale` too.
// K is recovered from Kt: when Kt = Transpose(x, perm), K = Transpose(x, perm with its last two
// entries swapped), or x itself when that is the identity (GPT-2 with a KV cache: the cache
// is already [B,H,Sk,D]). Q, K, V of rank 3 ([B·H, S, D], torch's nn.MultiheadAttention) are
// given a leading 1 (Unsqueeze) and the result squeezed back. A Where mask proved causal by
// fuse_causal_mask.h becomes causal = 1 and its buffer and slices go; otherwise it is turned into
// an additive mask Where(cond, fill, 0), equivalent because fill + score == fill in f32 for
// |score| < 1e30 (and -inf stays -inf).
//
// Declined with a reason: the softmax not over the last axis, any other op between the two
// MatMuls, a second mask, an intermediate read elsewhere, batch dims that differ between Q, K
// and V (broadcasting), ranks other than 3 and 4, non-float dtypes, a small Where fill.
#include <cmath>
#include <set>

#include "fuse_causal_mask.h"
#include "fuse_match.h"
#include "fuse_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr std::string_view kName = "fuse-attention";

struct Match {
  Node* softmax = nullptr;
  Node* qk = nullptr;
  Node* pv = nullptr;
  Value* q = nullptr;
  Value* kt = nullptr;
  double scale = 1;
  Value* additive = nullptr;          // Add mask
  Node* where = nullptr;              // Where mask
  Value* cond = nullptr;
  bool masked_when = true;            // cond value that masks a score
  double fill = 0;
  bool causal = false;
  std::vector<Node*> nodes;           // replaced nodes
};

// A scalar Mul/Div by a constant with `v` as the scaled operand: the factor it applies.
std::optional<double> scale_of(const Node& n, const Value* v) {
  if (fuse::is_onnx(n, "Mul")) {
    Value* c = fuse::other_operand(n, v);
    if (auto s = fuse::scalar_constant(c)) return *s;
  }
  if (fuse::is_onnx(n, "Div") && n.inputs[0] == v)
    if (auto s = fuse::scalar_constant(n.inputs[1]); s && *s != 0) return 1.0 / *s;
  return std::nullopt;
}

// True when v comes from a MatMul through scale/mask ops only (which operand of an Add is the
// score chain).
bool from_matmul(const Value* v, int depth = 0) {
  const Node* p = v ? v->producer : nullptr;
  if (!p || depth > 8) return false;
  if (fuse::is_onnx(*p, "MatMul")) return true;
  if (fuse::is_onnx(*p, "Mul") || fuse::is_onnx(*p, "Div") || fuse::is_onnx(*p, "Add"))
    return from_matmul(p->inputs[0], depth + 1) || from_matmul(p->inputs[1], depth + 1);
  if (fuse::is_onnx(*p, "Where")) return from_matmul(p->inputs[1], depth + 1) || from_matmul(p->inputs[2], depth + 1);
  return false;
}

// Walks from the softmax input back to the Q·Kᵀ MatMul.
Decision match_scores(Match& m) {
  Value* cur = m.softmax->inputs[0];
  Node* reader = m.softmax;
  for (int depth = 0; depth < 8; ++depth) {
    if (fuse::single_user(cur) != reader)
      return Decision::no(str_cat("'", cur->name, "' is read outside the attention pattern"));
    Node* p = cur->producer;
    if (!p) return Decision::no("the scores do not come from a MatMul");
    if (fuse::is_onnx(*p, "MatMul")) {
      m.qk = p;
      m.nodes.push_back(p);
      return Decision::yes();
    }
    Value* next = nullptr;
    if (auto c = scale_of(*p, p->inputs[0]); c && !fuse::is_constant(p->inputs[0])) {
      m.scale *= *c;
      next = p->inputs[0];
    } else if (auto c1 = scale_of(*p, p->inputs[1]); c1 && fuse::is_onnx(*p, "Mul")) {
      m.scale *= *c1;
      next = p->inputs[1];
    } else if (fuse::is_onnx(*p, "Add")) {
      if (m.additive || m.where) return Decision::no("more than one mask");
      int chain = from_matmul(p->inputs[0]) ? 0 : 1;
      next = p->inputs[chain];
      m.additive = p->inputs[1 - chain];
    } else if (fuse::is_onnx(*p, "Where")) {
      if (m.additive || m.where) return Decision::no("more than one mask");
      auto f1 = fuse::scalar_constant(p->inputs[1]), f2 = fuse::scalar_constant(p->inputs[2]);
      if (f1.has_value() == f2.has_value()) return Decision::no("Where does not pick between the scores and a constant");
      m.where = p;
      m.cond = p->inputs[0];
      m.masked_when = f1.has_value();
      m.fill = f1 ? *f1 : *f2;
      next = p->inputs[f1 ? 2 : 1];
      if (!(std::isinf(m.fill) && m.fill < 0) && m.fill > -1e30)
        return Decision::no(str_cat("Where fill ", m.fill, " is not large enough to vanish in the softmax"));
    } else {
      return Decision::no(str_cat(p->op, " between the scores MatMul and the Softmax"));
    }
    m.nodes.push_back(p);
    reader = p;
    cur = next;
  }
  return Decision::no("too many ops between the scores MatMul and the Softmax");
}

// A scalar scale on Q or Kt read only by the product: folded into m.scale.
Value* absorb_prescale(Match& m, Value* v) {
  Node* p = v->producer;
  if (!p || fuse::single_user(v) != m.qk || !(fuse::is_onnx(*p, "Mul") || fuse::is_onnx(*p, "Div"))) return v;
  for (size_t i = 0; i < 2; ++i) {
    if (fuse::is_constant(p->inputs[i])) continue;
    if (auto c = scale_of(*p, p->inputs[i])) {
      m.scale *= *c;
      m.nodes.push_back(p);
      return p->inputs[i];
    }
  }
  return v;
}

bool known_equal(const Dim& a, const Dim& b) { return !a.is_unknown() && a == b; }

Decision match(Node& softmax, int64_t opset, Match& m) {
  m.softmax = &softmax;
  const Shape& s = softmax.inputs[0]->shape;
  if (!s.rank_known) return Decision::no("the scores' rank is unknown");
  int64_t r = static_cast<int64_t>(s.rank());
  int64_t axis = softmax.attr_i("axis", opset >= 13 ? -1 : 1);
  if ((axis < 0 ? axis + r : axis) != r - 1) return Decision::no("Softmax is not over the last axis");
  if (!fuse::is_fusable_float(softmax.outputs[0]->dtype)) return Decision::no("not a float tensor");
  Decision d = match_scores(m);
  if (!d) return d;
  m.nodes.push_back(&softmax);
  Node* pv = fuse::single_user(softmax.outputs[0]);
  if (!pv || !fuse::is_onnx(*pv, "MatMul") || pv->inputs[0] != softmax.outputs[0])
    return Decision::no("the probabilities are not (only) multiplied by V");
  m.pv = pv;
  m.nodes.push_back(pv);
  m.q = absorb_prescale(m, m.qk->inputs[0]);
  m.kt = absorb_prescale(m, m.qk->inputs[1]);
  const Shape &q = m.q->shape, &kt = m.kt->shape, &v = pv->inputs[1]->shape;
  if (!q.rank_known || !kt.rank_known || !v.rank_known || q.rank() != kt.rank() || q.rank() != v.rank() ||
      (q.rank() != 3 && q.rank() != 4))
    return Decision::no("Q, Kᵀ and V are not all of rank 3 or all of rank 4");
  size_t n = q.rank();
  for (size_t i = 0; i + 2 < n; ++i)
    if (!known_equal(q[i], kt[i]) || !known_equal(q[i], v[i]))
      return Decision::no("Q, K and V differ in batch/head dims (broadcasting is not fused)");
  if (!known_equal(q[n - 1], kt[n - 2]) || !known_equal(kt[n - 1], v[n - 2]))
    return Decision::no("head size or key length do not match between Q, Kᵀ and V");
  if (m.additive) {
    auto b = broadcast_shapes(m.qk->outputs[0]->shape, m.additive->shape);
    if (!b || *b != m.qk->outputs[0]->shape || m.additive->shape.rank() > n)
      return Decision::no("the mask does not broadcast to the scores");
  }
  if (m.where) {
    Decision c = fuse::is_causal_mask(m.cond, m.masked_when, m.qk->outputs[0]);
    m.causal = static_cast<bool>(c);
    if (!m.causal) {
      auto b = broadcast_shapes(m.qk->outputs[0]->shape, m.cond->shape);
      if (!b || *b != m.qk->outputs[0]->shape || m.cond->shape.rank() > n)
        return Decision::no(str_cat("not causal (", c.reason(), ") and the condition does not broadcast to the scores"));
    }
  }
  return Decision::yes();
}

class FuseAttention : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "MatMul -> scale -> mask -> Softmax -> MatMul -> kiln.Attention (causal masks recognised)";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_compiled_graph(*m.graph, [&](Graph& g) { changed |= run_graph(m, g, ctx); });
    if (changed) ops::infer_shapes(m, ctx.bindings);  // the new Transpose/Unsqueeze/Where results
    return changed;
  }

  bool run_graph(Model& m, Graph& g, PassContext& ctx) {
    std::vector<Node*> roots;
    for (const auto& n : g.nodes())
      if (fuse::is_onnx(*n, "Softmax")) roots.push_back(n.get());
    std::set<const Node*> removed;
    bool changed = false;
    for (Node* root : roots) {
      if (removed.count(root)) continue;
      Match mt;
      Decision d = match(*root, m.opset(""), mt);
      if (!d) {
        ctx.decline(kName, *root, d);
        continue;
      }
      fuse::import_kiln_domain(m);
      rewrite(m, mt, ctx, removed);
      changed = true;
    }
    return changed;
  }

 private:
  // Unsqueeze/Squeeze of axis 0, with axes as an input from opset 13 and an attribute before.
  // `axes`: the [0] constant (opset >= 13) or nullptr.
  static Node* reshape_axis0(Graph& g, Node* before, const std::string& op, Value* x, Value* axes) {
    std::string out = g.unique_name(x->name + (op == "Unsqueeze" ? ".4d" : ".3d"));
    if (axes) return fuse::insert_before(g, before, op, {x, axes}, {out});
    return fuse::insert_before(g, before, op, {x}, {out}, {{"axes", std::vector<int64_t>{0}}});
  }

  // K from Kᵀ: undo the transpose of the last two dims.
  static Value* untranspose(Graph& g, Node* before, Value* kt, std::vector<Node*>& candidates) {
    size_t r = kt->shape.rank();
    std::vector<int64_t> perm(r);
    for (size_t i = 0; i < r; ++i) perm[i] = static_cast<int64_t>(i);
    Value* src = kt;
    if (Node* t = fuse::produced_by(kt, "Transpose")) {
      perm = t->attr_ints("perm", {});
      if (perm.size() != r) {  // default perm reverses the dims
        perm.resize(r);
        for (size_t i = 0; i < r; ++i) perm[i] = static_cast<int64_t>(r - 1 - i);
      }
      src = t->inputs[0];
      candidates.push_back(t);
    }
    std::swap(perm[r - 1], perm[r - 2]);
    bool identity = true;
    for (size_t i = 0; i < r; ++i) identity &= perm[i] == static_cast<int64_t>(i);
    if (identity) return src;
    Node* t = fuse::insert_before(g, before, "Transpose", {src}, {g.unique_name(kt->name + ".k")}, {{"perm", perm}});
    return t->outputs[0];
  }

  // The mask condition's computation (slices, shape arithmetic), for removal once unused.
  static void collect_producers(const Value* v, std::vector<Node*>& out, int depth = 0) {
    if (!v || !v->producer || depth > 16) return;
    out.push_back(v->producer);
    for (const Value* in : v->producer->inputs) collect_producers(in, out, depth + 1);
  }

  static void rewrite(Model& m, Match& mt, PassContext& ctx, std::set<const Node*>& removed) {
    Graph& g = *mt.pv->owner;
    Node* at = mt.pv;  // the last node of the pattern: everything it needs is defined before it
    std::vector<Node*> candidates = mt.nodes;
    Value* k = untranspose(g, at, mt.kt, candidates);
    Value* q = mt.q;
    Value* v = mt.pv->inputs[1];
    Value* mask = mt.additive;
    if (mt.where && mt.causal) {
      collect_producers(mt.cond, candidates);
    } else if (mt.where) {
      float fill = static_cast<float>(mt.fill);
      Value* f = fuse::add_f32_constant(g, "mask_fill", {}, {fill});
      Value* zero = fuse::add_f32_constant(g, "mask_zero", {}, {0.f});
      Node* w = fuse::insert_before(g, at, "Where", {mt.cond, mt.masked_when ? f : zero, mt.masked_when ? zero : f},
                                    {g.unique_name(mt.cond->name + ".additive")});
      mask = w->outputs[0];
    }
    bool rank3 = q->shape.rank() == 3;
    Value* axes = rank3 && m.opset("") >= 13
                      ? g.add_initializer(g.unique_name("axis0"), Tensor::from_vector<int64_t>({1}, {0}))
                      : nullptr;
    if (rank3) {
      q = reshape_axis0(g, at, "Unsqueeze", q, axes)->outputs[0];
      k = reshape_axis0(g, at, "Unsqueeze", k, axes)->outputs[0];
      v = reshape_axis0(g, at, "Unsqueeze", v, axes)->outputs[0];
    }
    std::vector<Value*> ins = {q, k, v};
    if (mask) ins.push_back(mask);
    std::map<std::string, Attribute> attrs = {{"scale", static_cast<float>(mt.scale)}};
    if (mt.causal) attrs["causal"] = int64_t{1};
    Value* out = mt.pv->outputs[0];
    std::string name = mt.softmax->name;
    Node* att = fuse::insert_before(g, at, "Attention", ins, {g.unique_name(out->name + ".attention")}, std::move(attrs),
                                    "", std::string(ops::kKilnDomain));
    if (rank3) {
      Node* sq = reshape_axis0(g, at, "Squeeze", att->outputs[0], axes);
      fuse::take_over(sq, 0, out);
    } else {
      fuse::take_over(att, 0, out);
    }
    std::string what = str_cat(mt.nodes.size(), " nodes -> Attention (scale ", mt.scale,
                               mt.causal ? ", causal" : mask ? ", mask" : "", rank3 ? ", rank 3 unsqueezed" : "", ")");
    for (const Node* n : fuse::remove_dead(g, candidates)) removed.insert(n);
    att->name = name;
    ctx.applied(kName, *att, what);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_attention() { return std::make_unique<FuseAttention>(); }

}  // namespace kiln::passes

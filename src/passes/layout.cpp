// layout: removes transposes or moves them where they cost nothing.
//
//   Transpose(Transpose(x, p1), p2)  -> x when the permutations compose to the identity,
//                                       else one Transpose(x, p1∘p2)
//   MatMul(A, Transpose(B, swap))    -> kiln.FusedMatMul(A, B) {trans_b = 1}   (swap = the last
//   FusedMatMul(A, Transpose(B, swap)) -> trans_b toggled                        two dims swapped,
//   Gemm(A, Transpose(B, [1,0]))     -> transB toggled                          the rest in place)
//   f(Transpose(x, p), ...)          -> Transpose(f(x, ...), p)   for elementwise f whose other
//                                       operands are scalars or Transposes with the same p
//
// The last rule sinks transposes toward the graph outputs, where they meet (and cancel) other
// transposes or a MatMul that absorbs them; it only applies when f does not broadcast the
// transposed operand to a bigger shape, so no transpose ever moves onto more data. Rules repeat
// until nothing changes. Blocked channel layouts (NCHW8c) between direct convolutions are the
// lowering's (lower/blocked_layout.cpp: it needs the tactics). Not done here (a later step):
// hoisting transposes toward the graph inputs.
#include <algorithm>
#include <numeric>
#include <set>

#include "fuse_match.h"
#include "fuse_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/passes/rewrite.h"
#include "kiln/ops/op.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr std::string_view kName = "layout";
constexpr int kMaxRounds = 16;

using Perm = std::vector<int64_t>;

// The permutation of a Transpose (the default reverses the dims); empty when the rank is unknown.
Perm perm_of(const Node& t) {
  Perm p = t.attr_ints("perm", {});
  if (!p.empty()) return p;
  const Shape& s = t.inputs[0]->shape;
  if (!s.rank_known) return {};
  p.resize(s.rank());
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>(p.size() - 1 - i);
  return p;
}

bool is_identity(const Perm& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Swaps the last two dims and keeps the others in place.
bool is_last_two_swap(const Perm& p) {
  size_t r = p.size();
  if (r < 2 || p[r - 1] != static_cast<int64_t>(r - 2) || p[r - 2] != static_cast<int64_t>(r - 1)) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

size_t output_index(const Node& n, const Value* v) {
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] == v) return i;
  throw Error(str_cat(n.describe(), " does not produce '", v->name, "'"));
}

class Layout : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "cancels transpose pairs, folds transposed B into MatMul/Gemm, sinks transposes through elementwise ops";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_compiled_graph(*m.graph, [&](Graph& g) { changed |= run_graph(m, g, ctx); });
    if (changed) ops::infer_shapes(m, ctx.bindings);  // the moved ops' results get their shapes
    return changed;
  }

 private:
  static bool run_graph(Model& m, Graph& g, PassContext& ctx) {
    bool changed = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      bool any = false;
      const std::vector<Node*> nodes = node_list(g);
      std::set<const Node*> removed;
      for (Node* n : nodes) {
        if (removed.count(n)) continue;
        std::vector<const Node*> gone;
        if (fuse::is_onnx(*n, "Transpose")) any |= compose(g, *n, ctx, gone);
        else if (fuse::is_onnx(*n, "MatMul") || fuse::is_onnx(*n, "Gemm") ||
                 (n->domain == ops::kKilnDomain && n->op == "FusedMatMul"))
          any |= absorb_into_matmul(m, *n, ctx, gone);
        else if (fuse::is_elementwise(*n))
          any |= sink(g, *n, ctx, gone);
        removed.insert(gone.begin(), gone.end());
      }
      changed |= any;
      if (!any) break;
    }
    return changed;
  }

  // outer = Transpose(inner = Transpose(x)).
  static bool compose(Graph& g, Node& outer, PassContext& ctx, std::vector<const Node*>& gone) {
    Node* inner = fuse::produced_by(outer.inputs[0], "Transpose");
    if (!inner) return false;
    Perm p1 = perm_of(*inner), p2 = perm_of(outer);
    if (p1.empty() || p1.size() != p2.size()) return false;
    Perm c(p2.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = p1[p2[i]];
    Value* x = inner->inputs[0];
    Value* y = outer.outputs[0];
    if (is_identity(c)) {
      if (!fuse::is_graph_output(y)) {
        g.replace_all_uses(y, x);
      } else if (x->producer && x->owner == &g && !fuse::is_graph_output(x)) {
        // y must keep its name as a graph output: x's producer makes y, x's readers read y.
        g.replace_all_uses(x, y);
        fuse::take_over(x->producer, output_index(*x->producer, x), y);
      } else {
        ctx.decline(kName, outer, Decision::no("the transposes cancel, but both x and the result are graph edges"));
        return false;
      }
      ctx.applied(kName, outer, "transpose pair cancelled");
    } else {
      Node* t = fuse::insert_before(g, &outer, "Transpose", {x}, {g.unique_name(y->name + ".composed")}, {{"perm", c}});
      fuse::take_over(t, 0, y);
      ctx.applied(kName, *t, "two transposes composed into one");
    }
    gone = fuse::remove_dead(g, {&outer, inner});
    return true;
  }

  // B given as a transpose of its last two dims becomes trans_b / transB of the product.
  static bool absorb_into_matmul(Model& m, Node& mm, PassContext& ctx, std::vector<const Node*>& gone) {
    Node* t = fuse::produced_by(mm.input(1), "Transpose");
    if (!t || !is_last_two_swap(perm_of(*t))) return false;
    Graph& g = *mm.owner;
    Value* b = t->inputs[0];
    if (fuse::is_onnx(mm, "Gemm")) {
      mm.attrs["transB"] = int64_t{mm.attr_i("transB", 0) ? 0 : 1};
      mm.inputs[1] = b;
    } else if (fuse::is_onnx(mm, "MatMul")) {
      fuse::import_kiln_domain(m);
      Node* f = fuse::replace_group(g, {&mm}, mm.outputs[0], "FusedMatMul", {mm.inputs[0], b},
                                    {{"trans_b", int64_t{1}}}, std::string(ops::kKilnDomain), mm, &gone);
      ctx.applied(kName, *f, "transposed B folded: MatMul -> FusedMatMul {trans_b=1}");
      for (const Node* n : fuse::remove_dead(g, {t})) gone.push_back(n);
      return true;
    } else {
      mm.attrs["trans_b"] = int64_t{mm.attr_i("trans_b", 0) ? 0 : 1};
      mm.inputs[1] = b;
    }
    ctx.applied(kName, mm, "transposed B folded into the product");
    gone = fuse::remove_dead(g, {t});
    return true;
  }

  // f(Transpose(x, p), scalars / Transpose(_, p)) -> Transpose(f(x, ...), p).
  static bool sink(Graph& g, Node& f, PassContext& ctx, std::vector<const Node*>& gone) {
    if (f.outputs.size() != 1 || !f.outputs[0]) return false;
    Perm p;
    std::vector<Node*> transposes;
    for (Value* v : f.inputs) {
      if (!v) continue;
      if (fuse::scalar_constant(v) || (fuse::constant_value(v) && fuse::constant_value(v)->numel() == 1)) continue;
      Node* t = fuse::produced_by(v, "Transpose");
      if (!t) return false;
      Perm tp = perm_of(*t);
      if (tp.empty() || (!p.empty() && tp != p)) return false;
      p = tp;
      transposes.push_back(t);
    }
    if (transposes.empty()) return false;
    // Only when every transpose has f as its only reader (otherwise it stays and one is added)
    // and f's output is no bigger than the transposed operands.
    for (Node* t : transposes)
      if (fuse::single_user(t->outputs[0]) != &f || !(t->outputs[0]->shape == f.outputs[0]->shape)) return false;
    std::vector<Value*> ins;
    for (Value* v : f.inputs) {
      Node* t = v ? fuse::produced_by(v, "Transpose") : nullptr;
      ins.push_back(t && std::find(transposes.begin(), transposes.end(), t) != transposes.end() ? t->inputs[0] : v);
    }
    Value* y = f.outputs[0];
    Node* moved = fuse::insert_before(g, &f, f.op, ins, {g.unique_name(y->name + ".untransposed")}, f.attrs, "", f.domain);
    moved->outputs[0]->dtype = y->dtype;
    Node* t = fuse::insert_before(g, &f, "Transpose", {moved->outputs[0]}, {g.unique_name(y->name + ".t")}, {{"perm", p}});
    fuse::take_over(t, 0, y);
    std::string name = f.name;
    std::vector<Node*> old = {&f};
    old.insert(old.end(), transposes.begin(), transposes.end());
    gone = fuse::remove_dead(g, old);
    moved->name = name;
    ctx.applied(kName, *moved, "transpose moved below " + moved->op);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_layout() { return std::make_unique<Layout>(); }

}  // namespace kiln::passes

// Plain Conv / MatMul / Gemm left by the passes (at -O0/-O1, or where fusion declined) become
// their kiln.Fused* form without an epilogue, so they reach the same packed kernels.
#include "lower_internal.h"

#include "kiln/ops/kiln_ops.h"

namespace kiln::lower {
namespace {

bool is_f32_const(const Value* v) { return v && v->is_constant() && v->initializer->dtype() == DType::f32; }

// Replaces `n` by a node of op `op` (domain kiln) with the given inputs/attrs, keeping its output
// value (so users and graph outputs stay wired) and its name.
void replace_node(Graph& g, Node* n, const std::string& op, std::vector<Value*> inputs,
                  std::map<std::string, Attribute> attrs) {
  n->op = op;
  n->domain = std::string(ops::kKilnDomain);
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
}

// Gemm: Y = alpha op(A) op(B) + beta C. Lowerable when A is not transposed, B is a constant
// matrix and C (if any) is a constant that broadcasts per output column.
std::string gemm_unsupported(const Node& n) {
  if (n.attr_i("transA", 0) != 0) return "transA=1 (the packed kernel reads A row-major)";
  if (!is_f32_const(n.input(1))) return "B is not an f32 constant";
  if (const Value* c = n.input(2)) {
    if (!is_f32_const(c)) return "C is not a constant";
    const auto& d = c->initializer->dims();
    int64_t N = n.attr_i("transB", 0) ? n.input(1)->initializer->dim(0) : n.input(1)->initializer->dim(1);
    bool per_col = (d.size() == 1 && (d[0] == N || d[0] == 1)) || (d.size() == 2 && d[0] == 1 && (d[1] == N || d[1] == 1)) ||
                   d.empty();
    if (!per_col) return "C does not broadcast per output column";
  }
  return "";
}

Value* bias_from_gemm_c(Graph& g, const Node& n, int64_t N) {
  const Value* c = n.input(2);
  if (!c) return nullptr;
  float beta = n.attr_f("beta", 1.f);
  const Tensor& ct = *c->initializer;
  Tensor b(DType::f32, {N});
  for (int64_t j = 0; j < N; ++j) b.data<float>()[j] = beta * ct.data<float>()[ct.numel() == 1 ? 0 : j];
  return g.add_initializer(g.unique_name(n.name + ".bias"), std::move(b));
}

}  // namespace

int canonicalize(Graph& g, std::vector<KernelChoice>& notes) {
  int changed = 0;
  for (const auto& up : g.nodes()) {
    Node* n = up.get();
    if (!n->domain.empty()) continue;
    if (n->op == "Conv") {
      const Value* x = n->input(0);
      if (!is_f32_const(n->input(1)) || !x || x->dtype != DType::f32 || !x->shape.rank_known || x->shape.rank() != 4) {
        notes.push_back({n->name, n->op, "reference", "only 2-D f32 convolutions with a constant weight are lowered"});
        continue;
      }
      std::map<std::string, Attribute> attrs = n->attrs;
      replace_node(g, n, "FusedConv", {n->inputs[0], n->inputs[1], n->input(2)}, std::move(attrs));
      ++changed;
    } else if (n->op == "MatMul") {
      const Value* b = n->input(1);
      if (!is_f32_const(b) || b->initializer->rank() != 2 || n->input(0)->dtype != DType::f32) {
        notes.push_back({n->name, n->op, "reference", "MatMul whose B is not a constant f32 matrix runs as a plain GEMM"});
        continue;
      }
      replace_node(g, n, "FusedMatMul", {n->inputs[0], n->inputs[1]}, {});
      ++changed;
    } else if (n->op == "Gemm") {
      std::string why = gemm_unsupported(*n);
      if (!why.empty()) {
        notes.push_back({n->name, n->op, "reference", "Gemm not lowered: " + why});
        continue;
      }
      bool tb = n->attr_i("transB", 0) != 0;
      const Tensor& bt = *n->input(1)->initializer;
      int64_t N = tb ? bt.dim(0) : bt.dim(1);
      Value* bias = bias_from_gemm_c(g, *n, N);
      std::map<std::string, Attribute> attrs{{"trans_b", int64_t{tb}}, {"alpha", n->attr_f("alpha", 1.f)}};
      replace_node(g, n, "FusedMatMul", {n->inputs[0], n->inputs[1], bias}, std::move(attrs));
      if (!bias) n->inputs.resize(2);
      ++changed;
    }
  }
  return changed;
}

}  // namespace kiln::lower

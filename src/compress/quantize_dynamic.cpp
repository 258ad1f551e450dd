// quantize-dynamic: kiln.FusedMatMul, MatMul and Gemm with a constant float weight -> kiln.QMatMul
// whose f32 input is quantized to u8 on every run (DynamicQuantizeLinear's range and rounding) and
// whose weight is int8, symmetric per output column. Bias, residual and activation stay in the node's
// f32 epilogue. Runs after the -O2 fusions, so the epilogue chains are already folded in.
//
// Declines (with the reason for --explain): a packed or non-constant weight, a weight that is not
// a matrix, and a bias that is not one value per output column.
#include "kiln/compress/quantize.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/passes/rewrite.h"

namespace kiln::compress {
namespace {

using passes::constant_of;

constexpr std::string_view kName = "quantize-dynamic";

class QuantizeDynamic : public passes::Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "FusedMatMul/MatMul/Gemm with a constant weight -> kiln.QMatMul (int8 weight, input quantized per run)";
  }
  bool run(Model& m, passes::PassContext& ctx) override {
    Graph& g = *m.graph;
    passes::Rewriter rw(m, g, nullptr);
    bool changed = false;
    for (Node* n : passes::node_list(g)) {
      const bool fused = n->domain == ops::kKilnDomain && n->op == "FusedMatMul";
      if (!fused && !(n->domain.empty() && (n->op == "MatMul" || n->op == "Gemm"))) continue;
      const std::string what = n->describe();  // n is erased when the rewrite succeeds
      passes::Decision d = quantize(*n, rw);
      if (!d) {
        ctx.decline(kName, *n, d);
      } else {
        ctx.remarks.push_back({std::string(kName), what, true, "-> kiln.QMatMul (dynamic u8 input, i8 weight)"});
        changed = true;
      }
    }
    if (changed) m.opsets[std::string(ops::kKilnDomain)] = ops::kKilnOpsetVersion;
    return changed;
  }

 private:
  passes::Decision quantize(Node& n, passes::Rewriter& rw) {
    if (n.has_attr("packed")) return passes::Decision::no("the weight is already packed for the float kernel");
    const bool gemm = n.op == "Gemm";
    const Value* a = n.input(0);
    const Tensor* w = constant_of(n.input(1));
    if (!a || a->dtype != DType::f32) return passes::Decision::no("the input is not f32");
    if (!w || w->dtype() != DType::f32 || w->rank() != 2) return passes::Decision::no("the weight is not a constant f32 matrix");
    if (gemm && n.attr_i("transA", 0) != 0) return passes::Decision::no("Gemm with transA");
    const bool trans_b = n.attr_i(gemm ? "transB" : "trans_b", 0) != 0;
    const int64_t N = trans_b ? w->dim(0) : w->dim(1);
    Value* bias = n.input(2);
    if (gemm && bias) {
      // Gemm's beta * C as a per-column constant bias.
      const Tensor* c = constant_of(bias);
      if (!c || c->dtype() != DType::f32 || (c->numel() != N && c->numel() != 1))
        return passes::Decision::no("Gemm's C is not a per-column f32 constant");
      Tensor b(DType::f32, {N});
      for (int64_t j = 0; j < N; ++j) b.data<float>()[j] = n.attr_f("beta", 1.f) * c->data<float>()[c->numel() == 1 ? 0 : j];
      rw.set_insertion_point(&n);
      bias = rw.constant(bias->name + "_beta", std::move(b));
    } else if (bias) {
      std::optional<int64_t> count = bias->shape.numel();
      if (!count || *count != N || bias->dtype != DType::f32)
        return passes::Decision::no("the bias is not one f32 value per output column");
    }
    QuantizedWeight qw = quantize_weight(*w, trans_b ? 0 : 1, true);
    Tensor q = qw.q;
    if (trans_b) {  // QMatMul's weight is [K, N]
      const int64_t K = w->dim(1);
      q = Tensor(DType::i8, {K, N});
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < K; ++k) q.data<int8_t>()[k * N + i] = qw.q.data<int8_t>()[i * K + k];
    }
    const float alpha = n.attr_f("alpha", 1.f);
    for (int64_t c = 0; c < N; ++c) qw.scale.data<float>()[c] *= alpha;
    rw.set_insertion_point(&n);
    const std::string& wn = n.inputs[1]->name;
    std::vector<Value*> inputs = {n.inputs[0], rw.constant(wn + "_i8", q), rw.constant(wn + "_scale", qw.scale)};
    Value* z = gemm ? nullptr : n.input(3);
    if (bias && bias->shape.rank() != 1) {
      // QMatMul takes the bias as a vector.
      if (const Tensor* bt = constant_of(bias)) bias = rw.constant(bias->name + "_vector", bt->clone().reshaped({N}));
      else bias = rw.create("Reshape", {bias, rw.constant(bias->name + "_shape", Tensor::from_vector<int64_t>({1}, {N}))})->outputs[0];
    }
    inputs.push_back(bias);  // input 3 (may be omitted)
    inputs.push_back(z);     // input 4
    while (inputs.back() == nullptr) inputs.pop_back();
    std::map<std::string, Attribute> attrs = {{"out_dtype", std::string("f32")}};
    for (const char* k : {"activation", "act_alpha", "act_beta"})
      if (const Attribute* v = n.find_attr(k)) attrs[k] = *v;
    Node* qm = rw.create("QMatMul", inputs, std::move(attrs), 1, std::string(ops::kKilnDomain));
    qm->name = n.name;
    rw.replace(n.outputs[0], qm->outputs[0]);
    rw.erase_if_dead(&n);
    return passes::Decision::yes();
  }
};

}  // namespace

std::unique_ptr<passes::Pass> make_quantize_dynamic_pass() { return std::make_unique<QuantizeDynamic>(); }

void register_passes() {
  passes::PassRegistry& r = passes::PassRegistry::global();
  if (!r.has(kName)) r.add(std::string(kName), [] { return make_quantize_dynamic_pass(); });
  if (!r.has("precision-bf16")) r.add("precision-bf16", [] { return make_precision_pass(DType::bf16); });
  if (!r.has("precision-fp16")) r.add("precision-fp16", [] { return make_precision_pass(DType::f16); });
}

}  // namespace kiln::compress

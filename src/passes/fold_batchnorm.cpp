// fold-batchnorm: folds an inference BatchNormalization into the op before it, per output
// channel: Conv (weight [Cout, ...] scaled per Cout, bias = bias*scale + shift), and Gemm or
// 2-D MatMul with a constant weight (per output feature; MatMul gains an Add for the bias).
//
// Deliberately declines (with the reason) when: the BN is in training mode or its
// statistics outputs are used; a parameter is not a constant f32; the producer's output has
// other users (the unnormalised value is still needed); the weight is not a constant; the BN
// channel axis is not the producer's output-feature axis (MatMul of rank > 2, Gemm with a
// full [N, F] bias). It does not fold BN that comes *before* a Conv (padding makes that
// inexact) nor ConvTranspose.
#include "builtin_passes.h"
#include "kiln/passes/batchnorm.h"

namespace kiln::passes {
namespace {

// The producer of BN's input, when it is `op` in BN's graph.
const Node* producer_op(const Node& bn, const char* op) {
  const Value* x = bn.input(0);
  if (!x || !x->producer || x->owner != bn.owner) return nullptr;
  const Node* p = x->producer;
  return p->op == op && p->domain.empty() ? p : nullptr;
}

class ConvBatchNorm : public RewritePattern {
 public:
  std::string name() const override { return "conv-bn"; }
  std::vector<std::string> root_ops() const override { return {"BatchNormalization"}; }
  Decision match(const Node& bn, const Model&) const override {
    const Node* conv = producer_op(bn, "Conv");
    if (!conv) return Decision::no("input is not a Conv");
    BatchNormAffine a;
    if (Decision d = batchnorm_affine(bn, a); !d) return d;
    return conv_can_absorb(*conv, a.channels());
  }
  void apply(Node& bn, Rewriter& rw) const override {
    BatchNormAffine a;
    batchnorm_affine(bn, a);
    Node* conv = create_conv_with_batchnorm(rw, *bn.inputs[0]->producer, a);
    rw.replace(bn.outputs[0], conv->outputs[0]);
  }
  std::string describe_apply(const Node&) const override { return "folded into the Conv before it"; }
};

// Gemm (Y = alpha*A*op(B) + beta*C) or 2-D MatMul with a constant weight, then BN over axis 1.
class DenseBatchNorm : public RewritePattern {
 public:
  std::string name() const override { return "dense-bn"; }
  std::vector<std::string> root_ops() const override { return {"BatchNormalization"}; }
  Decision match(const Node& bn, const Model&) const override {
    const Node* p = producer_op(bn, "Gemm");
    if (!p) p = producer_op(bn, "MatMul");
    if (!p) return Decision::no("input is not a Gemm or MatMul");
    if (!has_single_use(p->outputs[0])) return Decision::no(str_cat("the ", p->op, " output has other users"));
    const Shape& ys = p->outputs[0]->shape;
    if (!ys.rank_known || ys.rank() != 2)
      return Decision::no(str_cat("the ", p->op, " output is not 2-D: BN's axis 1 is not its feature axis"));
    const Tensor* w = constant_of(p->input(1));
    if (!w || w->dtype() != DType::f32 || w->rank() != 2)
      return Decision::no(str_cat("the ", p->op, " weight is not a constant 2-D f32"));
    BatchNormAffine a;
    if (Decision d = batchnorm_affine(bn, a); !d) return d;
    size_t features = static_cast<size_t>(w->dim(p->attr_i("transB", 0) ? 0 : 1));
    if (features != a.channels())
      return Decision::no(str_cat("the ", p->op, " has ", features, " output features, the BN ", a.channels()));
    if (p->op == "Gemm" && p->input(2)) {
      const Tensor* c = constant_of(p->input(2));
      if (!c || c->dtype() != DType::f32) return Decision::no("the Gemm bias is not a constant f32");
      bool per_feature = c->numel() == 1 || (static_cast<size_t>(c->numel()) == features && c->dims().back() == c->numel());
      if (!per_feature) return Decision::no("the Gemm bias is not per feature");
    }
    return Decision::yes();
  }
  void apply(Node& bn, Rewriter& rw) const override {
    BatchNormAffine a;
    batchnorm_affine(bn, a);
    const Node& p = *bn.inputs[0]->producer;
    const Tensor& w = *constant_of(p.inputs[1]);
    bool trans_b = p.op == "Gemm" && p.attr_i("transB", 0) != 0;
    Value* nw = rw.constant(p.inputs[1]->name + "_bn", scale_along_axis(w, trans_b ? 0 : 1, a.scale));
    Node* out;
    if (p.op == "Gemm") {
      // beta*C folds too: the new bias is (beta*C)*scale + shift, and beta becomes 1.
      Tensor c;
      if (const Tensor* old = constant_of(p.input(2))) {
        c = old->clone().reshaped({old->numel()});
        float beta = p.attr_f("beta", 1.0f);
        for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] *= beta;
      }
      Value* nb = rw.constant(p.name + "_bn_bias", fold_bias(c.defined() ? &c : nullptr, a));
      auto attrs = p.attrs;
      attrs["beta"] = 1.0f;
      out = rw.create("Gemm", {p.inputs[0], nw, nb}, attrs);
    } else {
      Node* mm = rw.create("MatMul", {p.inputs[0], nw});
      Value* nb = rw.constant(p.name + "_bn_bias", fold_bias(nullptr, a));
      out = rw.create("Add", {mm->outputs[0], nb});
    }
    rw.replace(bn.outputs[0], out->outputs[0]);
  }
  std::string describe_apply(const Node& bn) const override {
    return str_cat("folded into the ", bn.inputs[0]->producer->op, " before it");
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batchnorm() {
  auto p = std::make_unique<PatternPass>(
      "fold-batchnorm", "fold inference BatchNormalization into the Conv, Gemm or MatMul before it");
  p->add(std::make_unique<ConvBatchNorm>());
  p->add(std::make_unique<DenseBatchNorm>());
  return p;
}

}  // namespace kiln::passes

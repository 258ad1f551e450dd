// Sample user pass (plugin): Conv -> BatchNormalization -> Relu becomes one kiln.FusedConv
// with activation "Relu" (include/kiln/ops/kiln_ops.h), the BatchNormalization folded into
// the convolution's weight and bias (kiln/passes/batchnorm.h does the arithmetic).
//
// It declines, with the reason, when the Conv or the BatchNormalization output has another
// reader (the intermediate value is still needed), or when the BN cannot be folded (training
// mode, non-constant parameters or weights). kiln's own -O2 pipeline does the same job with
// fold-batchnorm followed by fuse-epilogue; this sample shows a multi-node pattern rooted at
// the last node (the Relu) and matched upwards.
//
// Use: kiln opt model.onnx --pass-plugin libkiln_fuse_conv_bn_relu.so --passes fuse-conv-bn-relu
#include "kiln/ops/kiln_ops.h"
#include "kiln/passes/batchnorm.h"

namespace {

using namespace kiln;
using namespace kiln::passes;

// The node making v in the same graph, if it is `op` (default domain).
const Node* made_by(const Value* v, const char* op) {
  if (!v || !v->producer || v->producer->op != op || !v->producer->domain.empty()) return nullptr;
  return v->producer;
}

class ConvBnRelu : public RewritePattern {
 public:
  std::string name() const override { return "conv-bn-relu"; }
  std::vector<std::string> root_ops() const override { return {"Relu"}; }
  Decision match(const Node& relu, const Model&) const override {
    const Node* bn = made_by(relu.input(0), "BatchNormalization");
    if (!bn) return Decision::no("input is not a BatchNormalization");
    if (!has_single_use(bn->outputs[0])) return Decision::no("the BatchNormalization output has other readers");
    const Node* conv = made_by(bn->input(0), "Conv");
    if (!conv) return Decision::no("the BatchNormalization input is not a Conv");
    BatchNormAffine a;
    if (Decision d = batchnorm_affine(*bn, a); !d) return d;
    return conv_can_absorb(*conv, a.channels());
  }
  void apply(Node& relu, Rewriter& rw) const override {
    const Node& bn = *relu.inputs[0]->producer;
    const Node& conv = *bn.inputs[0]->producer;
    BatchNormAffine a;
    batchnorm_affine(bn, a);
    rw.model().opsets.emplace(std::string(ops::kKilnDomain), ops::kKilnOpsetVersion);
    Node* fused = create_conv_with_batchnorm(rw, conv, a, "FusedConv", std::string(ops::kKilnDomain),
                                             {{"activation", "Relu"}});
    rw.replace(relu.outputs[0], fused->outputs[0]);  // Relu, BN and Conv die and are erased
  }
  std::string describe_apply(const Node&) const override { return "Conv + BatchNormalization + Relu -> kiln.FusedConv"; }
};

}  // namespace

extern "C" void kiln_register_passes(kiln::passes::PassRegistry* registry) {
  registry->add("fuse-conv-bn-relu", [] {
    auto pass = std::make_unique<PatternPass>(
        "fuse-conv-bn-relu", "sample plugin: Conv + BatchNormalization + Relu -> kiln.FusedConv(activation=Relu)");
    pass->add(std::make_unique<ConvBnRelu>());
    return pass;
  });
}

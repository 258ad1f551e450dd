// Sample user pass (plugin): replaces every Relu by Gelu (exact, erf form).
//
// This changes what the model computes — on purpose: it shows how a user pass that is not
// semantics-preserving is written and loaded, and tests/passes/plugin_test.cpp measures the
// change on the digits CNN (logits move, the predicted classes mostly stay).
//
// Build: a shared library linking kiln_passes (see the "pass plugin samples" block in
// CMakeLists.txt). Use: kiln opt model.onnx --pass-plugin libkiln_relu_to_gelu.so --passes relu-to-gelu
#include "kiln/passes/rewrite.h"

namespace {

using namespace kiln;
using namespace kiln::passes;

class ReluToGelu : public RewritePattern {
 public:
  std::string name() const override { return "relu-to-gelu"; }
  std::vector<std::string> root_ops() const override { return {"Relu"}; }
  Decision match(const Node& relu, const Model&) const override {
    if (relu.input(0) == nullptr) return Decision::no("Relu without input");
    return Decision::yes();
  }
  void apply(Node& relu, Rewriter& rw) const override {
    Node* gelu = rw.create("Gelu", {relu.inputs[0]});
    rw.replace(relu.outputs[0], gelu->outputs[0]);  // the Relu is erased once nothing reads it
  }
  std::string describe_apply(const Node&) const override { return "Relu -> Gelu"; }
};

}  // namespace

extern "C" void kiln_register_passes(kiln::passes::PassRegistry* registry) {
  registry->add("relu-to-gelu", [] {
    auto pass = std::make_unique<PatternPass>("relu-to-gelu", "sample plugin: replace every Relu by Gelu");
    pass->add(std::make_unique<ReluToGelu>());
    return pass;
  });
}

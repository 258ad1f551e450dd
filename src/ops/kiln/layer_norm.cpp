// kiln.LayerNorm(X, Scale, Bias?): ONNX LayerNormalization with only its first output, at any
// opset (fuse-layernorm makes it from the decomposed ReduceMean/Sub/Pow/Sqrt/Div chain that
// exporters write before opset 17). Inference, cost and kernel are LayerNormalization's.
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

void infer_kiln_layer_norm(InferContext& c) { onnx_op("LayerNormalization").infer(c); }
Cost cost_kiln_layer_norm(const CostContext& c) { return onnx_op("LayerNormalization").cost(c); }

void kiln_layer_norm_kernel(KernelContext& c) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.has_input(i) ? &c.input(i) : nullptr);
  c.set_output(0, run_onnx_kernel(c, "LayerNormalization", ins));
}

}  // namespace

OpDef def_LayerNorm() {
  return {.name = "LayerNorm",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 2,
          .max_inputs = 3,
          .attrs = {{"axis", AttrKind::Int}, {"epsilon", AttrKind::Float}},
          .infer = infer_kiln_layer_norm,
          .cost = cost_kiln_layer_norm,
          .kernel = kiln_layer_norm_kernel,
          .doc = "(X - mean) / sqrt(var + epsilon) * Scale + Bias over the dims from axis on"};
}

}  // namespace kiln::ops

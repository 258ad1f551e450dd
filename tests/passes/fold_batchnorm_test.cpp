// fold-batchnorm: exact small cases (numbers chosen to be exact in binary), refusals with
// reasons, and a torchvision ResNet-18 exported with its BatchNormalization nodes kept.
#include <cstdlib>

#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

// scale = gamma / sqrt(var) = [0.5, 3]; shift = beta - mean * scale = [0, -2.5]
const char* kBnParams = R"(
  %gamma = init f32[2] dense<1.0, 3.0>
  %beta = init f32[2] dense<0.25, 0.5>
  %mean = init f32[2] dense<0.5, 1.0>
  %var = init f32[2] dense<4.0, 1.0>)";

std::string with_params(const std::string& head, const std::string& body) {
  return head + kBnParams + body;
}

TEST(FoldBatchNorm, IntoConvWeightAndBias) {
  PassRun r = run_passes(with_params(R"(
graph g(%x: f32[1,2,3,3]) -> (%y) {
  %w = init f32[2,2,1,1] dense<1.0, 2.0, 3.0, 4.0>
  %b = init f32[2] dense<0.5, -1.0>)", R"(
  %c = Conv(%x, %w, %b) {kernel_shape=[1,1]}
  %y = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon=0.0}
})"),
                         {"fold-batchnorm", "dce"});
  EXPECT_TRUE(r.records[0].changed);
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[1,2,3,3]) -> (%y) {
  %w_bn = init f32[2,2,1,1] dense<0.5, 1.0, 9.0, 12.0>
  %Conv_bn_bias = init f32[2] dense<0.25, -5.5>
  %y = Conv(%x, %w_bn, %Conv_bn_bias) {kernel_shape=[1,1]}
})"));
}

TEST(FoldBatchNorm, IntoGemmWithTransposedWeightAndBeta) {
  // transB: the weight rows are the output features. beta*C = [1, -2] -> [0.5, -8.5].
  PassRun r = run_passes(with_params(R"(
graph g(%a: f32[3,2]) -> (%y) {
  %w = init f32[2,2] dense<1.0, 2.0, 3.0, 4.0>
  %c = init f32[2] dense<0.5, -1.0>)", R"(
  %m = Gemm(%a, %w, %c) {transB=1, beta=2.0}
  %y = BatchNormalization(%m, %gamma, %beta, %mean, %var) {epsilon=0.0}
})"),
                         {"fold-batchnorm", "dce"});
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%a: f32[3,2]) -> (%y) {
  %w_bn = init f32[2,2] dense<0.5, 1.0, 9.0, 12.0>
  %Gemm_bn_bias = init f32[2] dense<0.5, -8.5>
  %y = Gemm(%a, %w_bn, %Gemm_bn_bias) {beta=1.0, transB=1}
})"));
}

TEST(FoldBatchNorm, IntoMatMulAsWeightAndAdd) {
  PassRun r = run_passes(with_params(R"(
graph g(%a: f32[3,2]) -> (%y) {
  %w = init f32[2,2] dense<1.0, 2.0, 3.0, 4.0>)", R"(
  %m = MatMul(%a, %w)
  %y = BatchNormalization(%m, %gamma, %beta, %mean, %var) {epsilon=0.0}
})"),
                         {"fold-batchnorm", "dce"});
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%a: f32[3,2]) -> (%y) {
  %w_bn = init f32[2,2] dense<0.5, 6.0, 1.5, 12.0>
  %MatMul_bn_bias = init f32[2] dense<0.0, -2.5>
  %MatMul_1_out = MatMul(%a, %w_bn)
  %y = Add(%MatMul_1_out, %MatMul_bn_bias)
})"));
}

TEST(FoldBatchNorm, DeclinesWithReasons) {
  // %c1's weight is a graph input; %c2 is a graph output itself, so it must stay unnormalised.
  const std::string text = with_params(R"(
graph g(%x: f32[1,2,3,3], %w: f32[2,2,1,1]) -> (%y, %c2, %z) {
  %v = init f32[2,2,1,1] dense<1.0, 2.0, 3.0, 4.0>)", R"(
  %c1 = Conv(%x, %w) {kernel_shape=[1,1]}
  %y = BatchNormalization(%c1, %gamma, %beta, %mean, %var)
  %c2 = Conv(%x, %v) {kernel_shape=[1,1]}
  %z = BatchNormalization(%c2, %gamma, %beta, %mean, %var)
})");
  PassRun r = run_passes(text, {"fold-batchnorm"}, /*explain=*/true);
  EXPECT_FALSE(r.changed());
  EXPECT_EQ(show(r.model), canonical(text));
  std::string all;
  for (const auto& rm : r.ctx.remarks) all += rm.node + ": " + rm.message + "\n";
  EXPECT_NE(all.find("the Conv weight is not a constant f32"), std::string::npos) << all;
  EXPECT_NE(all.find("the Conv output has other users"), std::string::npos) << all;
}

// ResNet-18 (torchvision architecture, seeded random weights, BN statistics randomised so the
// fold is not trivial) exported with its 20 BatchNormalization nodes, cached in the build dir.
std::string resnet18_with_bn() {
  std::string out = std::string(KILN_BINARY_DIR) + "/passes/resnet18_bn.onnx";
  if (std::filesystem::exists(out)) return out;
  std::string cmd = "/usr/bin/python3 " + std::string(KILN_SOURCE_DIR) + "/scripts/passes/export_resnet18_bn.py " +
                    out + " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(out)) return "";
  return out;
}

TEST(FoldBatchNorm, ResNet18WithBatchNormComputesTheSameLogits) {
  std::string path = resnet18_with_bn();
  if (path.empty()) GTEST_SKIP() << "cannot export resnet18 with BatchNormalization (needs python3 with torch, torchvision)";
  Tensor x(DType::f32, {1, 3, 224, 224});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 7919 % 1000) / 500.0 - 1.0);
  std::map<std::string, Tensor> in = {{"input", x}};
  Model m = load_specialized(path, in);
  size_t bn_before = 0;
  for (const auto& n : m.graph->nodes()) bn_before += n->op == "BatchNormalization";
  ASSERT_EQ(bn_before, 20u);
  auto ref = run_model(m, in);
  PassContext ctx;
  PassManager pm;
  pm.add("fold-batchnorm");
  pm.add("dce");
  pm.run(m, ctx);
  size_t bn_after = 0;
  for (const auto& n : m.graph->nodes()) bn_after += n->op == "BatchNormalization";
  EXPECT_EQ(bn_after, 0u);
  // Folding reassociates (x*w)*s into x*(w*s): fp32 rounding only, well inside 1e-4 * max|ref|.
  auto after = run_model(m, in);
  expect_same_outputs(ref, after, 1e-4, "resnet18 fold-batchnorm");
  std::printf("[fold-batchnorm] resnet18 logits: %s\n", compare_tensors(after.at("logits"), ref.at("logits")).str().c_str());
}

}  // namespace
}  // namespace kiln::passes::test

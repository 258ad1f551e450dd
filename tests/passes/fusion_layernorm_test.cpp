// fuse-layernorm: the decomposed layer norm PyTorch exports (with Constant nodes, with and
// without gamma/beta), ONNX LayerNormalization, cases left alone, and bert_base / gpt2.
#include <iostream>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

// The BERT/GPT-2 export of nn.LayerNorm(768) at opset 14, on a smaller hidden size.
const char* kDecomposed = R"(kiln.model opset=14
graph g(%x: f32[1,S,4]) -> (%y) {
  %gamma = init f32[4] dense<1.0, 2.0, 3.0, 4.0>
  %beta = init f32[4] dense<0.5>
  %m = ReduceMean(%x) {axes=[-1]}
  %d = Sub(%x, %m)
  %two = Constant() {value=f32[] dense<2.0>}
  %p = Pow(%d, %two)
  %v = ReduceMean(%p) {axes=[-1]}
  %eps = Constant() {value=f32[] dense<1e-12>}
  %ve = Add(%v, %eps)
  %s = Sqrt(%ve)
  %n = Div(%d, %s)
  %g = Mul(%n, %gamma)
  %y = Add(%g, %beta)
})";

TEST(FuseLayerNorm, DecomposedExportBecomesLayerNorm) {
  auto pass = passes::make_fuse_layernorm();
  expect_rewrite(*pass, kDecomposed, R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[1,S,4]) -> (%y) {
  %gamma = init f32[4] dense<1.0, 2.0, 3.0, 4.0>
  %beta = init f32[4] dense<0.5>
  %y = kiln::LayerNorm(%x, %gamma, %beta) {axis=-1, epsilon=1e-12}
})");
}

TEST(FuseLayerNorm, WithoutGammaOverTwoTrailingAxes) {
  auto pass = passes::make_fuse_layernorm();
  expect_rewrite(*pass, R"(kiln.model opset=13
graph g(%x: f32[2,2,3]) -> (%y) {
  %m = ReduceMean(%x) {axes=[1,2]}
  %d = Sub(%x, %m)
  %p = Mul(%d, %d)
  %v = ReduceMean(%p) {axes=[-1,-2]}
  %eps = init f32[] dense<1e-05>
  %ve = Add(%eps, %v)
  %s = Sqrt(%ve)
  %y = Div(%d, %s)
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,2,3]) -> (%y) {
  %eps = init f32[] dense<1e-05>
  %"ReduceMean.ones" = init f32[2,3] dense<1.0>
  %y = kiln::LayerNorm(%x, %"ReduceMean.ones") {axis=-2, epsilon=1e-05}
})");
}

TEST(FuseLayerNorm, OnnxLayerNormalizationBecomesLayerNorm) {
  auto pass = passes::make_fuse_layernorm();
  expect_rewrite(*pass, R"(kiln.model opset=17
graph g(%x: f32[3,8], %s: f32[8]) -> (%y) {
  %y, _, _ = LayerNormalization(%x, %s) {axis=1, epsilon=0.001}
})",
                 R"(kiln.model opset=17 opset.kiln=1
graph g(%x: f32[3,8], %s: f32[8]) -> (%y) {
  %y = kiln::LayerNorm(%x, %s) {axis=1, epsilon=0.001}
})");
}

TEST(FuseLayerNorm, LeavesSharedIntermediatesAndOtherAxesAlone) {
  auto pass = passes::make_fuse_layernorm();
  // x - mean is also a graph output.
  std::string shared = kDecomposed;
  shared.replace(shared.find("-> (%y)"), 7, "-> (%y, %d)");
  expect_unchanged(*pass, shared);
  passes::PassContext ctx;
  ctx.explain = true;
  run_pass_on_text(*pass, shared, nullptr, &ctx);
  ASSERT_EQ(ctx.remarks.size(), 1u);
  EXPECT_EQ(ctx.remarks[0].message, "x - mean is not squared and divided (only)");
  // Normalising over a middle axis is not a layer norm.
  std::string middle = kDecomposed;
  for (size_t at; (at = middle.find("axes=[-1]")) != std::string::npos;) middle.replace(at, 9, "axes=[1]");
  expect_unchanged(*pass, middle);
  // LayerNormalization whose mean output is read keeps it.
  expect_unchanged(*pass, R"(kiln.model opset=17
graph g(%x: f32[3,8], %s: f32[8]) -> (%y, %mean) {
  %y, %mean, _ = LayerNormalization(%x, %s)
})");
}

void check(const std::string& model) {
  if (!zoo_available(model)) GTEST_SKIP() << "build/zoo/" << model << " is missing";
  auto pass = passes::make_fuse_layernorm();
  ZooResult r = check_zoo_model(model, {pass.get()});
  size_t n = count_op(r.model, "kiln", "LayerNorm");
  std::cout << "[fuse-layernorm] " << model << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes, " << n
            << " LayerNorm\n";
  EXPECT_EQ(n, 25u);  // 12 blocks x 2 + the embedding (BERT) / final (GPT-2) norm
  EXPECT_EQ(count_op(r.model, "", "ReduceMean"), 0u);
}

TEST(FuseLayerNormZoo, BertBase) { check("bert_base"); }
TEST(FuseLayerNormZoo, Gpt2) { check("gpt2"); }

}  // namespace
}  // namespace kiln::fusiontest

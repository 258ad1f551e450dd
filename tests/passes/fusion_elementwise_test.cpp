// fuse-elementwise: a left-over GELU, a SiLU with a shared input, a residual/scale chain with a
// large constant, cases left alone, and bert_base / gpt2 (alone and after the other fusions).
#include <iostream>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

TEST(FuseElementwise, GeluChainBecomesOneNodeWithScalarConstantsInside) {
  auto pass = passes::make_fuse_elementwise();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%x: f32[2,8]) -> (%y) {
  %sqrt2 = Constant() {value=f32[] dense<1.4142135>}
  %d = Div(%x, %sqrt2)
  %e = Erf(%d)
  %one = init f32[] dense<1.0>
  %p = Add(%e, %one)
  %xm = Mul(%x, %p)
  %half = Constant() {value=f32[] dense<0.5>}
  %y = Mul(%xm, %half)
})",
                 R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[2,8]) -> (%y) {
  %one = init f32[] dense<1.0>
  %y = kiln::FusedElementwise(%x) {
    body=graph fused(%in0: f32[2,8]) -> (%out0) {
      %c0 = init f32[] dense<1.4142135>
      %c1 = init f32[] dense<1.0>
      %c2 = init f32[] dense<0.5>
      %d = Div(%in0, %c0)
      %e = Erf(%d)
      %p = Add(%e, %c1)
      %xm = Mul(%in0, %p)
      %out0 = Mul(%xm, %c2)
    }
  }
})");
}

TEST(FuseElementwise, ResidualScaleChainTakesALargeConstantAsAnInput) {
  auto pass = passes::make_fuse_elementwise();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%x: f32[4,100], %r: f32[4,100]) -> (%y) {
  %bias = init f32[100] dense<0.25>
  %a = Add(%x, %bias)
  %s = Sigmoid(%a)
  %m = Mul(%a, %s)
  %y = Add(%m, %r)
})",
                 R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[4,100], %r: f32[4,100]) -> (%y) {
  %bias = init f32[100] dense<0.25>
  %y = kiln::FusedElementwise(%x, %bias, %r) {
    body=graph fused(%in0: f32[4,100], %in1: f32[100], %in2: f32[4,100]) -> (%out0) {
      %a = Add(%in0, %in1)
      %s = Sigmoid(%a)
      %m = Mul(%a, %s)
      %out0 = Add(%m, %in2)
    }
  }
})");
}

TEST(FuseElementwise, StopsAtSharedValuesOtherShapesAndNonElementwiseOps) {
  auto pass = passes::make_fuse_elementwise();
  // %a and %s are graph outputs, %b has another shape (then broadcast), Softmax is no
  // elementwise op: every group here has one node.
  expect_unchanged(*pass, R"(kiln.model opset=14
graph g(%x: f32[4,8], %v: f32[8]) -> (%a, %s, %y) {
  %a = Relu(%x)
  %s = Neg(%a)
  %b = Exp(%v)
  %c = Add(%s, %b)
  %y = Softmax(%c)
})");
  // Integer shape arithmetic is not fused.
  expect_unchanged(*pass, R"(kiln.model opset=14
graph g(%x: i64[2]) -> (%y) {
  %one = init i64[] dense<1>
  %a = Add(%x, %one)
  %y = Mul(%a, %a)
})");
}

TEST(FuseElementwise, FusedGraphGivesTheSameNumbers) {
  const char* text = R"(kiln.model opset=14
graph g(%x: f32[3,5], %w: bool[3,5]) -> (%y) {
  %lo = init f32[] dense<-1.0>
  %hi = init f32[] dense<1.5>
  %c = Clip(%x, %lo, %hi)
  %t = Tanh(%x)
  %s = Where(%w, %c, %t)
  %k = Cast(%w) {to=1}
  %y = Add(%s, %k)
})";
  Model before = parse_model(text);
  ops::infer_shapes(before);
  bool changed = false;
  auto pass = passes::make_fuse_elementwise();
  Model after = run_pass_on_text(*pass, text, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(count_op(after, "kiln", "FusedElementwise"), 1u);
  EXPECT_EQ(after.graph->nodes().size(), 1u);
  Tensor x(DType::f32, {3, 5}), w(DType::boolean, {3, 5});
  for (int64_t i = 0; i < 15; ++i) {
    x.data<float>()[i] = -2.f + 0.3f * static_cast<float>(i);
    static_cast<uint8_t*>(w.raw())[i] = i % 3 == 0;
  }
  Tensor want = run_model(before, {{"x", x}, {"w", w}}).at("y");
  Tensor got = run_model(after, {{"x", x}, {"w", w}}).at("y");
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
}

void check(const std::string& model, bool after_other_fusions) {
  if (!zoo_available(model)) GTEST_SKIP() << "build/zoo/" << model << " is missing";
  auto ln = passes::make_fuse_layernorm();
  auto att = passes::make_fuse_attention();
  auto epi = passes::make_fuse_epilogue();
  auto ew = passes::make_fuse_elementwise();
  std::vector<passes::Pass*> pipeline = {ew.get()};
  if (after_other_fusions) pipeline = {ln.get(), att.get(), epi.get(), ew.get()};
  ZooResult r = check_zoo_model(model, pipeline);
  size_t n = count_op(r.model, "kiln", "FusedElementwise"), inside = 0;
  for (const auto& node : r.model.graph->nodes())
    if (node->op == "FusedElementwise") inside += node->find_attr("body")->g()->nodes().size();
  std::cout << "[fuse-elementwise" << (after_other_fusions ? " after layernorm/attention/epilogue" : "") << "] "
            << model << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes, " << n
            << " FusedElementwise holding " << inside << " ops\n";
  // After the other fusions GPT-2 has no elementwise chain left (GELU and residuals went into
  // FusedMatMul); alone, the pass finds groups in both.
  if (!after_other_fusions) {
    EXPECT_GT(n, 0u);
  }
}

TEST(FuseElementwiseZoo, BertBase) { check("bert_base", false); }
TEST(FuseElementwiseZoo, Gpt2) { check("gpt2", false); }
TEST(FuseElementwiseZoo, BertBaseAfterTheOtherFusions) { check("bert_base", true); }
TEST(FuseElementwiseZoo, Gpt2AfterTheOtherFusions) { check("gpt2", true); }

}  // namespace
}  // namespace kiln::fusiontest

// fold-constants: textual before -> after, refusals, and numerics on a real model (zoo_test.cpp).
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

TEST(FoldConstants, FoldsAChainOfConstantNodes) {
  expect_rewrite("fold-constants", R"(
graph g(%x: f32[2]) -> (%y) {
  %a = init f32[2] dense<1.0, 2.0>
  %b = init f32[2] dense<3.0, 4.0>
  %s = Add(%a, %b)
  %t = Mul(%s, %s)
  %y = Add(%x, %t)
})", R"(
graph g(%x: f32[2]) -> (%y) {
  %a = init f32[2] dense<1.0, 2.0>
  %b = init f32[2] dense<3.0, 4.0>
  %s = init f32[2] dense<4.0, 6.0>
  %t = init f32[2] dense<16.0, 36.0>
  %y = Add(%x, %t)
})");
}

TEST(FoldConstants, ConstantOpBecomesAnInitializerAndDceDropsTheRest) {
  PassRun r = run_passes(R"(
graph g(%x: i64[3]) -> (%y) {
  %c = Constant() {value=i64[3] dense<1, 2, 3>}
  %n = Neg(%c)
  %y = Mul(%x, %n)
})", {"fold-constants", "dce"});
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: i64[3]) -> (%y) {
  %n = init i64[3] dense<-1, -2, -3>
  %y = Mul(%x, %n)
})"));
}

TEST(FoldConstants, AGraphOutputKeepsItsName) {
  expect_rewrite("fold-constants", R"(
graph g() -> (%y) {
  %a = init f32[1] dense<2.0>
  %y = Sqrt(%a)
})", R"(
graph g() -> (%y) {
  %a = init f32[1] dense<2.0>
  %y = init f32[1] dense<1.4142135>
})");
}

TEST(FoldConstants, LeavesNodesWithRuntimeInputsAndOverridableDefaults) {
  // %d is a graph input with a default value: the caller may pass another one.
  expect_unchanged("fold-constants", R"(
graph g(%x: f32[2], %d: f32[2]) -> (%y, %z) {
  %d = init f32[2] dense<1.0, 1.0>
  %y = Relu(%x)
  %z = Neg(%d)
})");
}

TEST(FoldConstants, DeclinesResultsOverTheSizeCapWithAReason) {
  const char* text = R"(
graph g(%x: f64[3000,3000]) -> (%y) {
  %shape = init i64[2] dense<3000, 3000>
  %big = ConstantOfShape(%shape) {value=f64[1] dense<1.0>}
  %y = Add(%x, %big)
})";
  PassRun r = run_passes(text, {"fold-constants"}, /*explain=*/true);
  EXPECT_FALSE(r.changed());
  EXPECT_EQ(show(r.model), canonical(text));
  bool said_why = false;
  for (const auto& rm : r.ctx.remarks)
    said_why |= !rm.applied && rm.node.find("ConstantOfShape") != std::string::npos &&
                rm.message.find("would be 68 MiB (cap 64 MiB)") != std::string::npos;
  EXPECT_TRUE(said_why) << "no remark explains why the 68 MiB ConstantOfShape stayed";
}

TEST(FoldConstants, KeepsDequantizeLinearOfWeights) {
  expect_unchanged("fold-constants", R"(
graph g(%x: f32[2]) -> (%y) {
  %q = init i8[2] dense<10, -20>
  %s = init f32[] dense<0.5>
  %z = init i8[] dense<0>
  %w = DequantizeLinear(%q, %s, %z)
  %y = Mul(%x, %w)
})");
}

}  // namespace
}  // namespace kiln::passes::test

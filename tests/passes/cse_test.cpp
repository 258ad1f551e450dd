// cse: textual before -> after, and what must not merge.
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

TEST(Cse, MergesEqualNodesCommutedInputsAndEqualConstants) {
  PassRun r = run_passes(R"(
graph g(%x: f32[2]) -> (%y) {
  %c1 = init f32[2] dense<1.0, 2.0>
  %c2 = init f32[2] dense<1.0, 2.0>
  %a = Add(%x, %c1)
  %b = Add(%c2, %x)
  %r1 = Relu(%a)
  %r2 = Relu(%b)
  %y = Mul(%r1, %r2)
})", {"cse"});
  EXPECT_TRUE(r.changed());
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[2]) -> (%y) {
  %c1 = init f32[2] dense<1.0, 2.0>
  %a = Add(%x, %c1)
  %r1 = Relu(%a)
  %y = Mul(%r1, %r1)
})"));
}

TEST(Cse, TwoGraphOutputsOfOneValueKeepBothNames) {
  expect_rewrite("cse", R"(
graph g(%x: f32[2]) -> (%y1, %y2) {
  %y1 = Softmax(%x) {axis=0}
  %y2 = Softmax(%x) {axis=0}
})", R"(
graph g(%x: f32[2]) -> (%y1, %y2) {
  %y1 = Softmax(%x) {axis=0}
  %y2 = Identity(%y1)
})");
}

TEST(Cse, AGraphOutputDuplicateTakesOverTheFirstCopy) {
  expect_rewrite("cse", R"(
graph g(%x: f32[2]) -> (%y) {
  %a = Relu(%x)
  %y = Relu(%x)
  %z = Add(%a, %y)
})", R"(
graph g(%x: f32[2]) -> (%y) {
  %y = Relu(%x)
  %z = Add(%y, %y)
})");
}

TEST(Cse, DifferentAttributesOrOperandOrderOfNonCommutativeOpsStay) {
  expect_unchanged("cse", R"(
graph g(%x: f32[2,2], %w: f32[2,2]) -> (%y) {
  %c1 = init f32[2] dense<1.0, 2.0>
  %c2 = init f32[2] dense<1.0, 3.0>
  %a = Softmax(%x) {axis=0}
  %b = Softmax(%x) {axis=1}
  %s1 = Sub(%x, %w)
  %s2 = Sub(%w, %x)
  %m1 = Mul(%a, %c1)
  %m2 = Mul(%b, %c2)
  %t = Sum(%m1, %m2, %s1, %s2)
  %y = Relu(%t)
})");
}

}  // namespace
}  // namespace kiln::passes::test

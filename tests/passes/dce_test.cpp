// dce: textual before -> after, including subgraphs, and what must stay.
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

TEST(Dce, RemovesDeadChainsAndUnusedInitializers) {
  expect_rewrite("dce", R"(
graph g(%x: f32[2]) -> (%y) {
  %w = init f32[2] dense<1.0, 2.0>
  %unused = init f32[2] dense<0.0, 0.0>
  %a = Mul(%x, %w)
  %b = Relu(%a)
  %y = Relu(%x)
})", R"(
graph g(%x: f32[2]) -> (%y) {
  %y = Relu(%x)
})");
}

TEST(Dce, LooksIntoSubgraphsAndKeepsOuterValuesTheyRead) {
  expect_rewrite("dce", R"(
graph g(%c: bool[], %x: f32[2]) -> (%z) {
  %r = Relu(%x)
  %dead = Neg(%x)
  %z = If(%c) {
    then_branch=graph t() -> (%t) {
      %junk = Neg(%r)
      %t = Abs(%r)
    },
    else_branch=graph e() -> (%r) {
    }
  }
})", R"(
graph g(%c: bool[], %x: f32[2]) -> (%z) {
  %r = Relu(%x)
  %z = If(%c) {
    then_branch=graph t() -> (%t) {
      %t = Abs(%r)
    },
    else_branch=graph e() -> (%r) {
    }
  }
})");
}

TEST(Dce, KeepsLiveNodesUnusedOptionalOutputsInputsAndInputDefaults) {
  expect_unchanged("dce", R"(
graph g(%x: f32[2], %unused_input: f32[2], %d: f32[2]) -> (%y, %x) {
  %d = init f32[2] dense<1.0, 1.0>
  %a, %mask = Dropout(%x)
  %y = Add(%a, %x)
})");
}

}  // namespace
}  // namespace kiln::passes::test

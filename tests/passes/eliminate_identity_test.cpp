// eliminate-identity: textual before -> after, graph-output names, and what must stay.
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

TEST(EliminateIdentity, RemovesIdentityInferenceDropoutAndSameTypeCast) {
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[2,3]) -> (%y) {
  %a = Identity(%x)
  %b = Dropout(%a)
  %c = Cast(%b) {to=1}
  %y = Relu(%c)
})", R"(
graph g(%x: f32[2,3]) -> (%y) {
  %y = Relu(%x)
})");
}

TEST(EliminateIdentity, TheProducerTakesOverAGraphOutputName) {
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[2]) -> (%y) {
  %r = Relu(%x)
  %y = Identity(%r)
  %z = Neg(%r)
})", R"(
graph g(%x: f32[2]) -> (%y) {
  %y = Relu(%x)
  %z = Neg(%y)
})");
}

TEST(EliminateIdentity, ANoOpBetweenInputAndOutputBecomesIdentity) {
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[2]) -> (%y) {
  %y = Dropout(%x)
})", R"(
graph g(%x: f32[2]) -> (%y) {
  %y = Identity(%x)
})");
}

TEST(EliminateIdentity, NoOpReshapesAndSqueezeUnsqueezePairs) {
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[2,3]) -> (%y) {
  %s = init i64[2] dense<2, 3>
  %ax = init i64[1] dense<0>
  %r = Reshape(%x, %s)
  %u = Unsqueeze(%r, %ax)
  %q = Squeeze(%u, %ax)
  %f = Flatten(%q) {axis=1}
  %y = Relu(%f)
})", R"(
graph g(%x: f32[2,3]) -> (%y) {
  %s = init i64[2] dense<2, 3>
  %ax = init i64[1] dense<0>
  %y = Relu(%x)
})");
}

TEST(EliminateIdentity, ReshapeOfReshapeReadsTheOriginal) {
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[2,3,4]) -> (%y) {
  %s1 = init i64[2] dense<6, 4>
  %s2 = init i64[2] dense<4, -1>
  %r1 = Reshape(%x, %s1)
  %r2 = Reshape(%r1, %s2)
  %y = Relu(%r2)
})", R"(
graph g(%x: f32[2,3,4]) -> (%y) {
  %s1 = init i64[2] dense<6, 4>
  %s2 = init i64[2] dense<4, -1>
  %r2 = Reshape(%x, %s2)
  %y = Relu(%r2)
})");
}

TEST(EliminateIdentity, TransposePairsCancelOrMerge) {
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[2,3,4]) -> (%y, %z) {
  %t1 = Transpose(%x) {perm=[1,0,2]}
  %t2 = Transpose(%t1) {perm=[1,0,2]}
  %y = Relu(%t2)
  %u1 = Transpose(%x) {perm=[1,2,0]}
  %u2 = Transpose(%u1) {perm=[1,2,0]}
  %z = Neg(%u2)
})", R"(
graph g(%x: f32[2,3,4]) -> (%y, %z) {
  %y = Relu(%x)
  %u2 = Transpose(%x) {perm=[2,0,1]}
  %z = Neg(%u2)
})");
}

TEST(EliminateIdentity, TransposeOfSizeOneAxesIsAReshape) {
  // BERT's [1,128,768] -> [128,1,768] (and back, merged with the Reshape before it); a real
  // transpose of the two larger axes stays.
  expect_rewrite("eliminate-identity", R"(
graph g(%x: f32[1,4,6], %w: f32[4,6]) -> (%y, %z) {
  %t = Transpose(%x) {perm=[1,0,2]}
  %y = Relu(%t)
  %s = init i64[3] dense<4, 1, 6>
  %r = Reshape(%w, %s)
  %b = Transpose(%r) {perm=[1,0,2]}
  %z = Neg(%b)
})", R"(
graph g(%x: f32[1,4,6], %w: f32[4,6]) -> (%y, %z) {
  %s = init i64[3] dense<4, 1, 6>
  %Transpose_shape = init i64[3] dense<4, 1, 6>
  %Transpose_1_shape = init i64[3] dense<1, 4, 6>
  %Reshape_1_out = Reshape(%x, %Transpose_shape)
  %y = Relu(%Reshape_1_out)
  %Reshape_2_out = Reshape(%w, %Transpose_1_shape)
  %z = Neg(%Reshape_2_out)
})");
  expect_unchanged("eliminate-identity", R"(
graph g(%x: f32[1,4,6]) -> (%y) {
  %t = Transpose(%x) {perm=[0,2,1]}
  %y = Relu(%t)
})");
}

TEST(EliminateIdentity, LeavesRealWork) {
  expect_unchanged("eliminate-identity", R"(
graph g(%x: f32[2,3]) -> (%y, %i, %mask, %h) {
  %s = init i64[2] dense<3, 2>
  %r = Reshape(%x, %s)
  %h = Cast(%r) {to=10}
  %d, %mask = Dropout(%x)
  %t = Transpose(%d) {perm=[1,0]}
  %sum = Add(%t, %r)
  %y = Relu(%sum)
  %i = Identity(%x)
})");
}

}  // namespace
}  // namespace kiln::passes::test

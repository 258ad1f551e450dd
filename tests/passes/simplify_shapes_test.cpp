// simplify-shapes: Shape -> Gather -> Unsqueeze -> Concat chains become the constant they compute.
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

// Flattens the last two dims of x the way exporters write it: from x's own shape.
const char* kFlattenLastTwo = R"(
graph g(%x: f32[N,3,4]) -> (%y) {
  %i0 = init i64[] dense<0>
  %i1 = init i64[] dense<1>
  %i2 = init i64[] dense<2>
  %ax = init i64[1] dense<0>
  %s = Shape(%x)
  %d0 = Gather(%s, %i0) {axis=0}
  %d1 = Gather(%s, %i1) {axis=0}
  %d2 = Gather(%s, %i2) {axis=0}
  %p = Mul(%d1, %d2)
  %u0 = Unsqueeze(%d0, %ax)
  %u = Unsqueeze(%p, %ax)
  %cat = Concat(%u0, %u) {axis=0}
  %y = Reshape(%x, %cat)
})";

TEST(SimplifyShapes, KnownDimsFoldTheChainEvenWithASymbolicBatch) {
  PassRun r = run_passes(R"(
graph g(%x: f32[N,3,4]) -> (%y) {
  %i1 = init i64[] dense<1>
  %i2 = init i64[] dense<2>
  %ax = init i64[1] dense<0>
  %m1 = init i64[1] dense<-1>
  %s = Shape(%x)
  %d1 = Gather(%s, %i1) {axis=0}
  %d2 = Gather(%s, %i2) {axis=0}
  %p = Mul(%d1, %d2)
  %u = Unsqueeze(%p, %ax)
  %cat = Concat(%m1, %u) {axis=0}
  %y = Reshape(%x, %cat)
})", {"simplify-shapes", "dce"});
  EXPECT_TRUE(r.records[0].changed);
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[N,3,4]) -> (%y) {
  %cat = init i64[2] dense<-1, 12>
  %y = Reshape(%x, %cat)
})"));
}

TEST(SimplifyShapes, OnlyTheKnownPartOfAPartlySymbolicShapeFolds) {
  PassRun r = run_passes(kFlattenLastTwo, {"simplify-shapes", "dce"});
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[N,3,4]) -> (%y) {
  %i0 = init i64[] dense<0>
  %ax = init i64[1] dense<0>
  %u = init i64[1] dense<12>
  %s = Shape(%x)
  %d0 = Gather(%s, %i0) {axis=0}
  %u0 = Unsqueeze(%d0, %ax)
  %cat = Concat(%u0, %u) {axis=0}
  %y = Reshape(%x, %cat)
})"));
}

TEST(SimplifyShapes, ASymbolicDimThatIsReadStays) {
  expect_unchanged("simplify-shapes", R"(
graph g(%x: f32[N,12]) -> (%y) {
  %i0 = init i64[] dense<0>
  %ax = init i64[1] dense<0>
  %m = init i64[2] dense<3, 4>
  %s = Shape(%x)
  %d0 = Gather(%s, %i0) {axis=0}
  %u0 = Unsqueeze(%d0, %ax)
  %cat = Concat(%u0, %m) {axis=0}
  %y = Reshape(%x, %cat)
})");
}

TEST(SimplifyShapes, BoundDimsMakeTheWholeShapeKnown) {
  Model m = parse_verified(kFlattenLastTwo);
  PassContext ctx;
  ctx.bindings = {{"N", 5}};
  PassManager pm;
  pm.add("simplify-shapes");
  pm.add("dce");
  pm.run(m, ctx);
  EXPECT_EQ(show(m), canonical(R"(
graph g(%x: f32[5,3,4]) -> (%y) {
  %cat = init i64[2] dense<5, 12>
  %y = Reshape(%x, %cat)
})"));
}

TEST(SimplifyShapes, SizeAndShapeWithStartEnd) {
  PassRun r = run_passes(R"(
kiln.model ir=8 opset=15
graph g(%x: f32[2,3,4], %w: f32[12]) -> (%y, %n) {
  %s = Shape(%x) {start=1}
  %n = Size(%x)
  %y = Reshape(%w, %s)
})", {"simplify-shapes", "dce"});
  EXPECT_EQ(show(r.model), canonical(R"(
kiln.model ir=8 opset=15
graph g(%x: f32[2,3,4], %w: f32[12]) -> (%y, %n) {
  %s = init i64[2] dense<3, 4>
  %n = init i64[] dense<24>
  %y = Reshape(%w, %s)
})"));
}

}  // namespace
}  // namespace kiln::passes::test

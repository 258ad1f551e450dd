// BatchNormalization, InstanceNormalization, LayerNormalization, LpNormalization, LRN:
// hand-computed values and naive loops, optional outputs, opset differences, errors.
#include "test_nn_support.h"

namespace kiln::nntest {
namespace {

TEST(NnNorm, BatchNormInference) {
  // y = scale * (x - mean) / sqrt(var + eps) + B per channel; eps 0 keeps it exact.
  Tensor x = f32({1, 2, 2}, {1, 3, 10, 20});
  OneNode g("BatchNormalization",
            {in("x", x), init("s", f32({2}, {2, 1})), init("b", f32({2}, {1, 0})), init("m", f32({2}, {1, 10})),
             init("v", f32({2}, {4, 25}))},
            {"y"}, {{"epsilon", 0.f}});
  expect_values(g.run()[0], {1, 2, 2}, {1, 3, 0, 2});
}

TEST(NnNorm, BatchNormTrainingModeOpset14) {
  // Channel values {1, 3}: batch mean 2, population variance 1.
  Tensor x = f32({2, 1, 1}, {1, 3});
  OneNode g("BatchNormalization",
            {in("x", x), init("s", f32({1}, {1})), init("b", f32({1}, {0})), init("m", f32({1}, {0})),
             init("v", f32({1}, {1}))},
            {"y", "rm", "rv"}, {{"epsilon", 0.f}, {"momentum", 0.5f}, {"training_mode", 1}}, 15);
  auto r = g.run();
  expect_values(r[0], {2, 1, 1}, {-1, 1});
  expect_values(r[1], {1}, {1.0});   // 0 * 0.5 + 2 * 0.5
  expect_values(r[2], {1}, {1.0});   // 1 * 0.5 + 1 * 0.5
}

TEST(NnNorm, BatchNormSpatialZeroOpset7) {
  // spatial=0: one parameter per (channel, position).
  Tensor x = f32({1, 1, 2}, {4, 4});
  OneNode g("BatchNormalization",
            {in("x", x), init("s", f32({1, 2}, {1, 2})), init("b", f32({1, 2}, {0, 1})),
             init("m", f32({1, 2}, {0, 2})), init("v", f32({1, 2}, {1, 4}))},
            {"y"}, {{"epsilon", 0.f}, {"spatial", 0}}, 7);
  expect_values(g.run()[0], {1, 1, 2}, {4, 3});
}

TEST(NnNorm, BatchNormChannelMismatchNamesNode) {
  OneNode g("BatchNormalization",
            {in("x", Tensor(DType::f32, {1, 3, 2})), init("s", f32({2}, {1, 1})), init("b", f32({2}, {0, 0})),
             init("m", f32({2}, {0, 0})), init("v", f32({2}, {1, 1}))},
            {"y"});
  try {
    g.infer();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n0"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("channel"), std::string::npos);
  }
}

TEST(NnNorm, InstanceNorm) {
  // Plane {1, 3}: mean 2, var 1 -> {-1, 1}; plane {0, 4}: mean 2, var 4 -> {-1, 1}.
  Tensor x = f32({1, 2, 2}, {1, 3, 0, 4});
  OneNode g("InstanceNormalization", {in("x", x), init("s", f32({2}, {1, 3})), init("b", f32({2}, {0, 1}))}, {"y"},
            {{"epsilon", 0.f}});
  expect_values(g.run()[0], {1, 2, 2}, {-1, 1, -2, 4});
}

TEST(NnNorm, LayerNormWithStatsOutputs) {
  Tensor x = f32({2, 2}, {1, 3, 2, 6});
  OneNode g("LayerNormalization", {in("x", x), init("s", f32({2}, {1, 2})), init("b", f32({2}, {0, 1}))},
            {"y", "mean", "inv"}, {{"epsilon", 0.f}}, 17);
  auto r = g.run();
  expect_values(r[0], {2, 2}, {-1, 3, -1, 3});
  expect_values(r[1], {2, 1}, {2, 4});
  expect_values(r[2], {2, 1}, {1, 0.5});
  EXPECT_EQ(g.out(1).shape, Shape({2, 1}));
}

TEST(NnNorm, LayerNormAxisAndBroadcastScaleAgainstNaive) {
  Tensor x = random_f32({2, 3, 4}, 21), s = random_f32({4}, 22);
  OneNode g("LayerNormalization", {in("x", x), init("s", s)}, {"y"}, {{"axis", 1}, {"epsilon", 1e-3f}}, 17);
  Tensor y = g.run(2)[0];
  for (int64_t r = 0; r < 2; ++r) {
    const float* xr = x.data<float>() + r * 12;
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += xr[i] / 12.0;
    for (int i = 0; i < 12; ++i) var += (xr[i] - mean) * (xr[i] - mean) / 12.0;
    for (int i = 0; i < 12; ++i)
      ASSERT_NEAR(y.data<float>()[r * 12 + i], (xr[i] - mean) / std::sqrt(var + 1e-3) * s.data<float>()[i % 4], 1e-5);
  }
}

TEST(NnNorm, LpNormalization) {
  Tensor x = f32({2, 2}, {3, 4, -1, 1});
  OneNode l2("LpNormalization", {in("x", x)}, {"y"});
  expect_values(l2.run()[0], {2, 2}, {0.6, 0.8, -1 / std::sqrt(2.0), 1 / std::sqrt(2.0)});
  OneNode l1("LpNormalization", {in("x", x)}, {"y"}, {{"axis", 0}, {"p", 1}});
  expect_values(l1.run()[0], {2, 2}, {0.75, 0.8, -0.25, 0.2});
}

TEST(NnNorm, LRNAcrossChannels) {
  // size 2: window covers channels c and c+1 (floor((2-1)/2) = 0 before, 1 after).
  Tensor x = f32({1, 3, 1}, {1, 2, 3});
  OneNode g("LRN", {in("x", x)}, {"y"}, {{"size", 2}, {"alpha", 2.f}, {"beta", 1.f}, {"bias", 1.f}});
  // denominators: 1 + (2/2) * sumsq -> c0: 1+5, c1: 1+13, c2: 1+9
  expect_values(g.run()[0], {1, 3, 1}, {1.0 / 6, 2.0 / 14, 3.0 / 10});
}

TEST(NnNorm, SymbolicShapesPassThrough) {
  OneNode g("InstanceNormalization",
            {{"x", Tensor(), false, Shape({Dim::sym("N"), Dim(2), Dim::sym("L")})}, init("s", f32({2}, {1, 1})),
             init("b", f32({2}, {0, 0}))},
            {"y"});
  g.m.graph->inputs[0]->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("N"), Dim(2), Dim::sym("L")}));
}

}  // namespace
}  // namespace kiln::nntest

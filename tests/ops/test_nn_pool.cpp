// MaxPool, AveragePool and the global pools: hand-checked values, ceil_mode, dilations,
// padding divisors, Indices in both storage orders, symbolic shapes, errors.
#include "test_nn_support.h"

namespace kiln::nntest {
namespace {

using Ints = std::vector<int64_t>;

Tensor x4x4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  return f32({1, 1, 4, 4}, v);
}

TEST(NnPool, MaxPool2x2Stride2WithIndices) {
  OneNode g("MaxPool", {in("x", x4x4())}, {"y", "i"}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  auto r = g.run();
  expect_values(r[0], {1, 1, 2, 2}, {6, 8, 14, 16});
  expect_values(r[1], {1, 1, 2, 2}, {5, 7, 13, 15});
  EXPECT_EQ(g.out(1).dtype, DType::i64);
  // Column-major indices: element (h, w) of a 4x4 plane is h + 4 w.
  OneNode cm("MaxPool", {in("x", x4x4())}, {"y", "i"},
             {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"storage_order", 1}});
  expect_values(cm.run()[1], {1, 1, 2, 2}, {1 + 4 * 1, 1 + 4 * 3, 3 + 4 * 1, 3 + 4 * 3});
}

TEST(NnPool, MaxPoolIndicesCountWholeTensor) {
  // Second channel's indices continue after the first plane.
  std::vector<float> v = {1, 3, 2, 0, 5, 4};
  OneNode g("MaxPool", {in("x", f32({1, 2, 3}, v))}, {"y", "i"}, {{"kernel_shape", Ints{3}}});
  auto r = g.run();
  expect_values(r[0], {1, 2, 1}, {3, 5});
  expect_values(r[1], {1, 2, 1}, {1, 4});
}

TEST(NnPool, MaxPoolCeilModePadsAndDilation) {
  // 1-D 1..5, kernel 2 stride 2: floor gives 2 outputs, ceil gives 3 (last window clipped).
  Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  OneNode fl("MaxPool", {in("x", x)}, {"y"}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}});
  expect_values(fl.run()[0], {1, 1, 2}, {2, 4});
  OneNode ce("MaxPool", {in("x", x)}, {"y"}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", 1}});
  expect_values(ce.run()[0], {1, 1, 3}, {2, 4, 5});
  // Dilation 2, kernel 2: taps (i, i+2); with pad 1 on both sides.
  OneNode di("MaxPool", {in("x", f32({1, 1, 5}, {5, 1, 4, 2, 3}))}, {"y"},
             {{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}, {"pads", Ints{1, 1}}});
  // windows over padded positions -1..5: (-1,1),(0,2),(1,3),(2,4),(3,5)
  expect_values(di.run()[0], {1, 1, 5}, {1, 5, 2, 4, 2});
}

TEST(NnPool, AveragePoolPaddingDivisor) {
  Tensor x = f32({1, 1, 3}, {1, 2, 3});
  // kernel 3, pad 1: windows [pad,1,2], [1,2,3], [2,3,pad].
  OneNode ex("AveragePool", {in("x", x)}, {"y"}, {{"kernel_shape", Ints{3}}, {"pads", Ints{1, 1}}});
  expect_values(ex.run()[0], {1, 1, 3}, {1.5, 2, 2.5});
  OneNode inc("AveragePool", {in("x", x)}, {"y"},
              {{"kernel_shape", Ints{3}}, {"pads", Ints{1, 1}}, {"count_include_pad", 1}});
  expect_values(inc.run()[0], {1, 1, 3}, {1, 2, 5.0 / 3});
}

TEST(NnPool, AveragePoolCeilModeNeverCountsBeyondPadding) {
  // 1..5, kernel 2 stride 2 ceil: last window holds only 5 even with count_include_pad.
  Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  OneNode g("AveragePool", {in("x", x)}, {"y"},
            {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", 1}, {"count_include_pad", 1}});
  expect_values(g.run()[0], {1, 1, 3}, {1.5, 3.5, 5});
}

TEST(NnPool, AveragePool2DSameUpper) {
  // 4x4 with kernel 3 stride 2 SAME_UPPER: out 2x2, total pad 1 at the end of each dim.
  OneNode g("AveragePool", {in("x", x4x4())}, {"y"},
            {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"auto_pad", "SAME_UPPER"}});
  // windows rows {0,1,2},{2,3}; cols likewise.
  double a = (1 + 2 + 3 + 5 + 6 + 7 + 9 + 10 + 11) / 9.0, b = (3 + 4 + 7 + 8 + 11 + 12) / 6.0;
  double c = (9 + 10 + 11 + 13 + 14 + 15) / 6.0, d = (11 + 12 + 15 + 16) / 4.0;
  expect_values(g.run()[0], {1, 1, 2, 2}, {a, b, c, d});
}

TEST(NnPool, ThreeDMaxPoolAgainstNaive) {
  Tensor x = random_f32({2, 3, 5, 6, 4}, 5);
  OneNode g("MaxPool", {in("x", x)}, {"y"},
            {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{2, 2, 1}}, {"pads", Ints{0, 1, 0, 1, 1, 0}}});
  Tensor y = g.run(2)[0];
  // dim 0: (5 + 0 + 1 - 2) / 2 + 1 = 3; dim 1: (6 + 1 + 1 - 3) / 2 + 1 = 3; dim 2: 4 - 2 + 1 = 3.
  ASSERT_EQ(y.dims(), (Ints{2, 3, 3, 3, 3}));
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t c = 0; c < 3; ++c) {
          float best = -1e30f;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j)
              for (int64_t k = 0; k < 2; ++k) {
                int64_t d0 = a * 2 + i, d1 = b * 2 - 1 + j, d2 = c - 0 + k;
                if (d0 < 0 || d0 >= 5 || d1 < 0 || d1 >= 6 || d2 < 0 || d2 >= 4) continue;
                best = std::max(best, x.data<float>()[((p * 5 + d0) * 6 + d1) * 4 + d2]);
              }
          ASSERT_FLOAT_EQ(y.data<float>()[((p * 3 + a) * 3 + b) * 3 + c], best);
        }
}

TEST(NnPool, GlobalPools) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, -2, -3});
  OneNode avg("GlobalAveragePool", {in("x", x)}, {"y"});
  expect_values(avg.run()[0], {1, 2, 1, 1}, {2.5, -2.75});
  OneNode mx("GlobalMaxPool", {in("x", x)}, {"y"});
  expect_values(mx.run()[0], {1, 2, 1, 1}, {4, -1});
}

TEST(NnPool, SymbolicDimsAndErrors) {
  OneNode g("MaxPool", {{"x", Tensor(), false, Shape({Dim::sym("N"), Dim(8), Dim(7), Dim(7)})}}, {"y"},
            {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", 1}});
  g.m.graph->inputs[0]->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("N"), Dim(8), Dim(3), Dim(3)}));
  OneNode ga("GlobalAveragePool", {{"x", Tensor(), false, Shape({Dim::sym("N"), Dim(8), Dim::sym("H"), Dim(7)})}},
             {"y"});
  ga.m.graph->inputs[0]->dtype = DType::f32;
  ga.infer();
  EXPECT_EQ(ga.out(0).shape, Shape({Dim::sym("N"), Dim(8), Dim(1), Dim(1)}));
  OneNode bad("MaxPool", {in("x", x4x4())}, {"y"}, {{"kernel_shape", Ints{3}}});
  EXPECT_THROW(bad.infer(), Error);
  OneNode big("AveragePool", {in("x", x4x4())}, {"y"}, {{"kernel_shape", Ints{5, 5}}});
  EXPECT_THROW(big.infer(), Error);
}

}  // namespace
}  // namespace kiln::nntest

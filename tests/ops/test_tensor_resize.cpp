// Resize and Upsample: every coordinate_transformation_mode for a 2x2 -> 4x4 linear
// upsample (expected values from the spec formulas, worked out by hand below), every
// nearest_mode, cubic against the ONNX reference implementation's numbers, scales vs
// sizes, legacy opsets, shape inference and cost.
#include <gtest/gtest.h>

#include <cctype>
#include <climits>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

#include "ops/tensor_test_util.h"

namespace kiln {
namespace {

Tensor image() { return f32({1, 1, 2, 2}, {1, 2, 3, 4}); }
Tensor scales4(float h, float w) { return f32({4}, {1, 1, h, w}); }

// Bilinear interpolation of [[1,2],[3,4]] is the plane 1 + 2*y + x, so with the source
// coordinates cy/cx (already clamped to [0,1]) the expected 4x4 output is exact.
std::vector<double> plane(const std::vector<double>& c, double extrapolated = -1) {
  std::vector<double> v;
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = 0; j < c.size(); ++j)
      v.push_back(c[i] < 0 || c[j] < 0 ? extrapolated : 1 + 2 * c[i] + c[j]);
  return v;
}

TEST(TensorResize, LinearEveryCoordinateMode) {
  // source coordinate of output o (in = 2, out = 4, scale = 2), clamped to [0, 1]:
  //   half_pixel:        (o + 0.5) / 2 - 0.5  -> -0.25, 0.25, 0.75, 1.25
  //   pytorch_half_pixel: same (out > 1)
  //   align_corners:     o * (2-1) / (4-1)     -> 0, 1/3, 2/3, 1
  //   asymmetric:        o / 2                 -> 0, 0.5, 1, 1.5
  const std::map<std::string, std::vector<double>> coords = {
      {"half_pixel", {0, 0.25, 0.75, 1}},
      {"pytorch_half_pixel", {0, 0.25, 0.75, 1}},
      {"align_corners", {0, 1.0 / 3, 2.0 / 3, 1}},
      {"asymmetric", {0, 0.5, 1, 1}},
  };
  for (const auto& [mode, c] : coords) {
    OpRun r = run_op("Resize", {data(image()), none(), cst(scales4(2, 2))},
                     {{"mode", "linear"}, {"coordinate_transformation_mode", mode}});
    ASSERT_EQ(dims_str(r.out[0].dims()), "[1,1,4,4]") << mode;
    SCOPED_TRACE(mode);
    expect_near(r.out[0], plane(c));
  }
}

TEST(TensorResize, TfCropAndResizeWithExtrapolation) {
  // roi [.25, .75] on H and W: x = 0.25*(2-1) + o*(0.75-0.25)*(2-1)/(4-1) = 0.25 + o/6
  Tensor roi = f32({8}, {0, 0, 0.25f, 0.25f, 1, 1, 0.75f, 0.75f});
  OpRun r = run_op("Resize", {data(image()), cst(roi), cst(scales4(2, 2))},
                   {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}});
  expect_near(r.out[0], plane({0.25, 0.25 + 1.0 / 6, 0.25 + 2.0 / 6, 0.75}));
  // roi [0, 1.5]: x = o * 1.5 / 3 = 0, 0.5, 1, 1.5 -> the last row/column is outside
  Tensor wide = f32({8}, {0, 0, 0, 0, 1, 1, 1.5f, 1.5f});
  r = run_op("Resize", {data(image()), cst(wide), cst(scales4(2, 2))},
             {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"},
              {"extrapolation_value", 10.f}});
  expect_near(r.out[0], plane({0, 0.5, 1, -1}, 10));
  // nearest reads the same extrapolation value; x = 0.5 is a tie -> round_prefer_floor picks 0
  r = run_op("Resize", {data(image()), cst(wide), cst(scales4(2, 2))},
             {{"coordinate_transformation_mode", "tf_crop_and_resize"}, {"extrapolation_value", 10.f}});
  expect_near(r.out[0], {1, 1, 2, 10, 1, 1, 2, 10, 3, 3, 4, 10, 10, 10, 10, 10});
}

TEST(TensorResize, NearestModes) {
  Tensor x = f32({4}, {10, 20, 30, 40});
  // align_corners 4 -> 5: x = o * 3/4 = 0, 0.75, 1.5, 2.25, 3
  const std::map<std::string, std::vector<double>> want = {
      {"round_prefer_floor", {10, 20, 20, 30, 40}},
      {"round_prefer_ceil", {10, 20, 30, 30, 40}},
      {"floor", {10, 10, 20, 30, 40}},
      {"ceil", {10, 20, 30, 40, 40}},
  };
  for (const auto& [mode, v] : want) {
    SCOPED_TRACE(mode);
    OpRun r = run_op("Resize", {data(x), none(), none(), cst(i64s({5}))},
                     {{"coordinate_transformation_mode", "align_corners"}, {"nearest_mode", mode}});
    expect_near(r.out[0], v);
  }
  // default half_pixel + round_prefer_floor, x2: o/2 - 0.25
  expect_near(run_op("Resize", {data(x), none(), cst(f32({1}, {2}))}).out[0], {10, 10, 20, 20, 30, 30, 40, 40});
  // downsample x0.5 half_pixel: x = (o + 0.5) * 2 - 0.5 = 0.5, 2.5 (ties)
  expect_near(run_op("Resize", {data(x), none(), cst(f32({1}, {0.5f}))}).out[0], {10, 30});
  expect_near(run_op("Resize", {data(x), none(), cst(f32({1}, {0.5f}))}, {{"nearest_mode", "round_prefer_ceil"}})
                  .out[0],
              {20, 40});
  // any dtype: nearest only moves elements
  Tensor u8 = Tensor::from_vector<uint8_t>({2}, {7, 9});
  expect_near(run_op("Resize", {data(u8), none(), cst(f32({1}, {2}))}, {{"coordinate_transformation_mode", "asymmetric"}})
                  .out[0],
              {7, 7, 9, 9});
}

TEST(TensorResize, CubicMatchesOnnxReference) {
  // numbers from onnx.backend.test.case.node.resize.interpolate_nd on [1, 2, 4, 8], x2
  Tensor x = f32({4}, {1, 2, 4, 8});
  expect_near(run_op("Resize", {data(x), none(), cst(f32({1}, {2}))}, {{"mode", "cubic"}}).out[0],
              {0.89453125, 1.15625, 1.5625, 2.41796875, 3.16015625, 5.1171875, 7.1640625, 8.421875});
  expect_near(run_op("Resize", {data(x), none(), cst(f32({1}, {2}))},
                     {{"mode", "cubic"}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}})
                  .out[0],
              {0.9117647058823528, 1.1459854014598538, 1.6412213740458015, 2.3828125, 3.3359375, 5.022900763358779,
               7.2846715328467155, 8.352941176470587});
  expect_near(run_op("Resize", {data(x), none(), cst(f32({1}, {2}))},
                     {{"mode", "cubic"}, {"coordinate_transformation_mode", "align_corners"}})
                  .out[0],
              {1.0, 1.2623906705539347, 1.721574344023324, 2.462099125364427, 3.078717201166179, 4.641399416909625,
               6.4781341107871775, 8.0});
}

TEST(TensorResize, SizesEmptyScalesAndOpset11) {
  Tensor empty_f32(DType::f32, {0});
  OpRun r = run_op("Resize", {data(image()), none(), cst(empty_f32), cst(i64s({1, 1, 4, 4}))}, {{"mode", "linear"}});
  expect_near(r.out[0], plane({0, 0.25, 0.75, 1}));
  r = run_op("Resize", {data(image()), cst(empty_f32), cst(scales4(2, 2))}, {{"mode", "linear"}}, 11);
  expect_near(r.out[0], plane({0, 0.25, 0.75, 1}));
  EXPECT_THROW(run_op("Resize", {data(image()), none(), cst(scales4(2, 2)), cst(i64s({1, 1, 4, 4}))}), Error);
  EXPECT_THROW(run_op("Resize", {data(image()), none(), cst(f32({2}, {2, 2}))}), Error);
  EXPECT_THROW(run_op("Resize", {data(image()), none(), cst(scales4(2, 2))}, {{"mode", "area"}}), Error);
}

TEST(TensorResize, LegacyOpsetsAndUpsample) {
  // opset 10 and Upsample: asymmetric coordinates, nearest = floor when upsampling
  const std::vector<double> nearest = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  expect_near(run_op("Resize", {data(image()), cst(scales4(2, 2))}, {}, 10).out[0], nearest);
  expect_near(run_op("Resize", {data(image()), cst(scales4(2, 2))}, {{"mode", "linear"}}, 10).out[0],
              plane({0, 0.5, 1, 1}));
  expect_near(run_op("Upsample", {data(image())}, {{"scales", std::vector<float>{1, 1, 2, 2}}}, 7).out[0], nearest);
  expect_near(run_op("Upsample", {data(image()), cst(scales4(2, 2))}, {{"mode", "linear"}}, 9).out[0],
              plane({0, 0.5, 1, 1}));
}

TEST(TensorResize, ShapeInference) {
  auto x = std::make_pair(DType::f32, sym({"N", "1", "2", "2"}));
  auto four = std::make_pair(DType::f32, Shape({4}));
  EXPECT_EQ(infer_op("Resize", {x, {DType::f32, Shape({0})}, four}, {{2, scales4(2, 3)}}), "[N,1,4,6]");
  EXPECT_EQ(infer_op("Resize", {x, {DType::f32, Shape({0})}, {DType::f32, Shape({0})}, {DType::i64, Shape({4})}},
                     {{3, i64s({2, 1, 5, 5})}}),
            "[2,1,5,5]");
  EXPECT_EQ(infer_op("Resize", {x, {DType::f32, Shape({0})}, four}, {}), "[?,?,?,?]");
}

TEST(TensorResize, CostCountsInterpolationFlops) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({1, 1, 2, 2}));
  Value* s = g.add_initializer("s", scales4(2, 2));
  Node* lin = g.add_node("Resize", {x, nullptr, s}, {"y"}, {{"mode", "linear"}});
  Node* near = g.add_node("Resize", {x, nullptr, s}, {"z"});
  ops::infer_shapes(m);
  auto cl = ops::node_cost(*lin);
  auto cn = ops::node_cost(*near);
  ASSERT_TRUE(cl && cn);
  EXPECT_EQ(cl->flops, 2 * 4 * 16);  // 2 taps on each of 2 resized axes, a multiply-add each, 16 outputs
  EXPECT_EQ(cn->flops, 0);
  EXPECT_EQ(cn->bytes_written, 16 * 4);
}

}  // namespace
}  // namespace kiln

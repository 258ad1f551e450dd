// Tensor ops that move data: Concat, Split, Slice, Transpose, Expand, Tile, DepthToSpace,
// SpaceToDepth, Pad — hand-checked values for every mode, symbolic inference, errors.
#include <gtest/gtest.h>

#include <cctype>
#include <climits>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

#include "ops/tensor_test_util.h"

namespace kiln {
namespace {

// ---- Concat
TEST(TensorConcat, InnerAxisAndInference) {
  OpRun r = run_op("Concat", {data(f32({2, 1}, {1, 2})), data(f32({2, 2}, {3, 4, 5, 6}))}, {{"axis", int64_t{1}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,3]");
  expect_near(r.out[0], {1, 3, 4, 2, 5, 6});
  r = run_op("Concat", {data(i64s({1})), data(i64s({})), cst(i64s({2, 3}))}, {{"axis", int64_t{-1}}});
  expect_near(r.out[0], {1, 2, 3});
  auto a = std::make_pair(DType::f32, sym({"N", "2"}));
  EXPECT_EQ(infer_op("Concat", {a, {DType::f32, sym({"N", "3"})}}, {}, {{"axis", int64_t{1}}}), "[N,5]");
  // Symbolic lengths along the axis add up as an expression.
  EXPECT_EQ(infer_op("Concat", {a, {DType::f32, sym({"3", "2"})}}, {}, {{"axis", int64_t{0}}}), "[N+3,2]");
  EXPECT_THROW(run_op("Concat", {data(iota_f32({2, 3})), data(iota_f32({3, 3}))}, {{"axis", int64_t{1}}}), Error);
}

// ---- Split
TEST(TensorSplit, InputAttributeAndEqual) {
  OpRun r = run_op("Split", {data(iota_f32({6})), cst(i64s({2, 4}))}, {}, 13, 2);
  expect_near(r.out[0], {0, 1});
  expect_near(r.out[1], {2, 3, 4, 5});
  r = run_op("Split", {data(iota_f32({6}))}, {}, 13, 3);
  expect_near(r.out[2], {4, 5});
  r = run_op("Split", {data(iota_f32({2, 3}))}, {{"axis", int64_t{1}}, {"split", std::vector<int64_t>{1, 2}}}, 11, 2);
  expect_near(r.out[0], {0, 3});
  expect_near(r.out[1], {1, 2, 4, 5});
  EXPECT_EQ(r.inferred[1].str(), "[2,2]");
  EXPECT_THROW(run_op("Split", {data(iota_f32({6})), cst(i64s({2, 3}))}, {}, 13, 2), Error);
  EXPECT_THROW(run_op("Split", {data(iota_f32({5}))}, {}, 13, 2), Error);
}

// ---- Slice
Tensor ten() { return iota_f32({10}); }

TEST(TensorSlice, StepsAndNegativeSteps) {
  expect_near(run_op("Slice", {data(ten()), cst(i64s({1})), cst(i64s({8})), none(), cst(i64s({3}))}).out[0], {1, 4, 7});
  expect_near(run_op("Slice", {data(ten()), cst(i64s({8})), cst(i64s({1})), none(), cst(i64s({-3}))}).out[0], {8, 5, 2});
  expect_near(run_op("Slice", {data(ten()), cst(i64s({-1})), cst(i64s({INT64_MIN})), cst(i64s({0})), cst(i64s({-1}))})
                  .out[0],
              {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
}

TEST(TensorSlice, ClampsOutOfRange) {
  expect_near(run_op("Slice", {data(ten()), cst(i64s({-100})), cst(i64s({INT64_MAX}))}).out[0],
              {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(run_op("Slice", {data(ten()), cst(i64s({20})), cst(i64s({30}))}).out[0].numel(), 0);
  expect_near(run_op("Slice", {data(ten()), cst(i64s({20})), cst(i64s({7})), none(), cst(i64s({-1}))}).out[0], {9, 8});
  EXPECT_THROW(run_op("Slice", {data(ten()), cst(i64s({0})), cst(i64s({5})), none(), cst(i64s({0}))}), Error);
}

TEST(TensorSlice, AxesAndOldAttributes) {
  // x = [[0,1,2,3],[4,5,6,7]]
  OpRun r = run_op("Slice", {data(iota_f32({2, 4})), cst(i64s({1})), cst(i64s({3})), cst(i64s({-1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,2]");
  expect_near(r.out[0], {1, 2, 5, 6});
  r = run_op("Slice", {data(iota_f32({2, 4}))},
             {{"starts", std::vector<int64_t>{1, 0}}, {"ends", std::vector<int64_t>{2, 3}}}, 9);
  expect_near(r.out[0], {4, 5, 6});
  auto x = std::make_pair(DType::f32, sym({"N", "10"}));
  auto one = std::make_pair(DType::i64, Shape({1}));
  EXPECT_EQ(infer_op("Slice", {x, one, one, one}, {{1, i64s({2})}, {2, i64s({5})}, {3, i64s({1})}}), "[N,3]");
  EXPECT_EQ(infer_op("Slice", {x, one, one, one}, {{1, i64s({0})}, {2, i64s({INT64_MAX})}, {3, i64s({0})}}), "[N,10]");
  // starts unknown, axes known: the other dims pass through
  EXPECT_EQ(infer_op("Slice", {x, one, one, one}, {{2, i64s({5})}, {3, i64s({1})}}), "[N,?]");
}

// ---- Transpose
TEST(TensorTranspose, DefaultAndPerm) {
  OpRun r = run_op("Transpose", {data(iota_f32({2, 3}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3,2]");
  expect_near(r.out[0], {0, 3, 1, 4, 2, 5});
  Tensor x = iota_f32({2, 3, 4});
  r = run_op("Transpose", {data(x)}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  ASSERT_EQ(dims_str(r.out[0].dims()), "[3,4,2]");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(r.out[0].as_double((j * 4 + k) * 2 + i), x.as_double((i * 3 + j) * 4 + k));
  EXPECT_EQ(infer_op("Transpose", {{DType::f32, sym({"N", "3", "S"})}}, {}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
            "[S,N,3]");
  EXPECT_THROW(run_op("Transpose", {data(x)}, {{"perm", std::vector<int64_t>{0, 0, 1}}}), Error);
  EXPECT_THROW(run_op("Transpose", {data(x)}, {{"perm", std::vector<int64_t>{0, 1}}}), Error);
}

// ---- Expand / Tile
TEST(TensorExpand, Bidirectional) {
  OpRun r = run_op("Expand", {data(f32({3, 1}, {1, 2, 3})), cst(i64s({2, 1, 4}))});
  ASSERT_EQ(dims_str(r.out[0].dims()), "[2,3,4]");
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(r.out[0].as_double((b * 3 + i) * 4 + j), i + 1);
  r = run_op("Expand", {data(f32({3, 1}, {1, 2, 3})), cst(i64s({1, 1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3,1]");
  EXPECT_THROW(run_op("Expand", {data(f32({3}, {1, 2, 3})), cst(i64s({2}))}), Error);
  EXPECT_EQ(infer_op("Expand", {{DType::f32, sym({"N", "1"})}, {DType::i64, Shape({2})}}, {{1, i64s({1, 5})}}),
            "[N,5]");
}

TEST(TensorTile, Repeats) {
  OpRun r = run_op("Tile", {data(f32({2, 2}, {1, 2, 3, 4})), cst(i64s({1, 2}))});
  expect_near(r.out[0], {1, 2, 1, 2, 3, 4, 3, 4});
  r = run_op("Tile", {data(f32({2, 2}, {1, 2, 3, 4})), cst(i64s({2, 1}))});
  expect_near(r.out[0], {1, 2, 3, 4, 1, 2, 3, 4});
  EXPECT_THROW(run_op("Tile", {data(f32({2}, {1, 2})), cst(i64s({2, 1}))}), Error);
}

// ---- DepthToSpace / SpaceToDepth, checked element by element with the spec's index maps.
TEST(TensorDepthToSpace, DcrAndCrd) {
  const int64_t b = 2, C = 2, H = 2, W = 3;
  Tensor x = iota_f32({1, C * b * b, H, W});
  for (std::string mode : {"DCR", "CRD"}) {
    OpRun r = run_op("DepthToSpace", {data(x)}, {{"blocksize", b}, {"mode", mode}});
    ASSERT_EQ(dims_str(r.out[0].dims()), "[1,2,4,6]");
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H * b; ++h)
        for (int64_t w = 0; w < W * b; ++w) {
          int64_t i = h % b, j = w % b;
          int64_t src_c = mode == "DCR" ? (i * b + j) * C + c : c * b * b + i * b + j;
          EXPECT_EQ(r.out[0].as_double((c * H * b + h) * W * b + w), x.as_double((src_c * H + h / b) * W + w / b))
              << mode;
        }
  }
  EXPECT_THROW(run_op("DepthToSpace", {data(iota_f32({1, 3, 2, 2}))}, {{"blocksize", int64_t{2}}}), Error);
}

TEST(TensorSpaceToDepth, IndexMap) {
  const int64_t b = 2, C = 2, H = 4, W = 2;
  Tensor x = iota_f32({1, C, H, W});
  OpRun r = run_op("SpaceToDepth", {data(x)}, {{"blocksize", b}});
  ASSERT_EQ(dims_str(r.out[0].dims()), "[1,8,2,1]");
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H / b; ++h)
          for (int64_t w = 0; w < W / b; ++w)
            EXPECT_EQ(r.out[0].as_double((((i * b + j) * C + c) * (H / b) + h) * (W / b) + w),
                      x.as_double((c * H + h * b + i) * W + w * b + j));
  EXPECT_EQ(infer_op("SpaceToDepth", {{DType::f32, sym({"N", "2", "4", "2"})}}, {}, {{"blocksize", int64_t{2}}}),
            "[N,8,2,1]");
}

// ---- Pad
TEST(TensorPad, ConstantReflectEdge) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  // pads = [begin d0, begin d1, end d0, end d1]
  OpRun r = run_op("Pad", {data(x), cst(i64s({1, 0, 0, 1})), cst(Tensor::scalar<float>(9))});
  expect_near(r.out[0], {9, 9, 9, 1, 2, 9, 3, 4, 9});
  Tensor v = f32({3}, {1, 2, 3});
  expect_near(run_op("Pad", {data(v), cst(i64s({2, 2}))}, {{"mode", "reflect"}}).out[0], {3, 2, 1, 2, 3, 2, 1});
  expect_near(run_op("Pad", {data(v), cst(i64s({2, 1}))}, {{"mode", "edge"}}).out[0], {1, 1, 1, 2, 3, 3});
  expect_near(run_op("Pad", {data(v), cst(i64s({1, 1}))}).out[0], {0, 1, 2, 3, 0});  // default constant 0
  // reflect in 2-D: rows and columns mirrored independently
  r = run_op("Pad", {data(x), cst(i64s({1, 1, 0, 0}))}, {{"mode", "reflect"}});
  expect_near(r.out[0], {4, 3, 4, 2, 1, 2, 4, 3, 4});
}

TEST(TensorPad, NegativePadsOldOpsetAndInference) {
  expect_near(run_op("Pad", {data(f32({4}, {1, 2, 3, 4})), cst(i64s({-1, 1}))}).out[0], {2, 3, 4, 0});
  expect_near(run_op("Pad", {data(f32({2}, {1, 2}))}, {{"pads", std::vector<int64_t>{1, 2}}, {"value", 5.f}}, 7).out[0],
              {5, 1, 2, 5, 5});
  EXPECT_EQ(infer_op("Pad", {{DType::f32, sym({"N", "3"})}, {DType::i64, Shape({4})}}, {{1, i64s({0, 1, 0, 1})}}, {},
                     13),
            "[N,5]");
  EXPECT_THROW(run_op("Pad", {data(f32({2}, {1, 2})), cst(i64s({-2, -1}))}), Error);
  EXPECT_THROW(run_op("Pad", {data(f32({2}, {1, 2})), cst(i64s({1}))}), Error);
}

// ---- dtype-agnostic movement: 1-, 2- and 8-byte elements go through the same kernels.
TEST(TensorMovement, AnyElementSize) {
  Tensor b = Tensor::from_vector<bool>({2, 2}, {true, false, false, true});
  OpRun r = run_op("Transpose", {data(b)});
  EXPECT_EQ(r.out[0].dtype(), DType::boolean);
  expect_near(r.out[0], {1, 0, 0, 1});
  Tensor h = Tensor::from_vector<float>({3}, {1.5f, -2, 4}).cast(DType::f16);
  r = run_op("Concat", {data(h), data(h)}, {{"axis", int64_t{0}}});
  EXPECT_EQ(r.out[0].dtype(), DType::f16);
  expect_near(r.out[0], {1.5, -2, 4, 1.5, -2, 4});
  Tensor l = Tensor::from_vector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(run_op("Slice", {data(l), cst(i64s({2})), cst(i64s({-10})), cst(i64s({1})), cst(i64s({-2}))}).out[0],
              {3, 1, 6, 4});
  expect_near(run_op("Pad", {data(h), cst(i64s({1, 0}))}, {{"mode", "edge"}}).out[0], {1.5, 1.5, -2, 4});
}

TEST(TensorMovement, PartialShapeInference) {
  auto x = std::make_pair(DType::f32, sym({"N", "4"}));
  auto two = std::make_pair(DType::i64, Shape({2}));
  EXPECT_EQ(infer_op("Tile", {x, two}, {{1, i64s({1, 3})}}), "[N,12]");
  EXPECT_EQ(infer_op("Tile", {x, two}, {{1, i64s({2, 1})}}), "[?,4]");
  EXPECT_EQ(infer_op("Tile", {x, two}, {}), "[?,?]");
  EXPECT_EQ(infer_op("Expand", {x, two}, {}), "[?,4]");
  EXPECT_EQ(infer_op("Pad", {x, {DType::i64, Shape({4})}}, {}), "[?,?]");
  EXPECT_EQ(infer_op("Transpose", {{DType::f32, Shape::unknown_rank()}}, {}), "[*]");
}

// Large copies are split across threads: the result must equal the naive transpose.
TEST(TensorTranspose, LargeThreadedMatchesNaive) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({300, 7, 40}));
  Node* t = g.add_node("Transpose", {x}, {"y"}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  g.outputs.push_back(t->outputs[0]);
  Tensor in = iota_f32({300, 7, 40});
  RunOptions opt;
  opt.threads = 4;
  Tensor y = run_model(m, {{"x", in}}, opt).at("y");
  ASSERT_EQ(dims_str(y.dims()), "[40,300,7]");
  const float* p = y.data<float>();
  for (int64_t c = 0; c < 40; ++c)
    for (int64_t a = 0; a < 300; ++a)
      for (int64_t b = 0; b < 7; ++b) ASSERT_EQ(p[(c * 300 + a) * 7 + b], static_cast<float>((a * 7 + b) * 40 + c));
}

}  // namespace
}  // namespace kiln

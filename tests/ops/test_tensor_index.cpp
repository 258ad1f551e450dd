// Index-driven tensor ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements,
// NonZero, OneHot, EyeLike, Range, Trilu — spec examples, reductions, bounds errors.
#include <gtest/gtest.h>

#include <cctype>
#include <climits>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

#include "ops/tensor_test_util.h"

namespace kiln {
namespace {

Tensor i64m(std::vector<int64_t> dims, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(dims, v); }

// ---- Gather
TEST(TensorGather, AxesNegativeIndicesAndShapes) {
  Tensor x = iota_f32({3, 2});  // [[0,1],[2,3],[4,5]]
  OpRun r = run_op("Gather", {data(x), data(i64m({2, 2}, {0, 1, -1, 2}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,2,2]");
  expect_near(r.out[0], {0, 1, 2, 3, 4, 5, 4, 5});
  r = run_op("Gather", {data(x), data(Tensor::from_vector<int32_t>({1}, {1}))}, {{"axis", int64_t{1}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3,1]");
  expect_near(r.out[0], {1, 3, 5});
  r = run_op("Gather", {data(x), cst(Tensor::scalar<int64_t>(-2))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2]");
  expect_near(r.out[0], {2, 3});
  EXPECT_EQ(infer_op("Gather", {{DType::f32, sym({"N", "S", "4"})}, {DType::i64, sym({"B", "2"})}}, {},
                     {{"axis", int64_t{1}}}),
            "[N,B,2,4]");
}

TEST(TensorGather, OutOfRangeIndexThrows) {
  EXPECT_THROW(run_op("Gather", {data(iota_f32({3, 2})), data(i64s({3}))}), Error);
  EXPECT_THROW(run_op("Gather", {data(iota_f32({3, 2})), data(i64s({-4}))}), Error);
  EXPECT_THROW(run_op("Gather", {data(iota_f32({3, 2})), data(i64s({0}))}, {{"axis", int64_t{2}}}), Error);
}

TEST(TensorGatherElements, SpecExampleAndBounds) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  expect_near(run_op("GatherElements", {data(x), data(i64m({2, 2}, {0, 0, 1, 0}))}, {{"axis", int64_t{1}}}).out[0],
              {1, 1, 4, 3});
  // axis 0 with negative index and fewer rows: out[i][j] = x[idx[i][j]][j]
  expect_near(run_op("GatherElements", {data(x), data(i64m({1, 2}, {-1, 0}))}).out[0], {3, 2});
  EXPECT_THROW(run_op("GatherElements", {data(x), data(i64m({1, 2}, {2, 0}))}), Error);
  EXPECT_THROW(run_op("GatherElements", {data(x), data(i64m({1, 3}, {0, 0, 0}))}), Error);
}

TEST(TensorGatherND, SpecExamples) {
  Tensor x = Tensor::from_vector<int32_t>({2, 2}, {0, 1, 2, 3});
  expect_near(run_op("GatherND", {data(x), data(i64m({2, 2}, {0, 0, 1, 1}))}).out[0], {0, 3});
  OpRun r = run_op("GatherND", {data(x), data(i64m({2, 1}, {1, 0}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,2]");
  expect_near(r.out[0], {2, 3, 0, 1});
  Tensor x3 = Tensor::from_vector<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  r = run_op("GatherND", {data(x3), data(i64m({2, 1}, {1, 0}))}, {{"batch_dims", int64_t{1}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,2]");
  expect_near(r.out[0], {2, 3, 4, 5});
  EXPECT_THROW(run_op("GatherND", {data(x), data(i64m({1, 2}, {0, 2}))}), Error);
  EXPECT_THROW(run_op("GatherND", {data(x), data(i64m({1, 3}, {0, 0, 0}))}), Error);
}

// ---- ScatterND / ScatterElements
TEST(TensorScatterND, SpecExampleAndReductions) {
  Tensor x = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor upd = f32({4}, {9, 10, 11, 12});
  expect_near(run_op("ScatterND", {data(x), data(i64m({4, 1}, {4, 3, 1, 7})), data(upd)}).out[0],
              {1, 11, 3, 10, 9, 6, 7, 12});
  // duplicate indices accumulate with add / mul (opset 16)
  Tensor idx = i64m({3, 1}, {1, 1, -1});
  Tensor u3 = f32({3}, {2, 3, 4});
  expect_near(run_op("ScatterND", {data(x), data(idx), data(u3)}, {{"reduction", "add"}}, 16).out[0],
              {1, 7, 3, 4, 5, 6, 7, 12});
  expect_near(run_op("ScatterND", {data(x), data(idx), data(u3)}, {{"reduction", "mul"}}, 16).out[0],
              {1, 12, 3, 4, 5, 6, 7, 32});
  // slices: indices address rows of a matrix
  expect_near(run_op("ScatterND", {data(iota_f32({2, 2})), data(i64m({1, 1}, {1})), data(f32({1, 2}, {7, 8}))})
                  .out[0],
              {0, 1, 7, 8});
  EXPECT_THROW(run_op("ScatterND", {data(x), data(i64m({1, 1}, {8})), data(f32({1}, {0}))}), Error);
}

TEST(TensorScatterElements, SpecExamplesAndReductions) {
  OpRun r = run_op("ScatterElements",
                   {data(Tensor(DType::f32, {3, 3})), data(i64m({2, 3}, {1, 0, 2, 0, 2, 1})),
                    data(f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}))});
  expect_near(r.out[0], {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2});
  Tensor x = f32({1, 5}, {1, 2, 3, 4, 5});
  expect_near(run_op("ScatterElements", {data(x), data(i64m({1, 2}, {1, -2})), data(f32({1, 2}, {1.1f, 2.1f}))},
                     {{"axis", int64_t{1}}})
                  .out[0],
              {1, 1.1, 3, 2.1, 5});
  expect_near(run_op("ScatterElements", {data(x), data(i64m({1, 2}, {1, 1})), data(f32({1, 2}, {1.1f, 2.1f}))},
                     {{"axis", int64_t{1}}, {"reduction", "add"}}, 16)
                  .out[0],
              {1, 5.2, 3, 4, 5});
  expect_near(run_op("ScatterElements", {data(x), data(i64m({1, 2}, {1, 1})), data(f32({1, 2}, {1.1f, 2.1f}))},
                     {{"axis", int64_t{1}}, {"reduction", "mul"}}, 16)
                  .out[0],
              {1, 2 * 1.1 * 2.1, 3, 4, 5});
  EXPECT_THROW(run_op("ScatterElements", {data(x), data(i64m({1, 1}, {5})), data(f32({1, 1}, {0}))},
                      {{"axis", int64_t{1}}}),
               Error);
}

// ---- NonZero / OneHot / EyeLike
TEST(TensorNonZero, Coordinates) {
  OpRun r = run_op("NonZero", {data(f32({2, 2}, {1, 0, 1, 1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,3]");
  expect_near(r.out[0], {0, 1, 1, 0, 0, 1});
  EXPECT_EQ(r.inferred[0].str(), "[2,?]");
  r = run_op("NonZero", {data(Tensor::from_vector<bool>({3}, {false, true, false}))});
  expect_near(r.out[0], {1});
  r = run_op("NonZero", {data(f32({2}, {-0.0f, 0.0f}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[1,0]");
}

TEST(TensorOneHot, AxesNegativeAndOutOfRange) {
  Tensor vals = f32({2}, {-1, 5});
  OpRun r = run_op("OneHot", {data(i64s({0, 2, -1, 7})), cst(Tensor::scalar<int64_t>(3)), data(vals)});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[4,3]");
  expect_near(r.out[0], {5, -1, -1, -1, -1, 5, -1, -1, 5, -1, -1, -1});
  r = run_op("OneHot", {data(i64s({0, 2})), cst(Tensor::scalar<float>(3)), data(vals)}, {{"axis", int64_t{0}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3,2]");
  expect_near(r.out[0], {5, -1, -1, -1, -1, 5});
  EXPECT_THROW(run_op("OneHot", {data(i64s({0})), cst(Tensor::scalar<int64_t>(0)), data(vals)}), Error);
}

TEST(TensorEyeLike, DiagonalAndDtype) {
  OpRun r = run_op("EyeLike", {data(Tensor(DType::f32, {3, 4}))}, {{"k", int64_t{1}}});
  expect_near(r.out[0], {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  r = run_op("EyeLike", {data(Tensor(DType::f32, {2, 2}))}, {{"dtype", int64_t{7}}, {"k", int64_t{-1}}});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  expect_near(r.out[0], {0, 0, 1, 0});
}

// ---- Range / Trilu
TEST(TensorRange, IntFloatNegative) {
  auto i = [](int64_t v) { return cst(Tensor::scalar<int64_t>(v)); };
  OpRun r = run_op("Range", {i(1), i(10), i(3)});
  EXPECT_EQ(r.inferred[0].str(), "[3]");
  expect_near(r.out[0], {1, 4, 7});
  expect_near(run_op("Range", {i(10), i(4), i(-2)}).out[0], {10, 8, 6});
  EXPECT_EQ(run_op("Range", {i(5), i(1), i(1)}).out[0].numel(), 0);
  auto f = [](float v) { return data(Tensor::scalar<float>(v)); };
  r = run_op("Range", {f(0), f(1), f(0.25f)});
  EXPECT_EQ(r.inferred[0].str(), "[?]");
  expect_near(r.out[0], {0, 0.25, 0.5, 0.75});
  Tensor i32 = Tensor::scalar<int32_t>(2);
  expect_near(run_op("Range", {data(i32), data(Tensor::scalar<int32_t>(-3)), data(Tensor::scalar<int32_t>(-2))})
                  .out[0],
              {2, 0, -2});
  EXPECT_THROW(run_op("Range", {i(0), i(5), i(0)}), Error);
}

TEST(TensorTrilu, UpperLowerWithK) {
  Tensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_near(run_op("Trilu", {data(x)}, {}, 14).out[0], {1, 2, 3, 0, 5, 6, 0, 0, 9});
  expect_near(run_op("Trilu", {data(x), cst(Tensor::scalar<int64_t>(1))}, {}, 14).out[0], {0, 2, 3, 0, 0, 6, 0, 0, 0});
  expect_near(run_op("Trilu", {data(x), cst(Tensor::scalar<int64_t>(-1))}, {{"upper", int64_t{0}}}, 14).out[0],
              {0, 0, 0, 4, 0, 0, 7, 8, 0});
  expect_near(run_op("Trilu", {data(x)}, {{"upper", int64_t{0}}}, 14).out[0], {1, 0, 0, 4, 5, 0, 7, 8, 9});
  // a k far outside the matrix keeps everything (lower) or nothing (upper)
  expect_near(run_op("Trilu", {data(x), cst(Tensor::scalar<int64_t>(INT64_MAX))}, {{"upper", int64_t{0}}}, 14).out[0],
              {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_near(run_op("Trilu", {data(x), cst(Tensor::scalar<int64_t>(INT64_MAX))}, {}, 14).out[0],
              {0, 0, 0, 0, 0, 0, 0, 0, 0});
  // batched, non-square: [2,2,3]
  OpRun r = run_op("Trilu", {data(iota_f32({2, 2, 3})), cst(Tensor::scalar<int64_t>(5))}, {{"upper", int64_t{0}}}, 14);
  expect_near(r.out[0], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

}  // namespace
}  // namespace kiln

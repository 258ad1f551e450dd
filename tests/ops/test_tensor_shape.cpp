// Tensor ops that compute or change shapes: Reshape, Flatten, Squeeze, Unsqueeze, Shape,
// Size, Constant, ConstantOfShape, Identity, Dropout — values, inferred shapes (static and
// symbolic), the run-time shape chain Shape->Gather->Unsqueeze->Concat->Reshape, errors.
#include <gtest/gtest.h>

#include <cctype>
#include <climits>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

#include "ops/tensor_test_util.h"

namespace kiln {
namespace {

// ---- Reshape
TEST(TensorReshape, MinusOneAndZeroCopy) {
  OpRun r = run_op("Reshape", {data(iota_f32({2, 3, 4})), cst(i64s({4, -1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[4,6]");
  EXPECT_EQ(r.out[0].as_double(23), 23);
  r = run_op("Reshape", {data(iota_f32({2, 3, 4})), cst(i64s({0, -1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,12]");
  EXPECT_EQ(r.inferred[0].str(), "[2,12]");
}

TEST(TensorReshape, AllowZeroKeepsZero) {
  OpRun r = run_op("Reshape", {data(Tensor(DType::f32, {0, 3})), cst(i64s({3, 0}))}, {{"allowzero", int64_t{1}}}, 14);
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3,0]");
}

TEST(TensorReshape, BadTargetsThrow) {
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), cst(i64s({4, 2}))}), Error);
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), cst(i64s({-1, -1}))}), Error);
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), cst(i64s({-2, 3}))}), Error);
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), data(i64s({5, 1}))}), Error);  // caught at run time
}

TEST(TensorReshape, SymbolicDimsPassThrough) {
  auto x = std::make_pair(DType::f32, sym({"N", "128", "768"}));
  auto s = std::make_pair(DType::i64, Shape({4}));
  EXPECT_EQ(infer_op("Reshape", {x, s}, {{1, i64s({0, 128, 12, 64})}}), "[N,128,12,64]");
  EXPECT_EQ(infer_op("Reshape", {x, s}, {{1, i64s({0, 128, 12, -1})}}), "[N,128,12,64]");
  EXPECT_EQ(infer_op("Reshape", {x, {DType::i64, Shape({2})}}, {{1, i64s({-1, 768})}}), "[?,768]");
  // target unknown but of known length: rank known
  EXPECT_EQ(infer_op("Reshape", {x, s}, {}), "[?,?,?,?]");
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape: evaluated during inference, so the
// Reshape output is static; at opset 11 Unsqueeze takes axes as an attribute.
void shape_chain(int64_t opset) {
  Model m;
  m.opsets[""] = opset;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({2, 3, 4}));
  Node* shape = g.add_node("Shape", {x}, {"s"});
  Node* gather = g.add_node("Gather", {shape->outputs[0], g.add_initializer("zero", Tensor::scalar<int64_t>(0))},
                            {"d0"}, {{"axis", int64_t{0}}});
  Node* unsq = opset >= 13
                   ? g.add_node("Unsqueeze", {gather->outputs[0], g.add_initializer("axes", i64s({0}))}, {"u"})
                   : g.add_node("Unsqueeze", {gather->outputs[0]}, {"u"}, {{"axes", std::vector<int64_t>{0}}});
  Node* cat = g.add_node("Concat", {unsq->outputs[0], g.add_initializer("rest", i64s({-1}))}, {"target"},
                         {{"axis", int64_t{0}}});
  Node* reshape = g.add_node("Reshape", {x, cat->outputs[0]}, {"y"});
  g.outputs.push_back(reshape->outputs[0]);
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(gather->outputs[0]->shape.str(), "[]");
  EXPECT_EQ(cat->outputs[0]->shape.str(), "[2]");
  EXPECT_EQ(reshape->outputs[0]->shape.str(), "[2,12]");
  auto out = run_model(m, {{"x", iota_f32({2, 3, 4})}});
  EXPECT_EQ(dims_str(out.at("y").dims()), "[2,12]");
  EXPECT_EQ(out.at("y").as_double(13), 13);
}

TEST(TensorReshape, ShapeChainBecomesStatic) {
  shape_chain(13);
  shape_chain(11);
}

// ---- Flatten
TEST(TensorFlatten, Axes) {
  EXPECT_EQ(dims_str(run_op("Flatten", {data(iota_f32({2, 3, 4}))}).out[0].dims()), "[2,12]");
  EXPECT_EQ(dims_str(run_op("Flatten", {data(iota_f32({2, 3, 4}))}, {{"axis", int64_t{-1}}}).out[0].dims()), "[6,4]");
  OpRun r = run_op("Flatten", {data(iota_f32({2, 3, 4}))}, {{"axis", int64_t{0}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[1,24]");
  EXPECT_EQ(r.out[0].as_double(17), 17);
  EXPECT_EQ(infer_op("Flatten", {{DType::f32, sym({"N", "3", "4"})}}, {}), "[N,12]");
  EXPECT_EQ(infer_op("Flatten", {{DType::f32, sym({"N", "3", "4"})}}, {}, {{"axis", int64_t{2}}}), "[?,4]");
  EXPECT_THROW(run_op("Flatten", {data(iota_f32({2, 3}))}, {{"axis", int64_t{3}}}), Error);
}

// ---- Squeeze / Unsqueeze
TEST(TensorSqueeze, AxesInputAttributeAndAll) {
  EXPECT_EQ(dims_str(run_op("Squeeze", {data(iota_f32({2, 1, 3, 1})), cst(i64s({1}))}).out[0].dims()), "[2,3,1]");
  EXPECT_EQ(dims_str(run_op("Squeeze", {data(iota_f32({2, 1, 3, 1})), cst(i64s({-1, 1}))}).out[0].dims()), "[2,3]");
  EXPECT_EQ(dims_str(run_op("Squeeze", {data(iota_f32({2, 1, 3, 1}))}).out[0].dims()), "[2,3]");
  EXPECT_EQ(
      dims_str(run_op("Squeeze", {data(iota_f32({1, 2, 1}))}, {{"axes", std::vector<int64_t>{0}}}, 11).out[0].dims()),
      "[2,1]");
  EXPECT_THROW(run_op("Squeeze", {data(iota_f32({2, 3})), cst(i64s({0}))}), Error);
  EXPECT_EQ(infer_op("Squeeze", {{DType::f32, sym({"N", "1", "3"})}, {DType::i64, Shape({1})}}, {{1, i64s({1})}}),
            "[N,3]");
}

TEST(TensorUnsqueeze, AxesInputAndAttribute) {
  EXPECT_EQ(dims_str(run_op("Unsqueeze", {data(iota_f32({2, 3})), cst(i64s({0, -1}))}).out[0].dims()), "[1,2,3,1]");
  EXPECT_EQ(dims_str(run_op("Unsqueeze", {data(iota_f32({2, 3}))}, {{"axes", std::vector<int64_t>{1}}}, 11)
                         .out[0]
                         .dims()),
            "[2,1,3]");
  EXPECT_EQ(infer_op("Unsqueeze", {{DType::f32, sym({"N", "3"})}, {DType::i64, Shape({1})}}, {{1, i64s({0})}}),
            "[1,N,3]");
  EXPECT_THROW(run_op("Unsqueeze", {data(iota_f32({2})), cst(i64s({0, 0}))}), Error);
  EXPECT_THROW(run_op("Unsqueeze", {data(iota_f32({2})), cst(i64s({5}))}), Error);
}

// ---- Shape / Size
TEST(TensorShape, FullAndStartEnd) {
  Tensor x = iota_f32({2, 3, 4});
  expect_near(run_op("Shape", {data(x)}).out[0], {2, 3, 4});
  expect_near(run_op("Shape", {data(x)}, {{"start", int64_t{1}}}, 15).out[0], {3, 4});
  expect_near(run_op("Shape", {data(x)}, {{"end", int64_t{-1}}}, 15).out[0], {2, 3});
  expect_near(run_op("Shape", {data(x)}, {{"start", int64_t{-2}}, {"end", int64_t{10}}}, 15).out[0], {3, 4});
  EXPECT_EQ(run_op("Shape", {data(x)}, {{"start", int64_t{2}}, {"end", int64_t{1}}}, 15).out[0].numel(), 0);
  EXPECT_EQ(infer_op("Shape", {{DType::f32, sym({"N", "3"})}}, {}), "[2]");
}

TEST(TensorSize, CountsElements) {
  OpRun r = run_op("Size", {data(iota_f32({2, 3, 4}))});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  EXPECT_EQ(r.out[0].rank(), 0u);
  EXPECT_EQ(r.out[0].as_int64(0), 24);
}

// ---- Constant / ConstantOfShape
TEST(TensorConstant, EveryValueKind) {
  expect_near(run_op("Constant", {}, {{"value", f32({2}, {1.5f, 2.5f})}}).out[0], {1.5, 2.5});
  OpRun r = run_op("Constant", {}, {{"value_float", 3.5f}});
  EXPECT_EQ(r.out[0].rank(), 0u);
  expect_near(r.out[0], {3.5});
  expect_near(run_op("Constant", {}, {{"value_floats", std::vector<float>{1, 2}}}).out[0], {1, 2});
  r = run_op("Constant", {}, {{"value_int", int64_t{7}}});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  expect_near(r.out[0], {7});
  r = run_op("Constant", {}, {{"value_ints", std::vector<int64_t>{4, 5, 6}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3]");
  expect_near(r.out[0], {4, 5, 6});
  EXPECT_THROW(run_op("Constant", {}, {{"value_string", "hi"}}), Error);
  EXPECT_THROW(run_op("Constant", {}, {}), Error);
}

TEST(TensorConstantOfShape, DefaultAndValue) {
  OpRun r = run_op("ConstantOfShape", {cst(i64s({2, 3}))});
  EXPECT_EQ(r.out[0].dtype(), DType::f32);
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,3]");
  expect_near(r.out[0], {0, 0, 0, 0, 0, 0});
  r = run_op("ConstantOfShape", {data(i64s({3}))}, {{"value", Tensor::from_vector<int64_t>({1}, {7})}});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  EXPECT_EQ(r.inferred[0].str(), "[?]");
  expect_near(r.out[0], {7, 7, 7});
  EXPECT_THROW(run_op("ConstantOfShape", {cst(i64s({-1}))}), Error);
}

// ---- Identity / Dropout
TEST(TensorIdentity, CopiesAnyDtype) {
  Tensor x = Tensor::from_vector<int32_t>({2}, {5, -6});
  expect_near(run_op("Identity", {data(x)}).out[0], {5, -6});
}

TEST(TensorDropout, InferenceIsIdentityWithTrueMask) {
  OpRun r = run_op("Dropout", {data(f32({3}, {1, 2, 3})), cst(Tensor::scalar<float>(0.5f))}, {}, 13, 2);
  expect_near(r.out[0], {1, 2, 3});
  EXPECT_EQ(r.out[1].dtype(), DType::boolean);
  expect_near(r.out[1], {1, 1, 1});
  r = run_op("Dropout", {data(f32({2}, {1, 2}))}, {{"ratio", 0.3f}}, 7, 2);
  EXPECT_EQ(r.out[1].dtype(), DType::f32);  // before opset 10 the mask has the input's type
  expect_near(r.out[1], {1, 1});
  EXPECT_THROW(run_op("Dropout", {data(f32({2}, {1, 2})), cst(Tensor::scalar<float>(0.5f)),
                                  cst(Tensor::scalar<bool>(true))}),
               Error);
}

}  // namespace
}  // namespace kiln

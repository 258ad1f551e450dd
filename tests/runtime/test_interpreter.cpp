// The interpreter's input checking, dim binding and execution of a small multi-node graph.
#include <gtest/gtest.h>

#include "kiln/ops/op.h"
#include "kiln/ops/specialize.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {
namespace {

// y = Relu(x + b), x: f32[N,3], b: f32[3]
Model make_model() {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  g.name = "t";
  Value* x = g.add_input("x", DType::f32, Shape({Dim::sym("N"), Dim(3)}));
  Value* b = g.add_initializer("b", Tensor::from_vector<float>({3}, {1.f, -1.f, 0.5f}));
  Node* add = g.add_node("Add", {x, b}, {"s"});
  Node* relu = g.add_node("Relu", {add->outputs[0]}, {"y"});
  g.outputs.push_back(relu->outputs[0]);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Interpreter, RunsAndKeepsSymbolicDims) {
  Model m = make_model();
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,3]");
  auto out = run_model(m, {{"x", Tensor::from_vector<float>({2, 3}, {0.f, 0.f, 0.f, -2.f, 2.f, 1.f})}});
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  std::vector<float> want = {1.f, 0.f, 0.5f, 0.f, 1.f, 1.5f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;
}

TEST(Interpreter, InputErrorsNameInputExpectedAndActual) {
  Model m = make_model();
  auto wrong_dim = error_of([&] { run_model(m, {{"x", Tensor(DType::f32, {2, 4})}}); });
  EXPECT_NE(wrong_dim.find("input 'x': expected f32[N,3], got f32[2,4]"), std::string::npos) << wrong_dim;
  auto wrong_rank = error_of([&] { run_model(m, {{"x", Tensor(DType::f32, {3})}}); });
  EXPECT_NE(wrong_rank.find("rank 1 instead of 2"), std::string::npos) << wrong_rank;
  auto wrong_dtype = error_of([&] { run_model(m, {{"x", Tensor(DType::i64, {2, 3})}}); });
  EXPECT_NE(wrong_dtype.find("got i64[2,3] (wrong dtype)"), std::string::npos) << wrong_dtype;
  auto missing = error_of([&] { run_model(m, {}); });
  EXPECT_NE(missing.find("missing input 'x'"), std::string::npos) << missing;
  auto unknown = error_of([&] { run_model(m, {{"x", Tensor(DType::f32, {1, 3})}, {"z", Tensor(DType::f32, {1})}}); });
  EXPECT_NE(unknown.find("no input named 'z'"), std::string::npos) << unknown;
  auto out_of_range = error_of([&] { run_model(m, {{"x", Tensor(DType::f32, {9, 3})}}, {}, {{"N", {1, 8}}}); });
  EXPECT_NE(out_of_range.find("N=9 is out of range"), std::string::npos) << out_of_range;
  EXPECT_NO_THROW(run_model(m, {{"x", Tensor(DType::f32, {8, 3})}}, {}, {{"N", {1, 8}}}));
}

TEST(Specialize, DimAndShapeFlagsBindSymbols) {
  Model m = make_model();
  ops::InputSpec spec;
  spec.dims["N"] = 4;
  ops::specialize_inputs(m, spec);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[4,3]");

  Model m2 = make_model();
  ops::InputSpec by_shape;
  by_shape.shapes["x"] = {7, 3};
  auto b = ops::specialize_inputs(m2, by_shape);
  EXPECT_EQ(b.at("N"), 7);
  EXPECT_EQ(m2.graph->outputs[0]->shape.str(), "[7,3]");

  Model m3 = make_model();
  ops::InputSpec bad_name;
  bad_name.dims["batch"] = 2;
  auto e1 = error_of([&] { ops::specialize_inputs(m3, bad_name); });
  EXPECT_NE(e1.find("no dim named 'batch' (their symbolic dims: N)"), std::string::npos) << e1;
  ops::InputSpec bad_static;
  bad_static.shapes["x"] = {2, 5};
  auto e2 = error_of([&] { ops::specialize_inputs(m3, bad_static); });
  EXPECT_NE(e2.find("dim 1 must be 3"), std::string::npos) << e2;
  ops::InputSpec bad_input;
  bad_input.shapes["image"] = {1, 3};
  auto e3 = error_of([&] { ops::specialize_inputs(m3, bad_input); });
  EXPECT_NE(e3.find("no input named 'image' (inputs: x)"), std::string::npos) << e3;
}

}  // namespace
}  // namespace kiln

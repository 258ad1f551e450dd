// Shape inference keeps symbolic dims through run-time shape computations:
// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [128], [12], [64])) with x: f32[N,128,768]
// must give f32[N,128,12,64], and a -1 in the target is solved from the matching symbols.
#include <gtest/gtest.h>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {
namespace {

Tensor i64s(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }

Model head_split(bool use_minus_one) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({Dim::sym("N"), Dim(128), Dim(768)}));
  Node* shape = g.add_node("Shape", {x}, {"s"});
  Value* zero = g.add_initializer("zero", Tensor::scalar<int64_t>(0));
  Node* gather = g.add_node("Gather", {shape->outputs[0], zero}, {"n"}, {{"axis", int64_t{0}}});
  Value* axes = g.add_initializer("axes", i64s({0}));
  Node* unsq = g.add_node("Unsqueeze", {gather->outputs[0], axes}, {"n1"});
  Value* rest = g.add_initializer("rest", use_minus_one ? i64s({128, 12, -1}) : i64s({128, 12, 64}));
  Node* cat = g.add_node("Concat", {unsq->outputs[0], rest}, {"target"}, {{"axis", int64_t{0}}});
  Node* reshape = g.add_node("Reshape", {x, cat->outputs[0]}, {"y"});
  g.outputs.push_back(reshape->outputs[0]);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

TEST(SymbolicValues, ReshapeKeepsBatchSymbol) {
  Model m = head_split(false);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,128,12,64]");
}

TEST(SymbolicValues, MinusOneSolvedFromMatchingSymbols) {
  Model m = head_split(true);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,128,12,64]");
  // and the graph really computes that shape
  auto out = run_model(m, {{"x", Tensor(DType::f32, {2, 128, 768})}});
  EXPECT_EQ(out.at("y").dims(), (std::vector<int64_t>{2, 128, 12, 64}));
}

TEST(SymbolicValues, BindingMakesEverythingStatic) {
  Model m = head_split(true);
  ops::infer_shapes(m, {{"N", 3}});
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[3,128,12,64]");
}

}  // namespace
}  // namespace kiln

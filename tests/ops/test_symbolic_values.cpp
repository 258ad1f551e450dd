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

// GPT-2 decode: positions = Range(past, past + seq); the KV cache grows to past + seq.
TEST(SymbolicValues, RangeAndConcatLengthsAsExpressions) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* ids = g.add_input("ids", DType::i64, Shape({Dim(1), Dim::sym("seq")}));
  Value* past_k = g.add_input("past_k", DType::f32, Shape({Dim(1), Dim(12), Dim::sym("past"), Dim(64)}));
  Value* new_k = g.add_input("new_k", DType::f32, Shape({Dim(1), Dim(12), Dim::sym("seq"), Dim(64)}));
  Value* two = g.add_initializer("two", Tensor::scalar<int64_t>(2));
  Value* one = g.add_initializer("one", Tensor::scalar<int64_t>(1));
  Node* sk = g.add_node("Shape", {past_k}, {"sk"});
  Node* past = g.add_node("Gather", {sk->outputs[0], two}, {"past"}, {{"axis", int64_t{0}}});
  Node* si = g.add_node("Shape", {ids}, {"si"});
  Node* seq = g.add_node("Gather", {si->outputs[0], one}, {"seq"}, {{"axis", int64_t{0}}});
  Node* end = g.add_node("Add", {past->outputs[0], seq->outputs[0]}, {"end"});
  Node* pos = g.add_node("Range", {past->outputs[0], end->outputs[0], one}, {"pos"});
  Node* cat = g.add_node("Concat", {past_k, new_k}, {"present"}, {{"axis", int64_t{2}}});
  g.outputs = {pos->outputs[0], cat->outputs[0]};
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(pos->outputs[0]->shape.str(), "[seq]");
  EXPECT_EQ(cat->outputs[0]->shape.str(), "[1,12,past+seq,64]");
  auto out = run_model(m, {{"ids", Tensor(DType::i64, {1, 3})},
                           {"past_k", Tensor(DType::f32, {1, 12, 5, 64})},
                           {"new_k", Tensor(DType::f32, {1, 12, 3, 64})}});
  EXPECT_EQ(out.at("pos").to_int64_vector(), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(out.at("present").dims(), (std::vector<int64_t>{1, 12, 8, 64}));
}

}  // namespace
}  // namespace kiln

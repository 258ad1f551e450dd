// Core IR: dtypes, half conversions, shapes and broadcasting, tensors, graph structure.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/ir/graph.h"

namespace kiln {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32,
                  DType::i64, DType::boolean}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_from_name("float32"), DType::undefined);
}

TEST(DType, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);          // largest half
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);          // rounds to inf
  EXPECT_EQ(f32_to_f16(5.960464477539063e-08f), 1);  // smallest subnormal
  // 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even (1.0)
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_FLOAT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_FLOAT_EQ(f16_to_f32(1), 5.960464477539063e-08f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);  // halfway 0x3f80/0x3f81: ties to even
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // halfway 0x3f81/0x3f82: ties to even
  EXPECT_FLOAT_EQ(bf16_to_f32(0x4049), 3.140625f);
}

TEST(Shape, BroadcastKeepsSymbolsAndRejectsMismatch) {
  Shape a({Dim::sym("N"), Dim(1), Dim(4)});
  Shape b({Dim(3), Dim(1)});
  auto c = broadcast_shapes(a, b);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->str(), "[N,3,4]");
  EXPECT_FALSE(broadcast_shapes(Shape{2, 3}, Shape{4, 3}).has_value());
  EXPECT_EQ(broadcast_shapes(Shape::unknown_rank(), Shape{2})->str(), "[*]");
  EXPECT_EQ(bind_dims(a, {{"N", 8}}).str(), "[8,1,4]");
  EXPECT_EQ(Shape({Dim::sym("p2o.DynamicDimension.0"), Dim::unknown()}).str(), "[p2o.DynamicDimension.0,?]");
  EXPECT_EQ(*Shape({Dim(2), Dim(5)}).numel(), 10);
  EXPECT_FALSE(a.numel().has_value());
}

TEST(Tensor, CastReshapeClone) {
  Tensor t = Tensor::from_vector<float>({2, 2}, {1.5f, -2.5f, 300.f, 0.f});
  Tensor i = t.cast(DType::i8);
  EXPECT_EQ(i.data<int8_t>()[0], 1);
  EXPECT_EQ(i.data<int8_t>()[1], -2);   // truncation toward zero
  EXPECT_EQ(i.data<int8_t>()[2], 127);  // saturates
  Tensor b = t.cast(DType::boolean);
  EXPECT_TRUE(b.data<bool>()[0]);
  EXPECT_FALSE(b.data<bool>()[3]);
  Tensor h = t.cast(DType::f16);
  EXPECT_DOUBLE_EQ(h.as_double(1), -2.5);
  Tensor r = t.reshaped({4});
  EXPECT_EQ(r.raw(), t.raw());  // shares storage
  Tensor c = t.clone();
  EXPECT_NE(c.raw(), t.raw());
  EXPECT_EQ(c.data<float>()[2], 300.f);
  EXPECT_THROW(t.reshaped({3}), Error);
  EXPECT_THROW(t.data<int32_t>(), Error);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
}

TEST(Graph, VerifyCatchesUseBeforeDefinitionAndDuplicates) {
  Graph g;
  g.name = "g";
  Value* x = g.add_input("x", DType::f32, Shape{2});
  Node* n1 = g.add_node("Relu", {x}, {"y"});
  g.outputs.push_back(n1->outputs[0]);
  EXPECT_NO_THROW(verify_structure(g));
  EXPECT_THROW(g.add_value("y"), Error);  // duplicate name

  Graph bad;
  bad.name = "bad";
  Value* a = bad.add_input("a", DType::f32, Shape{2});
  Node* late = bad.add_node("Relu", {a}, {"late"});
  Node* early = bad.add_node("Relu", {a}, {"early"});
  early->inputs[0] = late->outputs[0];
  std::swap(bad.mutable_nodes()[0], bad.mutable_nodes()[1]);  // now 'early' reads 'late' before it runs
  bad.outputs.push_back(early->outputs[0]);
  try {
    verify_structure(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'late' is used before it is defined"), std::string::npos) << e.what();
  }
}

TEST(Graph, SubgraphReadsOuterValueAndReplaceAllUses) {
  Graph g;
  g.name = "main";
  Value* x = g.add_input("x", DType::f32, Shape{2});
  Value* c = g.add_input("c", DType::boolean, Shape{});
  auto then_g = std::make_shared<Graph>();
  then_g->name = "then";
  Node* inner = then_g->add_node("Relu", {x}, {"t"});  // reads the outer x
  then_g->outputs.push_back(inner->outputs[0]);
  auto else_g = std::make_shared<Graph>();
  else_g->name = "else";
  else_g->outputs.push_back(x);
  Node* iff = g.add_node("If", {c}, {"y"}, {{"then_branch", then_g}, {"else_branch", else_g}});
  g.outputs.push_back(iff->outputs[0]);
  EXPECT_EQ(then_g->parent, &g);
  EXPECT_EQ(then_g->find("x"), x);
  EXPECT_NO_THROW(verify_structure(g));
  auto users = g.users(x);
  ASSERT_EQ(users.size(), 1u);
  EXPECT_EQ(users[0], iff);

  Value* x2 = g.add_input("x2", DType::f32, Shape{2});
  g.replace_all_uses(x, x2);
  EXPECT_EQ(inner->inputs[0], x2);
  EXPECT_EQ(else_g->outputs[0], x2);
}

TEST(Graph, RemoveNodeRefusesLiveOutputs) {
  Graph g;
  Value* x = g.add_input("x", DType::f32, Shape{2});
  Node* a = g.add_node("Relu", {x}, {"a"});
  Node* b = g.add_node("Relu", {a->outputs[0]}, {"b"});
  g.outputs.push_back(b->outputs[0]);
  EXPECT_THROW(g.remove_node(a), Error);
  Node* dead = g.add_node("Relu", {x}, {"dead"});
  g.remove_node(dead);
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.find("dead"), nullptr);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(DimExpr, ParseFormatArithmeticAndBind) {
  auto past = *DimExpr::of(Dim::sym("past"));
  auto seq = *DimExpr::of(Dim::sym("seq"));
  EXPECT_EQ((past + seq).to_dim().str(), "past+seq");
  EXPECT_EQ(((past + seq) - past).to_dim().str(), "seq");  // Range(past, past+seq) has length seq
  EXPECT_EQ((past.scaled(2) - *DimExpr::of(Dim(1))).to_dim().str(), "2*past-1");
  EXPECT_EQ((past - past).to_dim(), Dim(0));
  auto parsed = DimExpr::of(Dim::sym("2*past-1+seq"));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->terms.at("past"), 2);
  EXPECT_EQ(parsed->terms.at("seq"), 1);
  EXPECT_EQ(parsed->constant, -1);
  EXPECT_FALSE(DimExpr::of(Dim::sym("2*")).has_value());
  EXPECT_FALSE(DimExpr::of(Dim::unknown()).has_value());
  // Dotted symbol names stay plain symbols.
  EXPECT_EQ(DimExpr::of(Dim::sym("p2o.DynamicDimension.0"))->terms.size(), 1u);
  Shape s({Dim::sym("past+seq"), Dim::sym("2*past-1"), Dim::sym("seq")});
  EXPECT_EQ(bind_dims(s, {{"past", 127}, {"seq", 1}}).str(), "[128,253,1]");
  EXPECT_EQ(bind_dims(s, {{"past", 127}}).str(), "[past+seq,253,seq]");
}

}  // namespace
}  // namespace kiln

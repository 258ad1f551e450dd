// Lowering wraps each lone f32 elementwise op into a one-op kiln.FusedElementwise (so codegen
// gives it a loop), keeps its name and output, and leaves integer ops, Identity and non-
// elementwise ops alone; the wrapped graph computes the same numbers (the body is the op).
#include <gtest/gtest.h>

#include "kiln/ir/text.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {
namespace {

const char* kText = R"(kiln.model ir=8 opset=17
graph main(%x: f32[2,3,4,4], %s: f32[2,3,1,1], %i: i64[2]) -> (%y, %q, %j) {
  %m = Mul(%x, %s)
  %sq = Mul(%m, %m)
  %id = Identity(%sq)
  %y = Softmax(%id) {axis=-1}
  %one = init i64[] dense<1>
  %j = Add(%i, %one)
  %q = Sigmoid(%x)
}
)";

Model parsed() {
  Model m = parse_model(kText);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

TEST(WrapElementwise, LoneFloatOpsBecomeOneOpFusedElementwise) {
  Model m = parsed();
  lower::LowerReport r = lower::lower_model(m);
  ops::verify_model(m);
  std::map<std::string, const Node*> by_name;
  for (const auto& n : m.graph->nodes()) by_name[n->outputs[0]->name] = n.get();
  for (const char* name : {"m", "sq", "q"}) {
    const Node* n = by_name.at(name);
    EXPECT_EQ(n->domain, "kiln") << name;
    EXPECT_EQ(n->op, "FusedElementwise") << name;
    const Graph& body = *n->find_attr("body")->g();
    ASSERT_EQ(body.nodes().size(), 1u) << name;
    EXPECT_EQ(body.parent, m.graph.get());
  }
  EXPECT_EQ(by_name.at("m")->find_attr("body")->g()->nodes()[0]->op, "Mul");
  EXPECT_EQ(by_name.at("m")->inputs.size(), 2u);
  EXPECT_EQ(by_name.at("sq")->inputs.size(), 1u);  // Mul(m, m): one body input read twice
  EXPECT_EQ(by_name.at("q")->find_attr("body")->g()->nodes()[0]->op, "Sigmoid");
  EXPECT_EQ(by_name.at("id")->op, "Identity");
  EXPECT_EQ(by_name.at("y")->op, "Softmax");
  EXPECT_EQ(by_name.at("j")->op, "Add");  // integer arithmetic stays visible
  int generated = 0;
  for (const auto& k : r.kernels) generated += k.tactic == "generated";
  EXPECT_EQ(generated, 3);
}

TEST(WrapElementwise, TheWrappedGraphComputesTheSameNumbers) {
  Model before = parsed(), after = parsed();
  lower::lower_model(after);
  Tensor x(DType::f32, {2, 3, 4, 4}), s(DType::f32, {2, 3, 1, 1}), i(DType::i64, {2});
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = 0.1f * static_cast<float>(k % 17) - 0.7f;
  for (int64_t k = 0; k < s.numel(); ++k) s.data<float>()[k] = 0.5f + 0.25f * static_cast<float>(k);
  i.data<int64_t>()[0] = 4, i.data<int64_t>()[1] = -2;
  std::map<std::string, Tensor> in = {{"x", x}, {"s", s}, {"i", i}};
  auto want = run_model(before, in), got = run_model(after, in);
  for (const auto& [name, t] : want) {
    ASSERT_EQ(got.at(name).dims(), t.dims()) << name;
    for (int64_t k = 0; k < t.numel(); ++k) EXPECT_EQ(got.at(name).as_double(k), t.as_double(k)) << name << " " << k;
  }
}

}  // namespace
}  // namespace kiln

// Per-layer sensitivity and the accuracy budget: a three-layer MLP whose middle layer is made
// fragile on purpose must come out most sensitive, and the budget must keep it (and only it)
// in float; copy_model must give an independent, equal model.
#include <gtest/gtest.h>

#include <random>

#include "kiln/compress/model_copy.h"
#include "kiln/compress/report.h"
#include "kiln/compress/sensitivity.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace {

// x[8,16] -> Gemm g1 (16->24) -> Relu -> Gemm g2 (24->24) -> Relu -> Gemm g3 (24->10) -> y.
// g2 is fragile: every output channel has a weight of 1000 on input feature 0, which g1's Relu
// always zeroes (its row 0 has a bias of -1e4), so the float model ignores it; int8 per-channel
// weights scale each row by 1000 / 127 and round every other weight (about 0.2) to 0.
Model fragile_mlp() {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 0.2f);
  auto matrix = [&](int64_t r, int64_t c) {
    Tensor t(DType::f32, {r, c});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
    return t;
  };
  Model m = parse_model(R"(kiln.model opset=13
graph g(%x: f32[8,16]) -> (%y) {
  %w1 = init f32[24,16] dense<0>
  %b1 = init f32[24] dense<0>
  %w2 = init f32[24,24] dense<0>
  %b2 = init f32[24] dense<0.1>
  %w3 = init f32[10,24] dense<0>
  %b3 = init f32[10] dense<0>
  %h1 = Gemm(%x, %w1, %b1) {transB=1}
  %r1 = Relu(%h1)
  %h2 = Gemm(%r1, %w2, %b2) {transB=1}
  %r2 = Relu(%h2)
  %y = Gemm(%r2, %w3, %b3) {transB=1}
})");
  Graph& g = *m.graph;
  Tensor w1 = matrix(24, 16), b1(DType::f32, {24}), w2 = matrix(24, 24);
  b1.data<float>()[0] = -1e4f;
  for (int64_t o = 0; o < 24; ++o) w2.data<float>()[o * 24] = 1000.f;
  g.find("w1")->initializer = w1;
  g.find("b1")->initializer = b1;
  g.find("w2")->initializer = w2;
  g.find("w3")->initializer = matrix(10, 24);
  int k = 0;
  for (const auto& n : g.nodes())
    if (n->op == "Gemm") n->name = "g" + std::to_string(++k);
  ops::infer_shapes(m);
  return m;
}

TEST(ModelCopy, IsEqualAndIndependent) {
  Model m = fragile_mlp();
  Model c = copy_model(m);
  EXPECT_EQ(print_model(c), print_model(m));
  c.graph->mutable_nodes()[1]->op = "Sigmoid";  // the copy's Relu
  EXPECT_EQ(m.graph->nodes()[1]->op, "Relu");
  EXPECT_NE(print_model(c), print_model(m));
}

TEST(Sensitivity, TheFragileLayerRanksFirstAndTheBudgetKeepsOnlyItInFloat) {
  Model m = fragile_mlp();
  QuantizeOptions opt;
  QuantPlan full = plan_static(m, opt);
  ASSERT_EQ(full.nodes, (std::vector<std::string>{"g1", "g2", "g3"}));
  BatchSource calib = BatchSource::random(m, 8, 11);
  auto obs = calibrate(m, full.tensors, calib, full.channel_axis);
  EvalSet eval = load_eval_set(m, "", 4, 99);
  BudgetPlan p = plan_accuracy_budget(m, full, obs, opt, eval, 1.0);
  ASSERT_EQ(p.layers.size(), 3u);
  EXPECT_EQ(p.layers[1].node, "g2");
  EXPECT_EQ(p.layers[1].rank, 1);
  EXPECT_LT(p.layers[1].score.worst_cosine, 0.9);    // g2 alone ruins the output
  EXPECT_GT(p.layers[0].score.worst_cosine, 0.999);  // g1, g3 alone barely change it
  EXPECT_GT(p.layers[2].score.worst_cosine, 0.999);
  // All int8 breaks the budget; with g2 in float it holds.
  ASSERT_GE(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].float_layers, 0);
  EXPECT_FALSE(p.steps[0].within);
  EXPECT_TRUE(p.met);
  EXPECT_EQ(p.float_nodes, (std::vector<std::string>{"g2"}));
  EXPECT_EQ(p.final_step.float_layers, 1);
  EXPECT_LE(p.final_step.loss, 1.0);
  EXPECT_TRUE(p.layers[1].kept_float);
  EXPECT_FALSE(p.layers[0].kept_float);
  // The chosen mixed model, re-scored independently, has the reported loss.
  OutputJudge judge(m, eval);
  EvalScore s = judge.score(mixed_qdq_model(m, full, obs, opt, p.float_nodes));
  EXPECT_NEAR(judge.loss(s), p.final_step.loss, 1e-9);
  EXPECT_NE(format_budget_plan(p).find("g2"), std::string::npos);
  EXPECT_NE(budget_plan_json(p).find("\"float_nodes\": [\"g2\"]"), std::string::npos);
  // A budget nothing but all-float satisfies is reported as unmet.
  BudgetPlan none = plan_accuracy_budget(m, full, obs, opt, eval, 0.0);
  EXPECT_FALSE(none.met);
}

TEST(Sensitivity, AccuracyBudgetUsesLabelsWhenGiven) {
  Model m = fragile_mlp();
  QuantizeOptions opt;
  QuantPlan full = plan_static(m, opt);
  auto obs = calibrate(m, full.tensors, BatchSource::random(m, 8, 11), full.channel_axis);
  EvalSet eval = load_eval_set(m, "", 4, 99);
  // Labels = the float model's own argmax: float accuracy 100 %.
  Tensor labels(DType::i64, {32});
  int64_t row = 0;
  for (const auto& b : eval.batches) {
    Tensor y = run_model(m, b).at("y");
    for (int64_t i = 0; i < 8; ++i, ++row)
      labels.data<int64_t>()[row] = std::max_element(y.data<float>() + i * 10, y.data<float>() + i * 10 + 10) -
                                    (y.data<float>() + i * 10);
  }
  eval.labels = labels;
  BudgetPlan p = plan_accuracy_budget(m, full, obs, opt, eval, 5.0);
  ASSERT_TRUE(p.accuracy_fp32);
  EXPECT_DOUBLE_EQ(*p.accuracy_fp32, 100.0);
  EXPECT_NE(p.metric.find("accuracy"), std::string::npos);
  EXPECT_EQ(p.float_nodes, (std::vector<std::string>{"g2"}));
  ASSERT_TRUE(p.final_step.score.accuracy);
  EXPECT_GE(*p.final_step.score.accuracy, 95.0);
  EXPECT_NEAR(p.final_step.loss, 100.0 - *p.final_step.score.accuracy, 1e-9);
}

}  // namespace
}  // namespace kiln::compress

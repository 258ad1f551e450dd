// `kiln perf --measured`: efficiency, and causes that come from the graph (not canned text).
#include <gtest/gtest.h>

#include "toy_mlp.h"
#include "kiln/analysis/perf_diagnose.h"
#include "kiln/ir/error.h"
#include "kiln/ops/op.h"

namespace kiln::analysis {
namespace {

Chip toy_chip(bool with_int8, bool device) {
  std::string text = R"({"name": "toy", "source": "test", "peak_tflops": {"fp32": 100)";
  text += with_int8 ? R"(, "int8": 400})" : "}";
  text += R"(, "memory_gbs": 1000, "memory_gib": 1, "launch_overhead_us": 2)";
  text += device ? R"(, "device_memory": true, "interconnect": {"pcie_gbs": 64}})" : "}";
  return parse_chip_json(text, "toy.json");
}

// Scores = Q K^T / 8 -> Softmax -> x V, with Q,K,V inputs [N,4,16,8] (K given transposed).
Model attention() {
  Model m;
  m.opsets[""] = 17;
  Graph& g = *m.graph;
  Value* q = g.add_input("q", DType::f32, Shape({Dim::sym("N"), Dim(4), Dim(16), Dim(8)}));
  Value* kt = g.add_input("kt", DType::f32, Shape({Dim::sym("N"), Dim(4), Dim(8), Dim(16)}));
  Value* v = g.add_input("v", DType::f32, Shape({Dim::sym("N"), Dim(4), Dim(16), Dim(8)}));
  Value* scale = g.add_initializer("scale", Tensor::from_vector<float>({}, {8}));
  Value* s = g.add_node("MatMul", {q, kt}, {"s"}, {}, "qk")->outputs[0];
  Value* d = g.add_node("Div", {s, scale}, {"d"}, {}, "scale")->outputs[0];
  Value* p = g.add_node("Softmax", {d}, {"p"}, {{"axis", int64_t{-1}}}, "softmax")->outputs[0];
  g.outputs = {g.add_node("MatMul", {p, v}, {"o"}, {}, "pv")->outputs[0]};
  ops::infer_shapes(m);
  return m;
}

const Cause* find(const std::vector<Cause>& causes, const std::string& kind) {
  for (const auto& c : causes)
    if (c.kind == kind) return &c;
  return nullptr;
}

TEST(PerfDiagnose, CausesComeFromTheGraph) {
  Model m = toy_mlp(Dim::sym("N"));
  Chip chip = toy_chip(true, true);
  BatchBinder binder(m, "");
  binder.bind(32);
  PerfRow row = estimate(m, 32, chip, {}, true);
  std::vector<Cause> causes = find_causes(m, row, chip, {});
  const Cause* chain = find(causes, "unfused-elementwise");
  ASSERT_NE(chain, nullptr);
  EXPECT_NE(chain->detail.find("1 chains"), std::string::npos) << chain->detail;
  EXPECT_NE(chain->detail.find("2 intermediates, 32.00 KiB"), std::string::npos) << chain->detail;  // 2 x 2 x 32*64*4
  EXPECT_NE(chain->detail.find("MatMul->Add->Relu at 'mm'"), std::string::npos) << chain->detail;
  EXPECT_NEAR(chain->ms, (32768.0 / 1e12 + 2 * 2e-6) * 1e3, 1e-12);
  const Cause* tr = find(causes, "layout-transpose");
  ASSERT_NE(tr, nullptr);
  EXPECT_NE(tr->detail.find("1 Transpose kernels move 16.00 KiB"), std::string::npos) << tr->detail;
  ASSERT_NE(find(causes, "float-gemm"), nullptr);
  const Cause* copy = find(causes, "host-device-copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_NEAR(copy->ms, 2 * 32 * 64 * 4 / 32e9 * 1e3, 1e-12);  // 64 GB/s both ways = 32 each
  EXPECT_EQ(find(causes, "materialised-scores"), nullptr);
  for (size_t i = 1; i < causes.size(); ++i) EXPECT_GE(causes[i - 1].ms, causes[i].ms);

  // Without an int8 peak or a host link, those causes are not offered.
  std::vector<Cause> host = find_causes(m, row, toy_chip(false, false), {});
  EXPECT_EQ(find(host, "float-gemm"), nullptr);
  EXPECT_EQ(find(host, "host-device-copy"), nullptr);
}

TEST(PerfDiagnose, FindsMaterialisedAttentionScores) {
  Model m = attention();
  Chip chip = toy_chip(false, false);
  Diagnosis d = diagnose(m, chip, {}, 10.0, 2);
  EXPECT_TRUE(d.off_by_2x);
  const Cause* s = find(d.causes, "materialised-scores");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->detail.find("1 attention blocks"), std::string::npos) << s->detail;
  EXPECT_NE(s->detail.find("scores [2,4,16,16]"), std::string::npos) << s->detail;
  EXPECT_NE(s->detail.find("8.00 KiB"), std::string::npos) << s->detail;  // 2*4*16*16*4
}

TEST(PerfDiagnose, EfficiencyAndDirection) {
  Model m = toy_mlp(Dim::sym("N"));
  Chip chip = toy_chip(true, false);
  Diagnosis fast = diagnose(m, chip, {}, 1e-6, 1);
  EXPECT_TRUE(fast.off_by_2x);
  EXPECT_GT(fast.efficiency, 2);
  ASSERT_EQ(fast.causes.size(), 1u);
  EXPECT_EQ(fast.causes[0].kind, "model-too-pessimistic");
  Diagnosis near = diagnose(m, chip, {}, fast.predicted_ms * 1.5, 1);
  EXPECT_FALSE(near.off_by_2x);
  EXPECT_NEAR(near.efficiency, 1 / 1.5, 1e-12);
  EXPECT_TRUE(near.causes.empty());
  // Predicting leaves the model as loaded: it can be bound again at another batch.
  predict(m, {4}, chip, {});
  EXPECT_EQ(diagnose(m, chip, {}, 1.0, 8).batch, 8);
  EXPECT_EQ(m.graph->inputs[0]->shape.dims[0].symbol, "N");
  EXPECT_EQ(parse_measured("12.5@8", 1), (std::pair<double, int64_t>{12.5, 8}));
  EXPECT_EQ(parse_measured("3", 4), (std::pair<double, int64_t>{3, 4}));
  EXPECT_THROW(parse_measured("fast", 1), Error);
  EXPECT_THROW(parse_measured("3@0", 1), Error);
}

}  // namespace
}  // namespace kiln::analysis

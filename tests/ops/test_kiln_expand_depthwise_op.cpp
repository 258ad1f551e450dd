// kiln.ExpandDepthwise against the ONNX ops it replaces (1x1 Conv -> Clip -> depthwise Conv ->
// Relu), its shape inference's checks, the refusal of pre-packed weights, and its cost.
#include "kiln/ops/kiln_ops.h"
#include "test_kiln_support.h"

namespace kiln::kilntest {
namespace {

const char* kUnfused = R"(kiln.model opset=13
graph g(%x: f32[2,4,9,8], %w1: f32[8,4,1,1], %b1: f32[8], %w2: f32[8,1,3,3], %b2: f32[8]) -> (%y) {
  %lo = init f32[] dense<0.0>
  %hi = init f32[] dense<0.5>
  %e = Conv(%x, %w1, %b1)
  %m = Clip(%e, %lo, %hi)
  %d = Conv(%m, %w2, %b2) {group=8, pads=[1,1,1,1], strides=[2,2]}
  %y = Relu(%d)
})";

const char* kFused = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,4,9,8], %w1: f32[8,4,1,1], %b1: f32[8], %w2: f32[8,1,3,3], %b2: f32[8]) -> (%y) {
  %y = kiln::ExpandDepthwise(%x, %w1, %b1, %w2, %b2) {group=8, pads=[1,1,1,1], strides=[2,2], activation="Relu", expand_activation="Clip", expand_act_alpha=0.0, expand_act_beta=0.5}
})";

std::map<std::string, Tensor> feeds() {
  return {{"x", random_f32({2, 4, 9, 8}, 1)},
          {"w1", random_f32({8, 4, 1, 1}, 2)},
          {"b1", random_f32({8}, 3)},
          {"w2", random_f32({8, 1, 3, 3}, 4)},
          {"b2", random_f32({8}, 5)}};
}

TEST(KilnExpandDepthwise, EqualsConvClipDepthwiseConvReluOnRandomData) {
  Tensor want = run_text(kUnfused, feeds());
  Tensor got = run_text(kFused, feeds());
  ASSERT_EQ(got.dims(), (std::vector<int64_t>{2, 8, 5, 4}));
  expect_close(got, want, 1e-6);
  // The expand's clip bound matters: a different one gives different outputs.
  std::string other = kFused;
  other.replace(other.find("expand_act_beta=0.5"), 19, "expand_act_beta=6.0");
  Tensor differs = run_text(other, feeds());
  double most = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    most = std::max(most, std::abs(double(got.data<float>()[i]) - differs.data<float>()[i]));
  EXPECT_GT(most, 0.1);
}

// The optional second output M is GlobalAveragePool(Y), as FusedConv's.
TEST(KilnExpandDepthwise, SecondOutputIsTheGlobalAverageOfTheFirst) {
  std::string unfused = kUnfused, fused = kFused;
  unfused.replace(unfused.find("-> (%y)"), 7, "-> (%m2)");
  unfused.replace(unfused.find("  %y = Relu(%d)"), 15, "  %y = Relu(%d)\n  %m2 = GlobalAveragePool(%y)");
  fused.replace(fused.find("-> (%y)"), 7, "-> (%m2)");
  fused.replace(fused.find("%y = kiln::ExpandDepthwise"), 26, "%y, %m2 = kiln::ExpandDepthwise");
  Tensor want = run_text(unfused, feeds());
  Tensor got = run_text(fused, feeds());
  ASSERT_EQ(got.dims(), (std::vector<int64_t>{2, 8, 1, 1}));
  expect_close(got, want, 1e-6);
  Model m = parse_model(fused);
  ops::infer_shapes(m);
  ops::Cost with_m = *ops::node_cost(*m.graph->nodes().at(0));
  Model plain = parse_model(kFused);
  ops::infer_shapes(plain);
  EXPECT_DOUBLE_EQ(with_m.flops - ops::node_cost(*plain.graph->nodes().at(0))->flops, 2.0 * 8 * 5 * 4);
}

TEST(KilnExpandDepthwise, CostIsBothConvolutionsWithoutTheExpandedTensor) {
  Model unfused = parse_model(kUnfused);
  Model fused = parse_model(kFused);
  ops::infer_shapes(unfused);
  ops::infer_shapes(fused);
  ops::Cost f = *ops::node_cost(*fused.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(f.flops, total_flops(unfused));
  EXPECT_DOUBLE_EQ(f.bytes_read, 4.0 * (2 * 4 * 9 * 8 + 8 * 4 + 8 + 8 * 9 + 8));
  EXPECT_DOUBLE_EQ(f.bytes_written, 4.0 * 2 * 8 * 5 * 4);
}

TEST(KilnExpandDepthwise, ShapeInferenceChecksTheExpandWeight) {
  auto fails_with = [](const std::string& text, const std::string& message) {
    Model m = parse_model(text);
    try {
      ops::infer_shapes(m);
      FAIL() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  fails_with(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,4,9,8], %w1: f32[8,5,1,1], %b1: f32[8], %w2: f32[8,1,3,3], %b2: f32[8]) -> (%y) {
  %y = kiln::ExpandDepthwise(%x, %w1, %b1, %w2, %b2) {group=8, pads=[1,1,1,1]}
})",
             "X has 4 channels, W1 takes 5");
  fails_with(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,4,9,8], %w1: f32[8,4,3,3], %b1: f32[8], %w2: f32[8,1,3,3], %b2: f32[8]) -> (%y) {
  %y = kiln::ExpandDepthwise(%x, %w1, %b1, %w2, %b2) {group=8, pads=[1,1,1,1]}
})",
             "W1 must be [E, C, 1, 1], got [8,4,3,3]");
  // A symbolic batch goes through.
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,4,9,8], %w1: f32[8,4,1,1], %b1: f32[8], %w2: f32[8,1,3,3], %b2: f32[8]) -> (%y) {
  %y = kiln::ExpandDepthwise(%x, %w1, %b1, %w2, %b2) {group=8, pads=[1,1,1,1], strides=[2,2]}
})");
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,8,5,4]");
}

TEST(KilnExpandDepthwise, RefusesPrePackedWeights) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,4,6,6]) -> (%y) {
  %w1 = init f32[8,4,1,1] dense<1.0>
  %b1 = init f32[8] dense<0.0>
  %w2 = init f32[8,1,3,3] dense<1.0>
  %b2 = init f32[8] dense<0.0>
  %y = kiln::ExpandDepthwise(%x, %w1, %b1, %w2, %b2) {group=8, pads=[1,1,1,1], packed=1, w_shape=[8,1,3,3], expand_w_shape=[8,4,1,1]} @block
})");
  ops::verify_model(m);
  ops::infer_shapes(m);
  try {
    run_model(m, {{"x", random_f32({1, 4, 6, 6}, 6)}});
    FAIL() << "a packed node ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ExpandDepthwise node 'block': has a pre-packed weight"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln::kilntest

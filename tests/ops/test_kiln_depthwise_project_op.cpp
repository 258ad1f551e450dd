// kiln.DepthwiseProject against the ONNX ops it replaces (depthwise Conv -> Clip -> 1x1 Conv ->
// Add residual), its shape inference's checks, the refusal of pre-packed weights, and its cost.
#include "kiln/ops/kiln_ops.h"
#include "test_kiln_support.h"

namespace kiln::kilntest {
namespace {

const char* kUnfused = R"(kiln.model opset=13
graph g(%x: f32[2,8,9,8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,8,1,1], %bp: f32[4], %z: f32[2,4,9,8]) -> (%y) {
  %lo = init f32[] dense<0.0>
  %hi = init f32[] dense<0.5>
  %d = Conv(%x, %wd, %bd) {group=8, pads=[1,1,1,1]}
  %m = Clip(%d, %lo, %hi)
  %p = Conv(%m, %wp, %bp)
  %y = Add(%p, %z)
})";

const char* kFused = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,8,9,8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,8,1,1], %bp: f32[4], %z: f32[2,4,9,8]) -> (%y) {
  %y = kiln::DepthwiseProject(%x, %wd, %bd, %wp, %bp, %z) {depthwise_group=8, depthwise_pads=[1,1,1,1], depthwise_activation="Clip", depthwise_act_alpha=0.0, depthwise_act_beta=0.5}
})";

std::map<std::string, Tensor> feeds() {
  return {{"x", random_f32({2, 8, 9, 8}, 1)}, {"wd", random_f32({8, 1, 3, 3}, 2)}, {"bd", random_f32({8}, 3)},
          {"wp", random_f32({4, 8, 1, 1}, 4)}, {"bp", random_f32({4}, 5)},          {"z", random_f32({2, 4, 9, 8}, 6)}};
}

TEST(KilnDepthwiseProject, EqualsDepthwiseConvClipConvAddOnRandomData) {
  Tensor want = run_text(kUnfused, feeds());
  Tensor got = run_text(kFused, feeds());
  ASSERT_EQ(got.dims(), (std::vector<int64_t>{2, 4, 9, 8}));
  expect_close(got, want, 1e-6);
  // The depthwise clip bound matters: a different one gives different outputs.
  std::string other = kFused;
  other.replace(other.find("depthwise_act_beta=0.5"), 22, "depthwise_act_beta=6.0");
  Tensor differs = run_text(other, feeds());
  double most = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    most = std::max(most, std::abs(double(got.data<float>()[i]) - differs.data<float>()[i]));
  EXPECT_GT(most, 0.1);
}

TEST(KilnDepthwiseProject, StridedAndWithoutResidual) {
  std::string unfused = kUnfused, fused = kFused;
  unfused.replace(unfused.find("{group=8, pads=[1,1,1,1]}"), 25, "{group=8, pads=[1,1,1,1], strides=[2,2]}");
  unfused.replace(unfused.find("  %y = Add(%p, %z)"), 18, "  %y = Relu(%p)");
  unfused.replace(unfused.find(", %z: f32[2,4,9,8]"), 18, "");
  fused.replace(fused.find(", %bp, %z)"), 10, ", %bp)");
  fused.replace(fused.find(", %z: f32[2,4,9,8]"), 18, "");
  fused.replace(fused.find("depthwise_group=8"), 17, "activation=\"Relu\", depthwise_strides=[2,2], depthwise_group=8");
  std::map<std::string, Tensor> f = feeds();
  f.erase("z");
  Tensor want = run_text(unfused, f);
  Tensor got = run_text(fused, f);
  ASSERT_EQ(got.dims(), (std::vector<int64_t>{2, 4, 5, 4}));
  expect_close(got, want, 1e-6);
}

TEST(KilnDepthwiseProject, CostIsBothConvolutionsWithoutTheDepthwiseOutput) {
  Model unfused = parse_model(kUnfused);
  Model fused = parse_model(kFused);
  ops::infer_shapes(unfused);
  ops::infer_shapes(fused);
  ops::Cost f = *ops::node_cost(*fused.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(f.flops, total_flops(unfused));
  EXPECT_DOUBLE_EQ(f.bytes_read, 4.0 * (2 * 8 * 9 * 8 + 8 * 9 + 8 + 4 * 8 + 4 + 2 * 4 * 9 * 8));
  EXPECT_DOUBLE_EQ(f.bytes_written, 4.0 * 2 * 4 * 9 * 8);
}

TEST(KilnDepthwiseProject, ShapeInferenceChecksBothWeights) {
  auto fails_with = [](const std::string& text, const std::string& message) {
    Model m = parse_model(text);
    try {
      ops::infer_shapes(m);
      FAIL() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  // The projection takes 6 channels, the depthwise output has 8.
  fails_with(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,8,9,8], %wd: f32[8,1,3,3], %wp: f32[4,6,1,1]) -> (%y) {
  %y = kiln::DepthwiseProject(%x, %wd, _, %wp) {depthwise_group=8, depthwise_pads=[1,1,1,1]}
})",
             "channels");
  // A residual of the wrong size.
  fails_with(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,8,9,8], %wd: f32[8,1,3,3], %wp: f32[4,8,1,1], %z: f32[N,4,9,9]) -> (%y) {
  %y = kiln::DepthwiseProject(%x, %wd, _, %wp, _, %z) {depthwise_group=8, depthwise_pads=[1,1,1,1]}
})",
             "residual");
  // A symbolic batch goes through.
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,8,9,8], %wd: f32[8,1,3,3], %wp: f32[4,8,1,1]) -> (%y) {
  %y = kiln::DepthwiseProject(%x, %wd, _, %wp) {depthwise_group=8, depthwise_pads=[1,1,1,1], depthwise_strides=[2,2]}
})");
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,4,5,4]");
}

TEST(KilnDepthwiseProject, RefusesPrePackedWeights) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,8,6,6]) -> (%y) {
  %wd = init f32[8,1,3,3] dense<1.0>
  %bd = init f32[8] dense<0.0>
  %wp = init f32[4,8,1,1] dense<1.0>
  %bp = init f32[4] dense<0.0>
  %y = kiln::DepthwiseProject(%x, %wd, %bd, %wp, %bp) {packed=1, w_shape=[4,8,1,1], depthwise_group=8, depthwise_pads=[1,1,1,1], depthwise_packed=1, depthwise_w_shape=[8,1,3,3]} @block
})");
  ops::verify_model(m);
  ops::infer_shapes(m);
  try {
    run_model(m, {{"x", random_f32({1, 8, 6, 6}, 6)}});
    FAIL() << "a packed node ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DepthwiseProject node 'block': has a pre-packed weight"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln::kilntest

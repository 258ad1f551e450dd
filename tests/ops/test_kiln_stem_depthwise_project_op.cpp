// kiln.StemDepthwiseProject against the ONNX ops it replaces (stem Conv -> Clip -> depthwise Conv
// -> Clip -> 1x1 Conv -> Add residual), its shape inference's checks, the refusal of pre-packed
// weights, and its cost.
#include "kiln/ops/kiln_ops.h"
#include "test_kiln_support.h"

namespace kiln::kilntest {
namespace {

const char* kUnfused = R"(kiln.model opset=13
graph g(%x: f32[2,3,18,16], %ws: f32[8,3,3,3], %bs: f32[8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,8,1,1], %bp: f32[4], %z: f32[2,4,9,8]) -> (%y) {
  %lo = init f32[] dense<0.0>
  %hi = init f32[] dense<0.5>
  %hi2 = init f32[] dense<0.75>
  %s = Conv(%x, %ws, %bs) {pads=[1,1,1,1], strides=[2,2]}
  %sc = Clip(%s, %lo, %hi2)
  %d = Conv(%sc, %wd, %bd) {group=8, pads=[1,1,1,1]}
  %m = Clip(%d, %lo, %hi)
  %p = Conv(%m, %wp, %bp)
  %y = Add(%p, %z)
})";

const char* kFused = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,3,18,16], %ws: f32[8,3,3,3], %bs: f32[8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,8,1,1], %bp: f32[4], %z: f32[2,4,9,8]) -> (%y) {
  %y = kiln::StemDepthwiseProject(%x, %ws, %bs, %wd, %bd, %wp, %bp, %z) {stem_pads=[1,1,1,1], stem_strides=[2,2], stem_activation="Clip", stem_act_alpha=0.0, stem_act_beta=0.75, depthwise_group=8, depthwise_pads=[1,1,1,1], depthwise_activation="Clip", depthwise_act_alpha=0.0, depthwise_act_beta=0.5}
})";

std::map<std::string, Tensor> feeds() {
  return {{"x", random_f32({2, 3, 18, 16}, 1)}, {"ws", random_f32({8, 3, 3, 3}, 2)}, {"bs", random_f32({8}, 3)},
          {"wd", random_f32({8, 1, 3, 3}, 4)},   {"bd", random_f32({8}, 5)},          {"wp", random_f32({4, 8, 1, 1}, 6)},
          {"bp", random_f32({4}, 7)},            {"z", random_f32({2, 4, 9, 8}, 8)}};
}

double most_apart(const Tensor& a, const Tensor& b) {
  double most = 0;
  for (int64_t i = 0; i < a.numel(); ++i) most = std::max(most, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return most;
}

TEST(KilnStemDepthwiseProject, EqualsTheStemThePairAndTheResidualOnRandomData) {
  Tensor want = run_text(kUnfused, feeds());
  Tensor got = run_text(kFused, feeds());
  ASSERT_EQ(got.dims(), (std::vector<int64_t>{2, 4, 9, 8}));
  expect_close(got, want, 1e-6);
  // The stem's and the depthwise layer's clip bounds both matter: other ones give other outputs.
  for (const std::string bound : {"stem_act_beta=0.75", "depthwise_act_beta=0.5"}) {
    std::string other = kFused;
    other.replace(other.find(bound), bound.size(), bound.substr(0, bound.find('=') + 1) + "6.0");
    EXPECT_GT(most_apart(got, run_text(other, feeds())), 0.05) << bound;
  }
}

TEST(KilnStemDepthwiseProject, CostIsTheThreeConvolutionsWithoutTheirIntermediates) {
  Model unfused = parse_model(kUnfused);
  Model fused = parse_model(kFused);
  ops::infer_shapes(unfused);
  ops::infer_shapes(fused);
  const ops::Cost f = *ops::node_cost(*fused.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(f.flops, total_flops(unfused));
  EXPECT_DOUBLE_EQ(f.bytes_read, 4.0 * (2 * 3 * 18 * 16 + 8 * 27 + 8 + 8 * 9 + 8 + 4 * 8 + 4 + 2 * 4 * 9 * 8));
  EXPECT_DOUBLE_EQ(f.bytes_written, 4.0 * 2 * 4 * 9 * 8);
}

TEST(KilnStemDepthwiseProject, ShapeInferenceChecksEachConvolution) {
  auto fails_with = [](const std::string& text, const std::string& message) {
    Model m = parse_model(text);
    try {
      ops::infer_shapes(m);
      FAIL() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  // The stem's weight takes 4 input channels, X has 3.
  fails_with(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,3,18,16], %ws: f32[8,4,3,3], %bs: f32[8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,8,1,1], %bp: f32[4]) -> (%y) {
  %y = kiln::StemDepthwiseProject(%x, %ws, %bs, %wd, %bd, %wp, %bp) {stem_pads=[1,1,1,1], stem_strides=[2,2], depthwise_group=8, depthwise_pads=[1,1,1,1]}
})",
             ":stem' (opset 13): channel mismatch: X has 3 channels, W expects 4");
  // The projection takes 6 channels, the depthwise layer gives 8.
  fails_with(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,3,18,16], %ws: f32[8,3,3,3], %bs: f32[8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,6,1,1], %bp: f32[4]) -> (%y) {
  %y = kiln::StemDepthwiseProject(%x, %ws, %bs, %wd, %bd, %wp, %bp) {stem_pads=[1,1,1,1], stem_strides=[2,2], depthwise_group=8, depthwise_pads=[1,1,1,1]}
})",
             "channel mismatch: X has 8 channels, W expects 6");
  // A symbolic batch goes through.
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,3,18,16], %ws: f32[8,3,3,3], %bs: f32[8], %wd: f32[8,1,3,3], %bd: f32[8], %wp: f32[4,8,1,1], %bp: f32[4]) -> (%y) {
  %y = kiln::StemDepthwiseProject(%x, %ws, %bs, %wd, %bd, %wp, %bp) {stem_pads=[1,1,1,1], stem_strides=[2,2], depthwise_group=8, depthwise_pads=[1,1,1,1]}
})");
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,4,9,8]");
}

TEST(KilnStemDepthwiseProject, RefusesPrePackedWeights) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,3,8,8]) -> (%y) {
  %ws = init f32[8,3,3,3] dense<1.0>
  %bs = init f32[8] dense<0.0>
  %wd = init f32[8,1,3,3] dense<1.0>
  %bd = init f32[8] dense<0.0>
  %wp = init f32[4,8,1,1] dense<1.0>
  %bp = init f32[4] dense<0.0>
  %y = kiln::StemDepthwiseProject(%x, %ws, %bs, %wd, %bd, %wp, %bp) {stem_pads=[1,1,1,1], stem_strides=[2,2], depthwise_group=8, depthwise_pads=[1,1,1,1], packed=1, stem_packed=1, depthwise_packed=1, w_shape=[4,8,1,1], stem_w_shape=[8,3,3,3], depthwise_w_shape=[8,1,3,3]} @block
})");
  ops::verify_model(m);
  ops::infer_shapes(m);
  try {
    run_model(m, {{"x", random_f32({1, 3, 8, 8}, 6)}});
    FAIL() << "a packed node ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a pre-packed weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::kilntest

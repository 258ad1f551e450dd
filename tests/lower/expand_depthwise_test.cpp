// Expand 1x1 + strided depthwise pairs fused into kiln.ExpandDepthwise (lower/expand_depthwise.cpp):
// the textual IR before and after, the cases left alone (with the reason the rule gives), and
// the compiled model against the interpreter on the unlowered graph.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "kiln/ir/text.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// An inverted residual block that halves the map: a 3x3 convolution (so the expand's input is
// channel-blocked, as between mobilenet_v2's blocks), the expand 1x1 (ex), the depthwise 3x3 at
// __STRIDE__ (dw), the projection (pr) and another 3x3 (so the projection runs direct and the
// depthwise output is channel-blocked too). __EXTRA__ may give the expanded tensor a second depthwise
// reader.
constexpr const char* kBlock = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[N,16,28,28]) -> (%y__EXTRA_OUT__) {
  %ws = init f32[16,16,3,3] dense<0.01>
  %we = init f32[48,16,1,1] dense<0.02>
  %wd = init f32[48,1,3,3] dense<0.03>
  %wp = init f32[16,48,1,1] dense<0.04>
  %b16 = init f32[16] dense<0.1>
  %b48 = init f32[48] dense<0.2>
  %b16p = init f32[16] dense<0.3>
  %x1 = kiln::FusedConv(%x, %ws, %b16) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @st
  %e = kiln::FusedConv(%x1, %we, %b48) {activation="Clip", act_alpha=0.0, act_beta=6.0} @ex
  %d = kiln::FusedConv(%e, %wd, %b48) {group=48, kernel_shape=[3,3], pads=[1,1,1,1], strides=[__STRIDE__,__STRIDE__], activation="Clip", act_alpha=0.0, act_beta=6.0} @dw
  %p = kiln::FusedConv(%d, %wp, %b16p) @pr
  %y = kiln::FusedConv(%p, %ws, %b16) {kernel_shape=[3,3], pads=[1,1,1,1]} @fin__EXTRA_NODE__
}
)";

std::string block(int stride, bool extra_reader) {
  std::string s = kBlock;
  s.replace(s.find("__EXTRA_OUT__"), 13, extra_reader ? ", %e2" : "");
  for (size_t at; (at = s.find("__STRIDE__")) != std::string::npos;) s.replace(at, 10, std::to_string(stride));
  s.replace(s.find("__EXTRA_NODE__"), 14, extra_reader ? "\n  %e2 = kiln::FusedConv(%e, %wd, %b48) {group=48, kernel_shape=[3,3], pads=[1,1,1,1], "
                                                           "strides=[2,2]} @dw2" : "");
  return s;
}

Model parse_block(const std::string& text) { return parse_sines(text, 0.2f); }

TEST(ExpandDepthwiseLowering, TheExpandJoinsTheStridedDepthwiseConvolution) {
  if (!avx512()) GTEST_SKIP() << "the expand runs direct between blocked activations on AVX-512 only";
  Model m = parse_block(block(2, false));
  const std::string before = print_model(m);
  EXPECT_NE(lines_with(before, "@ex").find("%e = kiln::FusedConv(%x1, %we, %b48)"), std::string::npos) << before;
  const LowerReport r = lower_model(m);
  const std::string after = print_model(m);
  EXPECT_EQ(r.expand_depthwise, 1);
  // dw now reads x1 with both weights and both biases; ex and its tensor e are gone.
  const std::string dw = lines_with(after, "@dw");
  EXPECT_NE(dw.find("%d = kiln::ExpandDepthwise(%x1, "), std::string::npos) << after;
  for (const char* attr : {"expand_w_shape=[48,16,1,1]", "expand_activation=\"Clip\"", "expand_act_beta=6",
                           "w_shape=[48,1,3,3]", "tactic=\"expand-depthwise\"", "strides=[2,2]"})
    EXPECT_NE(dw.find(attr), std::string::npos) << attr << " in " << dw;
  EXPECT_EQ(lines_with(after, "@ex"), "") << after;
  EXPECT_EQ(m.graph->find("e"), nullptr);
  const auto why = kernel_whys(r);
  EXPECT_EQ(why.count("ex"), 0u);
  EXPECT_NE(why.at("dw").find("the expand 1x1 'ex' (direct) and this depthwise convolution run band by band"),
            std::string::npos)
      << why.at("dw");
  ops::verify_model(m);  // the lowered graph still verifies and infers
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("d")->shape.str(), "[N,48,14,14]");
}

TEST(ExpandDepthwiseLowering, NothingChangesWhereTheRuleDoesNotApply) {
  if (!avx512()) GTEST_SKIP() << "the expand runs direct between blocked activations on AVX-512 only";
  // Stride 1: the bands would expand the rows they share twice. (The depthwise convolution then
  // joins the projection after it instead, depthwise_project_test.cpp: kept apart here to read
  // the depthwise node's note.)
  Model s1 = parse_block(block(1, false));
  ::setenv("KILN_DEPTHWISE_PROJECT", "0", 1);
  const LowerReport r1 = lower_model(s1);
  ::unsetenv("KILN_DEPTHWISE_PROJECT");
  EXPECT_EQ(r1.expand_depthwise, 0);
  EXPECT_NE(lines_with(print_model(s1), "@dw").find("kiln::FusedConv(%e, "), std::string::npos);
  EXPECT_NE(kernel_whys(r1).at("dw").find("pays only for strided depthwise layers"), std::string::npos)
      << kernel_whys(r1).at("dw");
  // The expanded tensor read by another node too.
  Model two = parse_block(block(2, true));
  const LowerReport r2 = lower_model(two);
  EXPECT_EQ(r2.expand_depthwise, 0);
  EXPECT_NE(kernel_whys(r2).at("dw").find("another node reads the expanded tensor"), std::string::npos) << kernel_whys(r2).at("dw");
  // Unpacked (tactics only, for reports) and switched off: nothing fuses.
  Model unpacked = parse_block(block(2, false));
  EXPECT_EQ(lower_model(unpacked, {.pack_weights = false}).expand_depthwise, 0);
  ::setenv("KILN_EXPAND_DEPTHWISE", "0", 1);
  Model off = parse_block(block(2, false));
  const int fused = lower_model(off).expand_depthwise;
  ::unsetenv("KILN_EXPAND_DEPTHWISE");
  EXPECT_EQ(fused, 0);
  EXPECT_NE(lines_with(print_model(off), "@ex").find("kiln::FusedConv(%x1, "), std::string::npos);
}

// A squeeze-excitation average of the depthwise output (efficientnet_b0's blocks): folded into the
// depthwise convolution first (channel_means.cpp), it stays the fused node's second output.
std::string averaged(int stride) {
  std::string s = block(stride, false);
  s.replace(s.find("-> (%y)"), 7, "-> (%y, %g)");
  s.replace(s.find(" @pr\n"), 5, " @pr\n  %g = GlobalAveragePool(%d) @sq\n");
  return s;
}

TEST(ExpandDepthwiseLowering, AFoldedAverageStaysTheSecondOutput) {
  if (!avx512()) GTEST_SKIP() << "the expand runs direct between blocked activations on AVX-512 only";
  const Model ref = parse_block(averaged(2));
  Model m = parse_block(averaged(2));
  const LowerReport r = lower_model(m);
  EXPECT_EQ(r.folded_means, 1);
  EXPECT_EQ(r.expand_depthwise, 1);
  const std::string after = print_model(m);
  EXPECT_NE(lines_with(after, "@dw").find("%d, %g = kiln::ExpandDepthwise(%x1, "), std::string::npos) << after;
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("g")->shape.str(), "[N,48,1,1]");
  auto exe = load_lowered(m, "expand_depthwise_means");
  for (int64_t n : {1, 3}) expect_lowered_matches(ref, *exe, sine_input({n, 16, 28, 28}), "N=" + std::to_string(n));
}

// The compiled block (batch 1 and 3; 1 and 2 threads, expect_lowered_matches) against the
// interpreter on the unlowered graph: within 1e-5 of the largest output. Both ways the kernels and
// their sums are the same as the two convolutions' (the kernels' test checks bit for bit).
TEST(ExpandDepthwiseLowering, CompiledBlockMatchesTheInterpreter) {
  for (int stride : {2, 1}) {
    const Model ref = parse_block(block(stride, false));
    Model m = parse_block(block(stride, false));
    const LowerReport r = lower_model(m);
    EXPECT_EQ(r.expand_depthwise, avx512() && stride == 2 ? 1 : 0);
    auto exe = load_lowered(m, "expand_depthwise");
    for (int64_t n : {1, 3})
      expect_lowered_matches(ref, *exe, sine_input({n, 16, 28, 28}),
                             "N=" + std::to_string(n) + " stride " + std::to_string(stride));
  }
}

}  // namespace
}  // namespace kiln::lower

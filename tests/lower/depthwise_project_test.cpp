// Depthwise + 1x1 projection pairs fused into kiln.DepthwiseProject (lower/depthwise_project.cpp):
// the textual IR before and after, the cases left alone (with the reason the rule gives), and the
// compiled model against the interpreter on the unlowered graph.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "kiln/ir/text.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "lowered_artifact.h"

namespace kiln::lower {
namespace {

// An inverted residual block: a 3x3 convolution (so the expand's input is channel-blocked, as
// between mobilenet_v2's blocks), the expand 1x1 (ex), the depthwise 3x3 at __STRIDE__ (dw), the
// projection (pr, adding the block's input when __RES__ is ", %x1") and another 3x3, unpadded
// (so the projection runs direct and writes plain blocked planes). __EXTRA__ averages the
// depthwise output too (a squeeze-excitation's pool, which the lowering folds into it).
constexpr const char* kBlock = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[N,16,__HW__,__HW__]) -> (%y__EXTRA_OUT__) {
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
  %p = kiln::FusedConv(%d, %wp, %b16p__RES__) @pr
  %y = kiln::FusedConv(%p, %ws, %b16) {kernel_shape=[3,3]} @fin__EXTRA_NODE__
}
)";

std::string block(int hw, int stride, bool residual, bool extra_reader) {
  std::string s = kBlock;
  auto put = [&](const std::string& key, const std::string& value) {
    for (size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), value);
  };
  put("__HW__", std::to_string(hw));
  put("__STRIDE__", std::to_string(stride));
  put("__RES__", residual ? ", %x1" : "");
  put("__EXTRA_OUT__", extra_reader ? ", %g" : "");
  put("__EXTRA_NODE__", extra_reader ? "\n  %g = GlobalAveragePool(%d) @sq" : "");
  return s;
}

Model parse_block(const std::string& text) { return parse_sines(text, 0.2f); }

TEST(DepthwiseProjectLowering, TheDepthwiseConvolutionJoinsTheProjection) {
  if (!avx512()) GTEST_SKIP() << "the projection runs direct between blocked activations on AVX-512 only";
  Model m = parse_block(block(28, 1, true, false));
  const std::string before = print_model(m);
  EXPECT_NE(lines_with(before, "@pr").find("%p = kiln::FusedConv(%d, %wp, %b16p, %x1)"), std::string::npos) << before;
  const LowerReport r = lower_model(m);
  const std::string after = print_model(m);
  EXPECT_EQ(r.depthwise_project, 1);
  // pr now reads e with both weights, both biases and the residual; dw and its tensor d are gone.
  const std::string pr = lines_with(after, "@pr");
  EXPECT_NE(pr.find("%p = kiln::DepthwiseProject(%e, "), std::string::npos) << after;
  EXPECT_NE(pr.find(", %x1)"), std::string::npos) << pr;
  for (const char* attr : {"depthwise_w_shape=[48,1,3,3]", "depthwise_activation=\"Clip\"", "depthwise_act_beta=6",
                           "depthwise_group=48", "w_shape=[16,48,1,1]", "tactic=\"depthwise-project\"",
                           "depthwise_tactic=\"depthwise\""})
    EXPECT_NE(pr.find(attr), std::string::npos) << attr << " in " << pr;
  EXPECT_EQ(lines_with(after, "@dw"), "") << after;
  EXPECT_EQ(m.graph->find("d"), nullptr);
  const auto why = kernel_whys(r);
  EXPECT_EQ(why.count("dw"), 0u);
  EXPECT_NE(why.at("pr").find("the depthwise convolution 'dw' and this 1x1 run band by band"), std::string::npos)
      << why.at("pr");
  ops::verify_model(m);  // the lowered graph still verifies and infers
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("p")->shape.str(), "[N,16,28,28]");
}

TEST(DepthwiseProjectLowering, NothingChangesWhereTheRuleDoesNotApply) {
  if (!avx512()) GTEST_SKIP() << "the projection runs direct between blocked activations on AVX-512 only";
  // The depthwise output averaged too: the average folds into the depthwise convolution as its
  // second output (channel_means.cpp), which the pair's kernel does not compute.
  Model two = parse_block(block(28, 1, false, true));
  const LowerReport r2 = lower_model(two);
  EXPECT_EQ(r2.folded_means, 1);
  EXPECT_EQ(r2.depthwise_project, 0);
  EXPECT_NE(print_model(two).find("%p = kiln::FusedConv(%d, "), std::string::npos) << print_model(two);
  EXPECT_NE(kernel_whys(r2).at("pr").find("the depthwise convolution before it has a residual or a second output"),
            std::string::npos)
      << kernel_whys(r2).at("pr");
  // Stride 2 on a map of 28 rows: the depthwise convolution runs with its expand
  // (expand_depthwise.cpp), and the projection after that pair stays as it is.
  Model s2 = parse_block(block(28, 2, false, false));
  const LowerReport r3 = lower_model(s2);
  EXPECT_EQ(r3.expand_depthwise, 1);
  EXPECT_EQ(r3.depthwise_project, 0);
  EXPECT_NE(lines_with(print_model(s2), "@pr").find("kiln::FusedConv(%d, "), std::string::npos);
  // Unpacked (tactics only, for reports) and switched off: nothing fuses.
  Model unpacked = parse_block(block(28, 1, true, false));
  EXPECT_EQ(lower_model(unpacked, {.pack_weights = false}).depthwise_project, 0);
  ::setenv("KILN_DEPTHWISE_PROJECT", "0", 1);
  Model off = parse_block(block(28, 1, true, false));
  const int fused = lower_model(off).depthwise_project;
  ::unsetenv("KILN_DEPTHWISE_PROJECT");
  EXPECT_EQ(fused, 0);
  EXPECT_NE(lines_with(print_model(off), "@dw").find("kiln::FusedConv(%e, "), std::string::npos);
}

// The compiled block (batch 1 and 3; 1 and 2 threads, expect_lowered_matches) against the
// interpreter on the unlowered graph: within 1e-5 of the largest output. Stride 1 at 28x28
// (8-channel blocks) and 14x14 (16-channel blocks through the small depthwise layer), with and
// without the residual. (Strided pairs: the kernel's test.)
TEST(DepthwiseProjectLowering, CompiledBlockMatchesTheInterpreter) {
  struct Case {
    int hw, stride;
    bool residual;
  };
  for (const Case& c : {Case{28, 1, true}, Case{28, 1, false}, Case{14, 1, true}}) {
    const std::string what = std::to_string(c.hw) + "x" + std::to_string(c.hw) + " stride " + std::to_string(c.stride) +
                             (c.residual ? " residual" : "");
    const Model ref = parse_block(block(c.hw, c.stride, c.residual, false));
    Model m = parse_block(block(c.hw, c.stride, c.residual, false));
    const LowerReport r = lower_model(m);
    EXPECT_EQ(r.depthwise_project, avx512() ? 1 : 0) << what;
    auto exe = load_lowered(m, "depthwise_project");
    for (int64_t n : {1, 3})
      expect_lowered_matches(ref, *exe, sine_input({n, 16, c.hw, c.hw}), "N=" + std::to_string(n) + " " + what);
  }
}

}  // namespace
}  // namespace kiln::lower

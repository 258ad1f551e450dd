// An RGB stem and the depthwise + projection pair after it fused into kiln.StemDepthwiseProject
// (lower/stem_depthwise_project.cpp): the textual IR before and after, the cases left alone (with
// the reason the rule gives), and the compiled model against the interpreter on the unlowered
// graph, banded and not.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "kiln/ir/text.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// mobilenet_v2's first two layers at a smaller size: the stem (st: 3 -> 16, 3x3 at stride
// __STRIDE__, Clip), the depthwise 3x3 (dw), the projection (pr) and a 3x3 convolution after it
// (so the projection writes channel blocks). __EXTRA__ may give the stem's output a second reader.
constexpr const char* kHead = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[N,3,64,64]) -> (%y__EXTRA_OUT__) {
  %ws = init f32[16,3,3,3] dense<0.01>
  %wd = init f32[16,1,3,3] dense<0.03>
  %wp = init f32[8,16,1,1] dense<0.04>
  %wf = init f32[8,8,3,3] dense<0.05>
  %b16 = init f32[16] dense<0.1>
  %b16d = init f32[16] dense<0.2>
  %b8 = init f32[8] dense<0.3>
  %s = kiln::FusedConv(%x, %ws, %b16) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[__STRIDE__,__STRIDE__], activation="Clip", act_alpha=0.0, act_beta=6.0} @st
  %d = kiln::FusedConv(%s, %wd, %b16d) {group=16, kernel_shape=[3,3], pads=[1,1,1,1], activation="Clip", act_alpha=0.0, act_beta=6.0} @dw
  %p = kiln::FusedConv(%d, %wp, %b8) @pr
  %y = kiln::FusedConv(%p, %wf, %b8) {kernel_shape=[3,3], pads=[1,1,1,1]} @fin__EXTRA_NODE__
}
)";

std::string head(int stride, bool extra_reader) {
  std::string s = kHead;
  s.replace(s.find("__EXTRA_OUT__"), 13, extra_reader ? ", %s2" : "");
  for (size_t at; (at = s.find("__STRIDE__")) != std::string::npos;) s.replace(at, 10, std::to_string(stride));
  s.replace(s.find("__EXTRA_NODE__"), 14,
            extra_reader ? "\n  %s2 = kiln::FusedConv(%s, %wd, %b16d) {group=16, kernel_shape=[3,3], pads=[1,1,1,1]} @dw2"
                         : "");
  return s;
}

Model parse_head(const std::string& text) { return parse_sines(text, 0.2f); }

TEST(StemDepthwiseProjectLowering, TheStemJoinsTheDepthwiseAndProjectionPair) {
  if (!avx512()) GTEST_SKIP() << "the stem kernel is AVX-512's";
  Model m = parse_head(head(2, false));
  const std::string before = print_model(m);
  EXPECT_NE(lines_with(before, "@st").find("%s = kiln::FusedConv(%x, %ws, %b16)"), std::string::npos) << before;
  const LowerReport r = lower_model(m);
  const std::string after = print_model(m);
  EXPECT_EQ(r.depthwise_project, 1);
  EXPECT_EQ(r.stem_depthwise_project, 1);
  // pr now reads x with the three weights and biases; st, dw and their tensors s and d are gone.
  const std::string pr = lines_with(after, "@pr");
  EXPECT_NE(pr.find("%p = kiln::StemDepthwiseProject(%x, "), std::string::npos) << after;
  for (const char* attr : {"stem_w_shape=[16,3,3,3]", "stem_activation=\"Clip\"", "stem_strides=[2,2]",
                           "depthwise_w_shape=[16,1,3,3]", "w_shape=[8,16,1,1]", "tactic=\"stem-depthwise-project\""})
    EXPECT_NE(pr.find(attr), std::string::npos) << attr << " in " << pr;
  EXPECT_EQ(lines_with(after, "@st"), "") << after;
  EXPECT_EQ(lines_with(after, "@dw"), "") << after;
  EXPECT_EQ(m.graph->find("s"), nullptr);
  EXPECT_EQ(m.graph->find("d"), nullptr);
  const auto why = kernel_whys(r);
  EXPECT_EQ(why.count("st"), 0u);
  EXPECT_NE(why.at("pr").find("the stem 'st' (direct, pixel vectors), the depthwise convolution and this 1x1 run "
                              "band by band"),
            std::string::npos)
      << why.at("pr");
  ops::verify_model(m);  // the lowered graph still verifies and infers
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("p")->shape.str(), "[N,8,32,32]");
}

TEST(StemDepthwiseProjectLowering, NothingChangesWhereTheRuleDoesNotApply) {
  if (!avx512()) GTEST_SKIP() << "the stem kernel is AVX-512's";
  // A stride-1 first convolution is no stem the pixel-vector kernel runs.
  Model s1 = parse_head(head(1, false));
  const LowerReport r1 = lower_model(s1);
  EXPECT_EQ(r1.depthwise_project, 1);
  EXPECT_EQ(r1.stem_depthwise_project, 0);
  EXPECT_NE(lines_with(print_model(s1), "@pr").find("kiln::DepthwiseProject(%s, "), std::string::npos);
  EXPECT_NE(kernel_whys(r1).at("pr").find("not a stem the pixel-vector kernel runs"), std::string::npos)
      << kernel_whys(r1).at("pr");
  // The stem's output read by another node too.
  Model two = parse_head(head(2, true));
  const LowerReport r2 = lower_model(two);
  EXPECT_EQ(r2.stem_depthwise_project, 0);
  EXPECT_NE(kernel_whys(r2).at("pr").find("another node reads the convolution's output"), std::string::npos)
      << kernel_whys(r2).at("pr");
  // A 3x3 over 8 channels is no stem at all: the pair after it gets no note about it.
  std::string wide_text = head(2, false);
  wide_text.replace(wide_text.find("f32[N,3,64,64]"), 14, "f32[N,8,64,64]");
  wide_text.replace(wide_text.find("f32[16,3,3,3]"), 13, "f32[16,8,3,3]");
  Model wide = parse_head(wide_text);
  const LowerReport r4 = lower_model(wide);
  EXPECT_EQ(r4.depthwise_project, 1);
  EXPECT_EQ(r4.stem_depthwise_project, 0);
  EXPECT_EQ(kernel_whys(r4).at("pr").find("with the convolution before it"), std::string::npos)
      << kernel_whys(r4).at("pr");
  // Switched off: the pair stays a kiln.DepthwiseProject after the stem.
  ::setenv("KILN_STEM_DEPTHWISE_PROJECT", "0", 1);
  Model off = parse_head(head(2, false));
  const LowerReport r3 = lower_model(off);
  ::unsetenv("KILN_STEM_DEPTHWISE_PROJECT");
  EXPECT_EQ(r3.stem_depthwise_project, 0);
  EXPECT_NE(lines_with(print_model(off), "@st").find("kiln::FusedConv(%x, "), std::string::npos);
  EXPECT_NE(lines_with(print_model(off), "@pr").find("kiln::DepthwiseProject(%s, "), std::string::npos);
}

// The compiled head (batch 1 and 3; 1 and 2 threads, expect_lowered_matches) against the
// interpreter on the unlowered graph: within 1e-5 of the largest output, with the bands pinned on
// and off (the kernels' test checks the two bit for bit).
TEST(StemDepthwiseProjectLowering, CompiledHeadMatchesTheInterpreter) {
  const Model ref = parse_head(head(2, false));
  Model m = parse_head(head(2, false));
  const LowerReport r = lower_model(m);
  EXPECT_EQ(r.stem_depthwise_project, avx512() ? 1 : 0);
  auto exe = load_lowered(m, "stem_depthwise_project");
  for (kernels::ExpandBands mode : {kernels::ExpandBands::On, kernels::ExpandBands::Off}) {
    kernels::set_expand_bands(mode);
    for (int64_t n : {1, 3})
      expect_lowered_matches(ref, *exe, sine_input({n, 3, 64, 64}),
                             "N=" + std::to_string(n) + (mode == kernels::ExpandBands::On ? " banded" : " apart"));
  }
  kernels::set_expand_bands(kernels::ExpandBands::Auto);
}

}  // namespace
}  // namespace kiln::lower

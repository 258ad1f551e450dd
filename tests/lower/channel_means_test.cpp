// GlobalAveragePools folded into the depthwise convolution before them (lower/channel_means.cpp):
// the textual IR before and after, the cases left alone (with the reason the rule gives), and the
// compiled model against the interpreter on the unlowered graph.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "kiln/ir/text.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// A squeeze-excitation block: the depthwise output d is averaged (sq), the average goes through
// two 1x1s, and the product scales d before the projection. `%e = GlobalAveragePool(%x1)` averages
// a direct convolution's output, and __SECOND__ may add a second average of d.
constexpr const char* kBlock = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[N,16,14,14]) -> (%y, %e__SECOND_OUT__) {
  %ws = init f32[32,16,3,3] dense<0.01>
  %wd = init f32[32,1,3,3] dense<0.03>
  %w1 = init f32[8,32,1,1] dense<0.02>
  %w2 = init f32[32,8,1,1] dense<0.05>
  %wp = init f32[16,32,1,1] dense<0.04>
  %b8 = init f32[8] dense<0.1>
  %b16 = init f32[16] dense<0.1>
  %b32 = init f32[32] dense<0.2>
  %x1 = kiln::FusedConv(%x, %ws, %b32) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @s0
  %e = GlobalAveragePool(%x1) @ex
  %d = kiln::FusedConv(%x1, %wd, %b32) {group=32, kernel_shape=[3,3], pads=[1,1,1,1], activation="Silu"} @dw
  %g = GlobalAveragePool(%d) @sq__SECOND_NODE__
  %f1 = kiln::FusedConv(%g, %w1, %b8) {activation="Silu"} @fc1
  %f2 = kiln::FusedConv(%f1, %w2, %b32) {activation="Sigmoid"} @fc2
  %m = Mul(%d, %f2) @se
  %y = kiln::FusedConv(%m, %wp, %b16) @pr
}
)";

std::string block(bool second_average) {
  std::string s = kBlock;
  s.replace(s.find("__SECOND_OUT__"), 14, second_average ? ", %g2" : "");
  s.replace(s.find("__SECOND_NODE__"), 15, second_average ? "\n  %g2 = GlobalAveragePool(%d) @sq2" : "");
  return s;
}

Model parse_block(const std::string& text) { return parse_sines(text, 0.2f); }

TEST(ChannelMeans, TheDepthwiseAverageBecomesTheConvolutionsSecondOutput) {
  Model m = parse_block(block(false));
  const std::string before = print_model(m);
  EXPECT_NE(lines_with(before, "@sq").find("%g = GlobalAveragePool(%d)"), std::string::npos) << before;
  LowerReport r = lower_model(m);
  const std::string after = print_model(m);
  EXPECT_EQ(r.folded_means, 1);
  // dw now writes d and its average g (same name, same readers); the pool is gone; the average
  // of the direct convolution's output stays a pool.
  EXPECT_NE(lines_with(after, "@dw").find("%d, %g = kiln::FusedConv("), std::string::npos) << after;
  EXPECT_EQ(lines_with(after, "@sq"), "") << after;
  EXPECT_NE(lines_with(after, "@ex").find("GlobalAveragePool(%x1)"), std::string::npos) << after;
  EXPECT_NE(lines_with(after, "@fc1").find("(%g,"), std::string::npos) << after;
  std::map<std::string, std::string> why;
  for (const auto& k : r.kernels) why[k.node] = k.why;
  EXPECT_EQ(why.count("sq"), 0u);
  EXPECT_NE(why["dw"].find("GlobalAveragePool 'sq'"), std::string::npos) << why["dw"];
  ops::verify_model(m);  // the lowered graph still verifies and infers
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("g")->shape.str(), "[N,32,1,1]");
}

TEST(ChannelMeans, NothingChangesWhereTheRuleDoesNotApply) {
  // A second average of the same output: the first folds, the second stays a pool.
  Model two = parse_block(block(true));
  const LowerReport r = lower_model(two);
  EXPECT_EQ(r.folded_means, 1);
  EXPECT_NE(lines_with(print_model(two), "@sq2").find("GlobalAveragePool(%d)"), std::string::npos);
  // Each pool left alone says why (kiln compile --explain).
  std::map<std::string, std::string> why;
  for (const auto& k : r.kernels) why[k.node] = k.why;
  EXPECT_NE(why["sq2"].find("already averages its output for another pool"), std::string::npos) << why["sq2"];
  EXPECT_NE(why["ex"].find("does not come from a packed depthwise convolution"), std::string::npos) << why["ex"];
  // Unpacked (tactics only, for reports) and switched off: nothing folds.
  Model unpacked = parse_block(block(false));
  EXPECT_EQ(lower_model(unpacked, {.pack_weights = false}).folded_means, 0);
  EXPECT_NE(lines_with(print_model(unpacked), "@sq").find("GlobalAveragePool(%d)"), std::string::npos);
  ::setenv("KILN_FOLD_MEANS", "0", 1);
  Model off = parse_block(block(false));
  const int folded = lower_model(off).folded_means;
  ::unsetenv("KILN_FOLD_MEANS");
  EXPECT_EQ(folded, 0);
  EXPECT_NE(lines_with(print_model(off), "@sq").find("GlobalAveragePool(%d)"), std::string::npos);
}

// The compiled block (batch 1 and 3, 1 and 2 threads) against the interpreter on the unlowered
// graph: every output within 1e-5 of its largest magnitude (the kernel sums each output row or 16
// pixels in float before double: TileEpilogue::sums).
TEST(ChannelMeans, CompiledBlockMatchesTheInterpreter) {
  for (bool second : {false, true}) {
    const Model ref = parse_block(block(second));
    Model m = parse_block(block(second));
    lower_model(m);
    auto exe = load_lowered(m, "channel_means");
    for (int64_t n : {1, 3}) {
      expect_lowered_matches(ref, *exe, sine_input({n, 16, 14, 14}), "N=" + std::to_string(n) + (second ? " second average" : ""));
    }
  }
}

}  // namespace
}  // namespace kiln::lower

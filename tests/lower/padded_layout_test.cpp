// Padded planes between direct convolutions (lower/padded_layout.cpp): which convolutions write
// into their reader's padded planes and which read them in place (before -> after on textual IR:
// the y_pad / x_padded attributes), that KILN_PADDED_PLANES=0 marks nothing, that the memory
// plan sizes the planes with their border, and that the compiled model computes what the
// interpreter does (at 1 and 2 threads, through a border the plan shares with other tensors).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// 16 channels at 42x42: rows every table's tiles divide (14 and 6 pixels), so the
// marks depend only on which convolutions run direct.
//   c0 -> a: read by c1 (X) and c3 (residual)           -> two readers: no planes
//   c1 (1x1) -> h: read by c2 (3x3, pads 1) only        -> planes, where c1 runs direct (AVX-512)
//   c2 (3x3) -> k: read by c3 (pads top 0, left 1, bottom 2, right 1) only -> planes, that border
//   c3 -> o = conv(k) + a: a residual, read by c4 and the average -> no planes
//   c4 (3x3/2) -> s: a graph output                     -> no planes
// __K_OUT__ also returns k: then it stays a plain blocked tensor.
constexpr const char* kBottleneck = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,42,42]) -> (%y, %s__K_OUT__) {
  %w3 = init f32[16,16,3,3] dense<0.01>
  %w1 = init f32[16,16,1,1] dense<0.02>
  %b = init f32[16] dense<0.1>
  %a = kiln::FusedConv(%x, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c0
  %h = kiln::FusedConv(%a, %w1, %b) {activation="Relu"} @c1
  %k = kiln::FusedConv(%h, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c2
  %o = kiln::FusedConv(%k, %w3, %b, %a) {kernel_shape=[3,3], pads=[0,1,2,1], activation="Relu"} @c3
  %s = kiln::FusedConv(%o, %w3, %b) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @c4
  %y = GlobalAveragePool(%o) @gap
}
)";

std::string bottleneck(bool k_out) {
  std::string s = kBottleneck;
  s.replace(s.find("__K_OUT__"), 9, k_out ? ", %k" : "");
  return s;
}

Model parse_inferred(const std::string& text) { return parse_sines(text, 0.05f); }

// "c0:-- c1:-P ...": per convolution, p when it reads padded planes (x_padded), P when it writes
// into them (y_pad).
std::string marks(const Model& m) {
  std::string s;
  for (const auto& n : m.graph->nodes()) {
    if (n->op != "FusedConv") continue;
    s += (s.empty() ? "" : " ") + n->name + ":" + (n->attr_i("x_padded", 0) ? "p" : "-") +
         (n->has_attr("y_pad") ? "P" : "-");
  }
  return s;
}

const Node* node(const Model& m, const std::string& name) {
  for (const auto& n : m.graph->nodes())
    if (n->name == name) return n.get();
  return nullptr;
}

TEST(PaddedLayout, ADirectConvolutionWritesIntoItsOnlyReadersPaddedPlanes) {
  Model m = parse_inferred(bottleneck(false));
  const LowerReport r = lower_model(m);
  for (const auto& k : r.kernels)
    if (k.node != "c1" && k.node != "gap") ASSERT_EQ(k.tactic, "direct") << k.node << ": " << k.why;
  // c1 (a 1x1) runs direct between blocks (pointwise_between_blocks: on AVX2 too, its Relu
  // fused into the tile's store) and writes c2's padded planes (on AVX2 as row tiles).
  EXPECT_EQ(marks(m), "c0:-- c1:-P c2:pP c3:p- c4:--");
  EXPECT_EQ(r.padded_tensors, 2);
  EXPECT_EQ(node(m, "c2")->attr_ints("y_pad", {}), (std::vector<int64_t>{0, 1, 2, 1}));  // c3's pads
  EXPECT_EQ(node(m, "c1")->attr_ints("y_pad", {}), (std::vector<int64_t>{1, 1, 1, 1}));
  for (const auto& k : r.kernels) {
    if (k.node == "c3") EXPECT_NE(k.why.find("from padded planes"), std::string::npos) << k.why;
    if (k.node == "c2") EXPECT_NE(k.why.find("into the next convolution's padded planes"), std::string::npos) << k.why;
  }
  ops::verify_model(m);  // the attributes are in FusedConv's schema
  ops::infer_shapes(m);  // and the logical shapes do not change
  EXPECT_EQ(node(m, "c2")->outputs[0]->shape.str(), "[1,16,42,42]");
}

TEST(PaddedLayout, ATensorWithAnotherReaderKeepsItsPlainBlocks) {
  Model m = parse_inferred(bottleneck(true));
  lower_model(m);
  EXPECT_EQ(marks(m), "c0:-- c1:-P c2:p- c3:-- c4:--");
}

TEST(PaddedLayout, TheEnvironmentSwitchMarksNothing) {
  ::setenv("KILN_PADDED_PLANES", "0", 1);
  Model m = parse_inferred(bottleneck(false));
  const LowerReport r = lower_model(m);
  ::unsetenv("KILN_PADDED_PLANES");
  EXPECT_EQ(marks(m), "c0:-- c1:-- c2:-- c3:-- c4:--");
  EXPECT_EQ(r.padded_tensors, 0);
}

// The planes take their border in the arena (44 x 44 pixels of 16 channels for k), and the
// compiled model matches the interpreter: the producer zeroes the border every run, although the
// plan gives those bytes to other tensors between runs (a second run would read their floats
// as padding otherwise).
TEST(PaddedLayout, CompiledPlanesMatchTheInterpreter) {
  Model m = parse_inferred(bottleneck(false));
  lower_model(m);
  auto exe = load_lowered(m, "padded_planes");
  const Tensor x = sine_input({1, 16, 42, 42});
  expect_lowered_matches(parse_inferred(bottleneck(false)), *exe, x, "padded planes");
  const plan::Plan* p = exe->last_plan();
  ASSERT_NE(p, nullptr);
  bool found = false;
  for (const plan::ValuePlan& v : p->values) {
    if (v.name != "k") continue;
    found = true;
    EXPECT_EQ(v.bytes, 4 * 16 * (42 + 0 + 2) * (42 + 1 + 1));
    EXPECT_EQ(v.dims, (std::vector<int64_t>{1, 16, 42, 42}));
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kiln::lower

// Channel-blocked activations between direct convolutions (lower/blocked_layout.cpp): which
// tensors the lowering marks (before -> after on textual IR: the x_blocked / y_blocked
// attributes), that a residual and its convolution's output always agree, that KILN_BLOCKED_LAYOUT=0
// marks nothing, and that the compiled artifact computes what the interpreter does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "kiln/analysis/compare.h"
#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// A resnet-like chain on 16 channels at 28x28 (a shape every ISA's table runs direct):
//   c0 -> a: read by c1 (X) and c2 (residual)      -> blocked
//   c1 -> h: read by c2 (X)                         -> blocked
//   c2 -> o = conv(h) + a: read by c3, c4, c5, c6   -> blocked (its residual a is)
//   c3 -> p: a graph output                         -> NCHW
//   c4 -> q: 12 channels (not a multiple of 8), a graph output -> NCHW
//   c5 -> t: only the residual of c6, whose output u is a graph output -> NCHW
//   c6 -> u = conv(o) + t: a graph output           -> NCHW
constexpr const char* kChain = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,28,28]) -> (%p, %q, %u__EXTRA_OUT__) {
  %w = init f32[16,16,3,3] dense<0.01>
  %w12 = init f32[12,16,3,3] dense<0.02>
  %b = init f32[16] dense<0.1>
  %b12 = init f32[12] dense<-0.1>
  %a = kiln::FusedConv(%x, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c0
  %h = kiln::FusedConv(%a, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c1
  %o = kiln::FusedConv(%h, %w, %b, %a) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c2
  %p = kiln::FusedConv(%o, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1]} @c3
  %q = kiln::FusedConv(%o, %w12, %b12) {kernel_shape=[3,3], pads=[1,1,1,1]} @c4
  %t = kiln::FusedConv(%o, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1]} @c5
  %u = kiln::FusedConv(%o, %w, %b, %t) {kernel_shape=[3,3], pads=[1,1,1,1]} @c6__EXTRA_NODE__
}
)";

// A stem, its max pool, a 1x1 between two 3x3s (pointwise by cost alone) and the global
// average: everything blocked on AVX-512, where the 1x1 runs direct to keep it so; `p_out`
// also returns the pool's output, which then stays NCHW with all it is tied to.
constexpr const char* kPooled = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,28,28]) -> (%gp__P_OUT__) {
  %w = init f32[16,16,3,3] dense<0.01>
  %w1 = init f32[16,16,1,1] dense<0.02>
  %b = init f32[16] dense<0.1>
  %a = kiln::FusedConv(%x, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @s0
  %p = MaxPool(%a) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @mp
  %h = kiln::FusedConv(%p, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c1
  %k = kiln::FusedConv(%h, %w1, %b) {activation="__PW_ACT__"} @pw
  %o = kiln::FusedConv(%k, %w, %b, %p) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c2
  %gp = GlobalAveragePool(%o) @gap
}
)";

// MobileNetV2's inverted residual: a 1x1 expansion, a depthwise 3x3 and a 1x1 projection with
// the block's input as residual, between a direct 3x3 and a global average. On AVX-512 the 1x1s
// run direct and every tensor passes blocked, the depthwise reading and writing blocks; with the
// depthwise output returned too (`d_out`) it stays NCHW, the projection keeps its cost's tactic
// and NCHW output, its residual (the stem's output) is tied to that, and the expansion, between
// two NCHW tensors, keeps its cost's tactic too: nothing is blocked.
constexpr const char* kInverted = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,28,28]) -> (%y__D_OUT__) {
  %ws = init f32[16,16,3,3] dense<0.01>
  %we = init f32[32,16,1,1] dense<0.02>
  %wd = init f32[32,1,3,3] dense<0.03>
  %wp = init f32[16,32,1,1] dense<0.04>
  %b16 = init f32[16] dense<0.1>
  %b32 = init f32[32] dense<0.2>
  %x1 = kiln::FusedConv(%x, %ws, %b16) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @s0
  %e = kiln::FusedConv(%x1, %we, %b32) {activation="Clip", act_alpha=0.0, act_beta=6.0} @ex
  %d = kiln::FusedConv(%e, %wd, %b32) {group=32, kernel_shape=[3,3], pads=[1,1,1,1], activation="Clip", act_alpha=0.0, act_beta=6.0} @dw
  %p = kiln::FusedConv(%d, %wp, %b16, %x1) @pr
  %y = GlobalAveragePool(%p) @gap
}
)";

// A 3x3 into blocks, then two 1x1s of 64 into 64 (two 32-channel column units: the second
// reads every pixel's input after the first wrote its channels); the second's residual Z
// (__Z__) is x2, its own input, or x1, the first's input.
constexpr const char* kOwnResidual = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,14,14]) -> (%y) {
  %ws = init f32[64,16,3,3] dense<0.01>
  %w1 = init f32[64,64,1,1] dense<0.02>
  %w2 = init f32[64,64,1,1] dense<0.03>
  %b64 = init f32[64] dense<0.1>
  %x1 = kiln::FusedConv(%x, %ws, %b64) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @s0
  %x2 = kiln::FusedConv(%x1, %w1, %b64) {activation="Relu"} @c1
  %x3 = kiln::FusedConv(%x2, %w2, %b64, __Z__) {activation="Relu"} @c2
  %y = GlobalAveragePool(%x3) @gap
}
)";

// digits_cnn's first two layers: one input channel into 16 (the depthwise tactic, every lane
// reading the one plane) writes blocks for the 3x3 after it, which reads them.
constexpr const char* kOneChannel = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[3,1,8,8]) -> (%y) {
  %w1 = init f32[16,1,3,3] dense<0.01>
  %w2 = init f32[32,16,3,3] dense<0.02>
  %b16 = init f32[16] dense<0.1>
  %b32 = init f32[32] dense<0.2>
  %h = kiln::FusedConv(%x, %w1, %b16) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @d0
  %y = kiln::FusedConv(%h, %w2, %b32) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c1
}
)";

// EfficientNet's block: a depthwise 3x3 whose output a squeeze-and-excitation scales per
// channel (global average, two 1x1s, a sigmoid, then Mul, which the lowering wraps into a
// one-op kiln.FusedElementwise), then the 1x1 projection. On AVX-512 the Mul's generated kernel
// runs on blocks, so the depthwise output, the product and the projection's output all pass
// blocked (the projection runs direct); with the product also returned (`m_out`) the Mul's
// output stays NCHW, and so does the depthwise output (tied to it).
constexpr const char* kExcited = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[N,16,14,14]) -> (%y__M_OUT__) {
  %ws = init f32[32,16,3,3] dense<0.01>
  %wd = init f32[32,1,3,3] dense<0.03>
  %w1 = init f32[8,32,1,1] dense<0.02>
  %w2 = init f32[32,8,1,1] dense<0.05>
  %wp = init f32[16,32,1,1] dense<0.04>
  %b8 = init f32[8] dense<0.1>
  %b16 = init f32[16] dense<0.1>
  %b32 = init f32[32] dense<0.2>
  %x1 = kiln::FusedConv(%x, %ws, %b32) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @s0
  %d = kiln::FusedConv(%x1, %wd, %b32) {group=32, kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @dw
  %g = GlobalAveragePool(%d) @sq
  %f1 = kiln::FusedConv(%g, %w1, %b8) {activation="Relu"} @fc1
  %f2 = kiln::FusedConv(%f1, %w2, %b32) {activation="Sigmoid"} @fc2
  %m = Mul(%d, %f2) @se
  %p = kiln::FusedConv(%m, %wp, %b16) @pr
  %y = GlobalAveragePool(%p) @gap
}
)";

// A bottleneck for 16-channel blocks: a 3x3 into 32 channels, a 1x1, a 3x3, a 1x1 adding the
// block's input, and a 1x1/2 downsample into a global average. On AVX-512 the tensors between
// direct convolutions alone take 16-channel blocks (a 1x1/2 may read them); the downsample's
// output, read by the average, keeps 8. With a 3x3/2 reading o too (`s2`: no tiles of pixel
// stride 32) o keeps 8 channels a block, and so does its residual a, tied to it.
constexpr const char* kBottleneck = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,28,28]) -> (%y__S2_OUT__) {
  %w3 = init f32[32,16,3,3] dense<0.01>
  %w1 = init f32[32,32,1,1] dense<0.02>
  %w33 = init f32[32,32,3,3] dense<0.03>
  %b = init f32[32] dense<0.1>
  %a = kiln::FusedConv(%x, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @s0
  %h = kiln::FusedConv(%a, %w1, %b) {activation="Relu"} @c1
  %k = kiln::FusedConv(%h, %w33, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c2
  %o = kiln::FusedConv(%k, %w1, %b, %a) {activation="Relu"} @c3
  %d = kiln::FusedConv(%o, %w1, %b) {strides=[2,2]} @c4__S2_NODE__
  %y = GlobalAveragePool(%d) @gap
}
)";

std::string bottleneck(bool s2) {
  std::string s = kBottleneck;
  s.replace(s.find("__S2_OUT__"), 10, s2 ? ", %t" : "");
  s.replace(s.find("__S2_NODE__"), 11,
            s2 ? "\n  %t = kiln::FusedConv(%o, %w33, %b) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @c5"
               : "");
  return s;
}

std::string excited(bool m_out) {
  std::string s = kExcited;
  s.replace(s.find("__M_OUT__"), 9, m_out ? ", %m" : "");
  return s;
}

std::string inverted(bool d_out) {
  std::string s = kInverted;
  s.replace(s.find("__D_OUT__"), 9, d_out ? ", %d" : "");
  return s;
}

// kInverted on 12x12 planes: the depthwise layer on 16-channel blocks.
std::string small_inverted() {
  std::string s = inverted(false);
  s.replace(s.find("f32[1,16,28,28]"), 15, "f32[1,16,12,12]");
  return s;
}

std::string pooled(bool p_out, const std::string& pw_act = "Relu") {
  std::string s = kPooled;
  s.replace(s.find("__P_OUT__"), 9, p_out ? ", %p" : "");
  s.replace(s.find("__PW_ACT__"), 10, pw_act);
  return s;
}

std::string chain(bool relu_of_o) {
  std::string s = kChain;
  s.replace(s.find("__EXTRA_OUT__"), 13, relu_of_o ? ", %v" : "");
  s.replace(s.find("__EXTRA_NODE__"), 14, relu_of_o ? "\n  %v = Relu(%o) @r" : "");
  return s;
}

// Weights and biases of varied values (the text gives one value per tensor).
Model parse_inferred(const std::string& text) { return parse_sines(text, 0.05f); }

// "c0:-y c1:xy ..." : per convolution, x when it reads a blocked input, y when it writes a
// blocked output.
std::string marks(const Model& m) {
  std::string s;
  for (const auto& n : m.graph->nodes()) {
    if (n->op != "FusedConv" && n->op != "MaxPool" && n->op != "GlobalAveragePool" && n->op != "FusedElementwise")
      continue;
    s += (s.empty() ? "" : " ") + n->name + ":" + (n->attr_i("x_blocked", 0) ? "x" : "-") +
         (n->attr_i("y_blocked", 0) ? "y" : "-");
  }
  return s;
}

TEST(BlockedLayout, MarksTensorsOnlyDirectConvolutionsProduceAndRead) {
  Model m = parse_inferred(chain(false));
  LowerReport r = lower_model(m);
  for (const auto& k : r.kernels) ASSERT_EQ(k.tactic, "direct") << k.node << ": " << k.why;
  EXPECT_EQ(marks(m), "c0:-y c1:xy c2:xy c3:x- c4:x- c5:x- c6:x-");
  EXPECT_EQ(r.blocked_tensors, 3);
  for (const auto& k : r.kernels) {
    if (k.node == "c2") {
      EXPECT_NE(k.why.find("channel-blocked input and output"), std::string::npos) << k.why;
    }
  }
  ops::verify_model(m);  // the attributes are in FusedConv's schema
}

TEST(BlockedLayout, AResidualAndItsOutputAgree) {
  // o also feeds a Relu: o stays NCHW, so c2's residual a does too; h still passes blocked.
  Model m = parse_inferred(chain(true));
  LowerReport r = lower_model(m);
  EXPECT_EQ(marks(m), "c0:-- c1:-y c2:x- c3:-- c4:-- c5:-- c6:-- r:--");
  EXPECT_EQ(r.blocked_tensors, 1);
}

TEST(BlockedLayout, PoolsPassBlocksAndOneByOnesBetweenDirectConvolutionsRunDirect) {
  Model m = parse_inferred(pooled(false));
  LowerReport r = lower_model(m);
  std::string pw;
  for (const auto& k : r.kernels)
    if (k.node == "pw") pw = k.tactic;
  EXPECT_EQ(pw, "direct");
  EXPECT_EQ(marks(m), "s0:-y mp:xy c1:xy pw:xy c2:xy gap:x-");
  EXPECT_EQ(r.blocked_tensors, 5);
  // A SiLU on the 1x1, which the tiles do not fuse into the blocked store (a pass over the blocks
  // after): AVX-512 still runs it direct; on AVX2 pw keeps its cost's tactic and h and k stay NCHW.
  Model silu = parse_inferred(pooled(false, "Silu"));
  LowerReport rs = lower_model(silu);
  pw.clear();
  for (const auto& k : rs.kernels)
    if (k.node == "pw") pw = k.tactic;
  ASSERT_FALSE(pw.empty());
  if (avx512()) {
    EXPECT_EQ(pw, "direct");
    EXPECT_EQ(marks(silu), "s0:-y mp:xy c1:xy pw:xy c2:xy gap:x-");
  } else {
    EXPECT_NE(pw, "direct");
    EXPECT_EQ(marks(silu), "s0:-y mp:xy c1:x- pw:-- c2:-y gap:x-");
  }
  // The pool's output returned too: it stays NCHW (the pool reads blocks and writes NCHW), and so
  // does c2's (tied to it through the residual).
  Model n = parse_inferred(pooled(true));
  lower_model(n);
  if (std::string(kernels::gemm_isa()) == "avx512") {
    EXPECT_EQ(marks(n), "s0:-y mp:x- c1:-y pw:xy c2:x- gap:--");
  }
}

// The pooled chain with a symbolic batch.
std::string pooled_any_batch() {
  std::string text = pooled(false);
  text.replace(text.find("f32[1,16,28,28]"), 15, "f32[N,16,28,28]");
  return text;
}

// A symbolic batch does not change the layout: the max pool and the global average still pass
// blocks (they asked for static shapes before, so models compiled without --dim, resnet18's
// and digits_cnn's, kept NCHW around them: 14 of resnet18's 21 tensors blocked).
// CompiledChainMatchesTheInterpreter runs it at batch 2.
TEST(BlockedLayout, ASymbolicBatchKeepsThePoolsOnBlocks) {
  const std::string text = pooled_any_batch();
  Model fixed = parse_inferred(pooled(false));
  lower_model(fixed);
  Model m = parse_inferred(text);
  lower_model(m);
  EXPECT_EQ(marks(m), marks(fixed));
  EXPECT_NE(marks(m).find("mp:x"), std::string::npos);
  EXPECT_NE(marks(m).find("gap:x-"), std::string::npos);
}

// The nodes the lowering marked to write their output over their input.
std::string wide_marks(const Model& m);

std::string in_place_nodes(const Model& model) {
  std::string s;
  for (const auto& node : model.graph->nodes())
    if (node->attr_i("in_place", 0)) s += (s.empty() ? "" : " ") + node->name;
  return s;
}

// The depthwise + projection pairs below stay two nodes, so that each one's marks can be read
// (lower/depthwise_project.cpp joins them; depthwise_project_test.cpp).
struct PairsApart {
  PairsApart() { ::setenv("KILN_DEPTHWISE_PROJECT", "0", 1); }
  ~PairsApart() { ::unsetenv("KILN_DEPTHWISE_PROJECT"); }
};

TEST(BlockedLayout, DepthwiseConvolutionsPassBlocksBetweenDirectOneByOnes) {
  const PairsApart apart;
  Model m = parse_inferred(inverted(false));
  LowerReport r = lower_model(m);
  std::map<std::string, std::string> tactic;
  for (const auto& k : r.kernels) tactic[k.node] = k.tactic;
  EXPECT_EQ(tactic["ex"], "direct");
  EXPECT_EQ(tactic["dw"], "depthwise");
  EXPECT_EQ(tactic["pr"], "direct");
  EXPECT_EQ(marks(m), "s0:-y ex:xy dw:xy pr:xy gap:x-");
  EXPECT_EQ(r.blocked_tensors, 4);
  // Blocks in and out, 28 rows (one band at any thread count), but on AVX-512 rows of 28 take
  // the aligned pair kernel, which needs its output apart: not in place (the 14x14 case below
  // is). AVX2's kernels write it over its input: the lowering follows the kernels' rule. The
  // projection, direct with the residual x1, may write over x1 (only over it: in_place_input).
  kernels::Conv2dShape dw;
  dw.N = 1, dw.C = dw.K = dw.group = 32, dw.H = dw.W = 28, dw.R = dw.S = 3;
  dw.pad_top = dw.pad_left = dw.pad_bottom = dw.pad_right = 1;
  dw.x_blocked = dw.y_blocked = true;
  if (avx512()) {
    EXPECT_FALSE(kernels::conv_depthwise_in_place(dw));
  }
  EXPECT_EQ(in_place_nodes(m), kernels::conv_depthwise_in_place(dw) ? "dw pr" : "pr");
  for (const auto& node : m.graph->nodes()) {
    if (node->name == "pr") {
      EXPECT_EQ(node->attr_i("in_place_input", -1), 3);
    }
  }
  Model n = parse_inferred(inverted(true));
  LowerReport rn = lower_model(n);
  EXPECT_EQ(marks(n), "s0:-- ex:-- dw:-- pr:-- gap:--");
  EXPECT_EQ(in_place_nodes(n), "");
  for (const auto& k : rn.kernels) {
    if (k.node == "pr" || k.node == "ex") {
      EXPECT_NE(k.tactic, "direct") << k.node;
    }
  }
}

// On 12x12 planes, blocks in and out, the depthwise layer writes over its input
// (lower/in_place_convs.cpp), with the batch fixed and with it symbolic: the zoo's models export
// the batch as N, and before the rule read the batch as 1 none of their layers was marked.
// (14-wide rows and rows of 16 or more run the aligned-pair kernel, out of place.)
// (On 8-channel blocks: KILN_WIDE_DEPTHWISE=0; on 16 the kernel reads its input rows in place,
// below.)
TEST(BlockedLayout, SmallDepthwisePlanesWriteOverTheirInputWhateverTheBatch) {
  const PairsApart apart;
  ::setenv("KILN_WIDE_DEPTHWISE", "0", 1);
  for (const char* input : {"f32[1,16,12,12]", "f32[N,16,12,12]"}) {
    std::string text = inverted(false);
    text.replace(text.find("f32[1,16,28,28]"), 15, input);
    Model m = parse_inferred(text);
    lower_model(m);
    EXPECT_EQ(marks(m), "s0:-y ex:xy dw:xy pr:xy gap:x-") << input;
    EXPECT_EQ(wide_marks(m), "s0:-y ex:xy dw:xy pr:xy") << input;
    EXPECT_EQ(in_place_nodes(m), "dw pr") << input;
  }
  ::unsetenv("KILN_WIDE_DEPTHWISE");
}

// A depthwise layer on input rows of up to 16 pixels takes 16-channel blocks from the expand
// before it and gives them to the projection after it (src/kernels/depthwise_wide.h), not in
// place; the projection's output keeps 8, since the average pool reads it and its residual x1
// is tied to it. On 28-wide rows every tensor keeps 8.
TEST(BlockedLayout, SixteenChannelBlocksThroughSmallDepthwiseLayers) {
  if (std::string(kernels::gemm_isa()) != "avx512") GTEST_SKIP() << "16-channel blocks on AVX-512 only";
  const PairsApart apart;
  for (const char* input : {"f32[1,16,12,12]", "f32[N,16,7,7]"}) {
    std::string text = inverted(false);
    text.replace(text.find("f32[1,16,28,28]"), 15, input);
    Model m = parse_inferred(text);
    const LowerReport r = lower_model(m);
    EXPECT_EQ(wide_marks(m), "s0:-y ex:xY dw:XY pr:Xy") << input;
    EXPECT_EQ(r.wide_tensors, 2) << input;
    EXPECT_EQ(in_place_nodes(m), "pr") << input;
    ops::verify_model(m);
  }
  Model m = parse_inferred(inverted(false));
  lower_model(m);
  EXPECT_EQ(wide_marks(m), "s0:-y ex:xy dw:xy pr:xy");
}

TEST(BlockedLayout, ExcitationProductsPassBlocks) {
  Model m = parse_inferred(excited(false));
  LowerReport r = lower_model(m);
  std::map<std::string, std::string> tactic, why;
  for (const auto& k : r.kernels) tactic[k.node] = k.tactic, why[k.node] = k.why;
  EXPECT_EQ(tactic["se"], "generated");
  EXPECT_EQ(tactic["pr"], "direct");
  // A FusedElementwise marks y only (its full-size inputs share the output's layout). The
  // average sq is folded into dw (lower/channel_means.cpp: channel_means_test.cpp).
  EXPECT_EQ(marks(m), "s0:-y dw:xy fc1:-- fc2:-- se:-y pr:xy gap:x-");
  EXPECT_EQ(r.folded_means, 1);
  EXPECT_EQ(r.blocked_tensors, 4);
  EXPECT_NE(why["se"].find("channel-blocked input and output"), std::string::npos) << why["se"];
  // The product returned too: it stays NCHW, the depthwise output with it (the Mul reads it at
  // the output's index): the depthwise layer reads blocks and writes NCHW, and the projection,
  // between NCHW tensors, keeps its cost's tactic.
  Model n = parse_inferred(excited(true));
  LowerReport rn = lower_model(n);
  EXPECT_EQ(marks(n), "s0:-y dw:x- fc1:-- fc2:-- se:-- pr:-- gap:--");
  EXPECT_EQ(rn.blocked_tensors, 1);
  for (const auto& k : rn.kernels) {
    if (k.node == "pr") {
      EXPECT_NE(k.tactic, "direct");
    }
  }
}

TEST(BlockedLayout, OneInputChannelIntoManyWritesBlocks) {
  Model m = parse_inferred(kOneChannel);
  LowerReport r = lower_model(m);
  std::map<std::string, std::string> tactic;
  for (const auto& k : r.kernels) tactic[k.node] = k.tactic;
  ASSERT_EQ(tactic["d0"], "depthwise");
  if (tactic["c1"] != "direct") GTEST_SKIP() << "c1 runs " << tactic["c1"] << " on this CPU";
  EXPECT_EQ(marks(m), "d0:-y c1:x-");
  EXPECT_EQ(r.blocked_tensors, 1);
}

// "s0:-Y c1:XY ...": per convolution, x / y for 8-channel blocks read / written, X / Y for 16.
std::string wide_marks(const Model& m) {
  std::string s;
  for (const auto& n : m.graph->nodes()) {
    if (n->op != "FusedConv") continue;
    auto mark = [&](const char* blocked, const char* block, char narrow) {
      if (!n->attr_i(blocked, 0)) return '-';
      return n->attr_i(block, kernels::kConvBlock) == kernels::kConvBlockWide ? static_cast<char>(narrow - 32) : narrow;
    };
    s += (s.empty() ? "" : " ") + n->name + ":" + mark("x_blocked", "x_block", 'x') + mark("y_blocked", "y_block", 'y');
  }
  return s;
}

TEST(BlockedLayout, SixteenChannelBlocksBetweenDirectConvolutionsAlone) {
  if (std::string(kernels::gemm_isa()) != "avx512") {
    Model m = parse_inferred(bottleneck(false));
    EXPECT_EQ(lower_model(m).wide_tensors, 0);
    GTEST_SKIP() << "16-channel blocks on AVX-512 only";
  }
  Model m = parse_inferred(bottleneck(false));
  LowerReport r = lower_model(m);
  for (const auto& k : r.kernels) {
    if (k.node != "gap") {
      ASSERT_EQ(k.tactic, "direct") << k.node << ": " << k.why;
    }
  }
  EXPECT_EQ(wide_marks(m), "s0:-Y c1:XY c2:XY c3:XY c4:Xy");
  EXPECT_EQ(r.wide_tensors, 4);
  EXPECT_EQ(r.blocked_tensors, 5);
  for (const auto& k : r.kernels) {
    if (k.node == "c2") {
      EXPECT_NE(k.why.find("input and output in 16-channel blocks"), std::string::npos) << k.why;
    }
  }
  ops::verify_model(m);  // x_block / y_block are in FusedConv's schema
  // A 3x3/2 reading o: o and its residual a keep 8-channel blocks; h and k between stride-1
  // convolutions keep 16.
  Model s2 = parse_inferred(bottleneck(true));
  lower_model(s2);
  EXPECT_EQ(wide_marks(s2), "s0:-y c1:xY c2:XY c3:Xy c4:xy c5:x-");
  ::setenv("KILN_WIDE_BLOCKS", "0", 1);
  Model off = parse_inferred(bottleneck(false));
  const LowerReport r_off = lower_model(off);
  ::unsetenv("KILN_WIDE_BLOCKS");
  EXPECT_EQ(r_off.wide_tensors, 0);
  EXPECT_EQ(r_off.blocked_tensors, 5);
  EXPECT_EQ(wide_marks(off), "s0:-y c1:xy c2:xy c3:xy c4:xy");
}

TEST(BlockedLayout, NothingChangesWithoutPackingOrWhenSwitchedOff) {
  Model unpacked = parse_inferred(chain(false));
  EXPECT_EQ(lower_model(unpacked, {.pack_weights = false}).blocked_tensors, 0);
  EXPECT_EQ(marks(unpacked), "c0:-- c1:-- c2:-- c3:-- c4:-- c5:-- c6:--");
  ::setenv("KILN_BLOCKED_LAYOUT", "0", 1);
  Model off = parse_inferred(chain(false));
  const int n = lower_model(off).blocked_tensors;
  ::unsetenv("KILN_BLOCKED_LAYOUT");
  EXPECT_EQ(n, 0);
  EXPECT_EQ(marks(off), "c0:-- c1:-- c2:-- c3:-- c4:-- c5:-- c6:--");
}

// A residual that is also the convolution's input (a 1x1 of 64 channels into 64 adding its own
// input) is read by every output pixel: the output may not take its bytes. With another residual
// it does, and the compiled model still matches the interpreter (CompiledChainMatchesTheInterpreter
// runs the inverted block, whose projection adds in place, at 1 and 2 threads).
TEST(BlockedLayout, DirectConvolutionsAddTheirResidualInPlaceUnlessItIsTheirInput) {
  for (const bool own : {true, false}) {
    std::string text = kOwnResidual;
    text.replace(text.find("__Z__"), 5, own ? "%x2" : "%x1");
    Model m = parse_inferred(text);
    LowerReport r = lower_model(m);
    std::map<std::string, std::string> tactic;
    for (const auto& k : r.kernels) tactic[k.node] = k.tactic;
    ASSERT_EQ(tactic["c2"], "direct");
    EXPECT_EQ(in_place_nodes(m), own ? "" : "c2") << own;
    auto exe = load_lowered(m, "own_residual");
    expect_lowered_matches(parse_inferred(text), *exe, sine_input({1, 16, 14, 14}), own ? "own" : "other");
    const plan::Plan* p = exe->last_plan();
    ASSERT_NE(p, nullptr);
    bool in_place = false;
    for (const auto& v : p->values)
      if (v.in_place) in_place = true;
    EXPECT_EQ(in_place, !own) << own;
  }
}

// The compiled chains (blocked between c0, c1, c2 and their readers; the pools; the inverted
// residual with its depthwise layer, written over its input; the pools with a symbolic batch, run
// at batch 2) against the interpreter on the unlowered graph: max |diff| <= 1e-5 * max |ref| on
// every output, at 1 and 2 threads.
TEST(BlockedLayout, CompiledChainMatchesTheInterpreter) {
  for (const std::string& text :
       {chain(false), chain(true), pooled(false), pooled(true), inverted(false), inverted(true),
        std::string(kOneChannel), pooled_any_batch(), bottleneck(false), bottleneck(true), small_inverted()}) {
    const bool relu_of_o = text.find("%v = Relu") != std::string::npos;
    Model m = parse_inferred(text);
    lower_model(m);
    auto exe = load_lowered(m, "blocked");
    const Shape& xs = m.graph->inputs[0]->shape;
    std::vector<int64_t> dims = *ops::dims_batch_as_one(xs);
    if (!xs.is_static()) dims[0] = 2;
    expect_lowered_matches(parse_inferred(text), *exe, sine_input(dims), relu_of_o ? "relu_of_o" : "");
  }
}

}  // namespace
}  // namespace kiln::lower

// Lowering: plain Conv/MatMul/Gemm become kiln.FusedConv/FusedMatMul (textual IR before -> after),
// each node gets a tactic with a reason, constant weights are replaced by packed ones whose
// logical shape keeps inference and cost unchanged.
#include <gtest/gtest.h>

#include "kiln/ir/text.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::lower {
namespace {

Model parse_inferred(const std::string& text) {
  Model m = parse_model(text);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

std::string structure(const Model& m) {
  PrintOptions p;
  p.show_names = false;
  p.elide_weights = true;
  p.elide_over = 0;
  return print_model(m, p);
}

// The interpreter gives the same outputs (within 1e-5) for `src` and its unpacked lowering `m`,
// on inputs filled from a fixed pattern.
void expect_same_outputs(const Model& src, const Model& m) {
  std::map<std::string, Tensor> in;
  for (const Value* v : src.graph->inputs) {
    Tensor t(DType::f32, v->shape.static_dims());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>((i * 7) % 11) * 0.1f - 0.5f;
    in[v->name] = t;
  }
  auto want = run_model(src, in);
  auto got = run_model(m, in);
  for (const auto& [name, t] : want) {
    ASSERT_EQ(got[name].dims(), t.dims()) << name;
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(got[name].data<float>()[i], t.data<float>()[i], 1e-5) << name;
  }
}

const KernelChoice& choice(const LowerReport& r, const std::string& node) {
  for (const auto& k : r.kernels)
    if (k.node == node) return k;
  throw Error("no kernel choice for " + node);
}

constexpr const char* kConvs = R"(
kiln.model ir=8 opset=14
graph g(%x: f32[1,8,10,10]) -> (%y3, %yd, %y1) {
  %w3 = init f32[8,8,3,3] dense<0.01>
  %b = init f32[8] dense<0.5>
  %wd = init f32[8,1,3,3] dense<0.1>
  %w1 = init f32[8,8,1,1] dense<0.2>
  %y3 = Conv(%x, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1]} @c3
  %yd = Conv(%x, %wd) {group=8, kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @dw
  %y1 = Conv(%x, %w1) @pw
}
)";

TEST(Lower, ConvsBecomeFusedConvWithTheirTactic) {
  Model m = parse_inferred(kConvs);
  LowerReport r = lower_model(m, {.pack_weights = false});
  std::string text = structure(m);
  // A 3x3 over a 10x10 image: direct, pixel-gemm and gemm all apply; the estimate picks one
  // (direct today) and the reason names the others.
  const std::string t3 = choice(r, "c3").tactic;
  EXPECT_TRUE(t3 == "direct" || t3 == "gemm" || t3 == "pixel-gemm") << t3;
  EXPECT_NE(text.find("%y3 = kiln::FusedConv(%x, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1], tactic=\"" + t3 + "\"}"),
            std::string::npos)
      << text;
  for (const char* other : {"direct", "gemm", "pixel-gemm"}) {
    if (t3 != other) {
      EXPECT_NE(choice(r, "c3").why.find(std::string(other) + ": applies, estimated slower"), std::string::npos)
          << choice(r, "c3").why;
    }
  }
  EXPECT_EQ(choice(r, "dw").tactic, "depthwise");
  EXPECT_EQ(choice(r, "pw").tactic, "pointwise");
  // The reason names why the earlier tactics did not apply.
  EXPECT_NE(choice(r, "c3").why.find("pointwise: kernel is not 1x1"), std::string::npos) << choice(r, "c3").why;
  EXPECT_EQ(m.opset("kiln"), 1);
  EXPECT_EQ(r.reference_nodes, 0);
}

TEST(Lower, PackedWeightsKeepShapesCostAndReplaceTheOriginal) {
  Model before = parse_inferred(kConvs);
  Model m = parse_inferred(kConvs);
  std::vector<double> flops;
  for (const auto& n : before.graph->nodes()) flops.push_back(ops::node_cost(*n)->flops);
  LowerReport r = lower_model(m);
  ops::verify_model(m);
  ops::infer_shapes(m);
  ASSERT_EQ(m.graph->nodes().size(), flops.size());
  size_t i = 0;
  for (const auto& n : m.graph->nodes()) {
    EXPECT_EQ(n->attr_i("packed", 0), 1) << n->name;
    EXPECT_EQ(n->attr_s("isa", ""), kernels::gemm_isa());
    EXPECT_EQ(n->outputs[0]->shape, before.graph->nodes()[i]->outputs[0]->shape) << n->name;
    EXPECT_DOUBLE_EQ(ops::node_cost(*n)->flops, flops[i]) << n->name;
    ++i;
  }
  // The 3x3 weight is now the packed tensor the conv kernel asked for; the unpacked ones are gone.
  const Node& c3 = *m.graph->nodes()[0];
  kernels::Conv2dShape s{.N = 1, .C = 8, .H = 10, .W = 10, .K = 8, .R = 3, .S = 3};
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  const std::string t3 = choice(r, "c3").tactic;
  kernels::ConvTactic tactic = kernels::ConvTactic::Gemm;
  for (kernels::ConvTactic t : {kernels::ConvTactic::Gemm, kernels::ConvTactic::PixelGemm, kernels::ConvTactic::Direct})
    if (t3 == kernels::conv_tactic_name(t)) tactic = t;
  EXPECT_EQ(t3, kernels::conv_tactic_name(tactic));
  EXPECT_EQ(static_cast<size_t>(c3.inputs[1]->initializer->numel()), kernels::conv_packed_weight_floats(tactic, s));
  for (const Value* v : m.graph->initializers) EXPECT_NE(v->name, "w3");
  EXPECT_GT(r.packed_bytes, 0);
}

// The direct tactic's 6 x 64 tile (Conv2dShape::p64) is chosen where the weights are packed and
// recorded on the node, on the image's own size: a 3x3 64 -> 64 over 28x28 takes it on a CPU
// that has it; the same over an image of unknown size does not (the packing must hold for any
// size it runs at), nor does a 14x14 image (rows under 24); --explain's reason names the tile.
// (Its numerics: Conv.SixBySixtyFourTile, and ZooCompiled's resnet18 / resnet50 against ORT.)
TEST(Lower, SixBySixtyFourTileIsRecordedOnKnownSizesOnly) {
  const std::string text = R"(
kiln.model ir=8 opset=14
graph g(%x: f32[1,64,28,28], %s: f32[1,64,14,14], %d: f32[1,64,H,W]) -> (%y, %z, %u) {
  %w = init f32[64,64,3,3] dense<0.01>
  %y = Conv(%x, %w) {kernel_shape=[3,3], pads=[1,1,1,1]} @big
  %z = Conv(%s, %w) {kernel_shape=[3,3], pads=[1,1,1,1]} @small
  %u = Conv(%d, %w) {kernel_shape=[3,3], pads=[1,1,1,1]} @dynamic
}
)";
  Model m = parse_inferred(text);
  LowerReport r = lower_model(m);
  const bool has = kernels::kernel_table().conv_shape_p64.nr > 0;
  for (const auto& n : m.graph->nodes()) {
    const bool want = has && n->name == "big" && choice(r, "big").tactic == "direct";
    EXPECT_EQ(n->attr_i("p64", 0), want ? 1 : 0) << n->name << " (" << choice(r, n->name).tactic << ")";
  }
  if (has) {
    EXPECT_EQ(choice(r, "big").tactic, "direct");
    EXPECT_NE(choice(r, "big").why.find("on the 6 x 64 tile"), std::string::npos) << choice(r, "big").why;
  }
  EXPECT_EQ(choice(r, "small").why.find("6 x 64"), std::string::npos) << choice(r, "small").why;
}

constexpr const char* kGemms = R"(
kiln.model ir=8 opset=14
graph g(%a: f32[4,16], %q: f32[2,4,16], %k: f32[2,16,4], %at: f32[16,4]) -> (%y, %z, %s, %t) {
  %w = init f32[16,8] dense<0.25>
  %wt = init f32[8,16] dense<0.5>
  %c = init f32[8] dense<1.0>
  %y = MatMul(%a, %w) @mm
  %z = Gemm(%a, %wt, %c) {transB=1, beta=2.0} @gemm
  %s = MatMul(%q, %k) @scores
  %t = Gemm(%at, %w) {transA=1} @gemm_ta
}
)";

TEST(Lower, GemmsWithConstantWeightsArePackedOthersSayWhy) {
  Model m = parse_inferred(kGemms);
  LowerReport r = lower_model(m, {.pack_weights = false});
  std::string text = structure(m);
  EXPECT_NE(text.find("%y = kiln::FusedMatMul(%a, %w) {tactic=\"packed-b\"}"), std::string::npos) << text;
  // beta * C becomes the bias: a new initializer of 8 values equal to 2.
  EXPECT_NE(text.find("kiln::FusedMatMul(%a, %wt, %"), std::string::npos) << text;
  EXPECT_NE(text.find("trans_b=1"), std::string::npos) << text;
  const Node* gemm = nullptr;
  for (const auto& n : m.graph->nodes())
    if (n->name == "gemm") gemm = n.get();
  ASSERT_NE(gemm, nullptr);
  const Tensor& bias = *gemm->inputs[2]->initializer;
  ASSERT_EQ(bias.numel(), 8);
  EXPECT_FLOAT_EQ(bias.data<float>()[3], 2.0f);
  EXPECT_EQ(choice(r, "scores").tactic, "reference");
  EXPECT_NE(choice(r, "scores").why.find("not a constant"), std::string::npos);
  EXPECT_EQ(choice(r, "gemm_ta").tactic, "reference");
  EXPECT_NE(choice(r, "gemm_ta").why.find("transA=1"), std::string::npos);
  EXPECT_EQ(r.reference_nodes, 2);
}

TEST(Lower, UnpackedLoweringComputesWhatTheSourceComputes) {
  // Without packing the lowered graph still runs in the reference interpreter: same outputs.
  Model src = parse_inferred(kGemms);
  Model m = parse_inferred(kGemms);
  lower_model(m, {.pack_weights = false});
  expect_same_outputs(src, m);
}

// Conv1d (Silero VAD's encoder) runs as a 2-D convolution of height 1: the input and the
// residual are viewed as [N,C,1,W] by Reshapes, the weight gains a unit height, the attributes a
// leading height entry, and a Reshape gives the 3-D output back. Unpacked, the lowered graph
// computes what the source computes; every convolution gets a fast tactic.
constexpr const char* kConv1d = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,4,16], %z: f32[1,6,8]) -> (%y, %p, %f) {
  %w = init f32[6,4,3] dense<-0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3>
  %b = init f32[6] dense<0.5, -0.25, 0.125, 0.0, 1.0, -1.0>
  %y = Conv(%x, %w, %b) {kernel_shape=[3], strides=[2], pads=[1,0]} @c1
  %wd = init f32[4,1,5] dense<-0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4>
  %p = Conv(%x, %wd) {group=4, pads=[2,2]} @dw
  %f = kiln::FusedConv(%x, %w, %b, %z) {strides=[2], pads=[1,0], activation="Relu"} @fc
}
)";

TEST(Lower, Conv1dRunsAsA2dConvolutionOfHeightOne) {
  Model src = parse_inferred(kConv1d);
  Model m = parse_inferred(kConv1d);
  LowerReport r = lower_model(m, {.pack_weights = false});
  ops::verify_model(m);
  ops::infer_shapes(m);
  const std::string text = structure(m);
  for (const char* node : {"c1", "dw", "fc"}) EXPECT_NE(choice(r, node).tactic, "reference") << choice(r, node).why;
  EXPECT_NE(text.find("{kernel_shape=[1,3], pads=[0,1,0,0], strides=[1,2], tactic="), std::string::npos) << text;
  EXPECT_NE(text.find("{group=4, kernel_shape=[1,5], pads=[0,2,0,2], tactic="), std::string::npos) << text;
  EXPECT_NE(text.find("{activation=\"Relu\", kernel_shape=[1,3], pads=[0,1,0,0], strides=[1,2], tactic="),
            std::string::npos)
      << text;
  size_t reshapes = 0;
  for (const auto& n : m.graph->nodes()) {
    reshapes += n->op == "Reshape";
    if (n->op == "FusedConv") {
      EXPECT_EQ(n->input(0)->shape.str(), "[1,4,1,16]");
      EXPECT_EQ(n->input(1)->initializer->rank(), 4u);
    }
  }
  EXPECT_EQ(reshapes, 7u);  // x and y per convolution, and the residual
  EXPECT_EQ(m.graph->find("y")->shape.str(), "[1,6,8]");

  expect_same_outputs(src, m);
}

// If branches are lowered like the main graph (the compiled runtime plans and runs them); a Loop
// body keeps its plain Conv, since the reference kernels that run it read unpacked weights.
TEST(Lower, IfBranchesAreLoweredLoopBodiesAreNot) {
  constexpr const char* kText = R"(
kiln.model ir=8 opset=14
graph g(%c: bool[], %x: f32[1,2,6,6], %n: i64[]) -> (%y, %l) {
  %w = init f32[2,2,3,3] dense<0.25>
  %t = init bool[] dense<1>
  %y = If(%c) {
    then_branch=graph tb() -> (%a) {
      %a = Conv(%x, %w) {pads=[1,1,1,1]} @branch_conv
    },
    else_branch=graph eb() -> (%x) {
    }
  }
  %l = Loop(%n, %t, %x) {
    body=graph lb(%i: i64[], %cond: bool[], %v: f32[1,2,6,6]) -> (%cond, %o) {
      %o = Conv(%v, %w) {pads=[1,1,1,1]} @loop_conv
    }
  }
}
)";
  Model m = parse_inferred(kText);
  LowerReport r = lower_model(m);
  EXPECT_EQ(choice(r, "branch_conv").op, "kiln::FusedConv");
  EXPECT_NE(choice(r, "branch_conv").tactic, "reference");
  const std::string text = structure(m);
  EXPECT_NE(text.find("kiln::FusedConv("), std::string::npos) << text;
  EXPECT_NE(text.find("packed=1"), std::string::npos) << text;
  EXPECT_NE(text.find("= Conv(%v, %w)"), std::string::npos) << text;  // the Loop body's, as it was
}

TEST(Lower, NothingToLowerLeavesTheGraphAsItWas) {
  constexpr const char* kText = R"(
kiln.model ir=8 opset=14
graph g(%x: f32[2,3]) -> (%y) {
  %y = Transpose(%x) {perm=[1,0]}
}
)";
  Model m = parse_inferred(kText);
  std::string before = structure(m);
  LowerReport r = lower_model(m);
  EXPECT_EQ(structure(m), before);
  EXPECT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].tactic, "reference");
  EXPECT_EQ(r.packed_bytes, 0);
}

}  // namespace
}  // namespace kiln::lower

// fuse-epilogue: textual before -> after cases (bias folding, residuals, each activation form,
// Gemm), cases it must leave alone (with the reason --explain gives), and the numeric check on
// resnet50, mobilenet_v2 and efficientnet_b0.
#include <iostream>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

TEST(FuseEpilogue, ConvChannelBiasResidualAndRelu) {
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, R"(kiln.model opset=13
graph g(%x: f32[1,2,4,4], %z: f32[1,2,4,4]) -> (%y) {
  %w = init f32[2,2,3,3] dense<0.5>
  %b = init f32[2] dense<1.0, 2.0>
  %cb = init f32[1,2,1,1] dense<10.0, 20.0>
  %c = Conv(%x, %w, %b) {pads=[1,1,1,1]}
  %s = Add(%c, %cb)
  %r = Add(%z, %s)
  %y = Relu(%r)
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,2,4,4], %z: f32[1,2,4,4]) -> (%y) {
  %w = init f32[2,2,3,3] dense<0.5>
  %b = init f32[2] dense<1.0, 2.0>
  %cb = init f32[1,2,1,1] dense<10.0, 20.0>
  %"Conv.bias" = init f32[2] dense<11.0, 22.0>
  %y = kiln::FusedConv(%x, %w, %"Conv.bias", %z) {pads=[1,1,1,1], activation="Relu"}
})");
}

TEST(FuseEpilogue, MatMulBiasAndErfGelu) {
  // The BERT feed-forward form: Add(bias, MatMul), then x * (1 + erf(x / sqrt 2)) * 0.5.
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%a: f32[1,3,4]) -> (%y) {
  %w = init f32[4,6] dense<0.25>
  %bias = init f32[6] dense<0.5>
  %m = MatMul(%a, %w)
  %x = Add(%bias, %m)
  %sqrt2 = Constant() {value=f32[] dense<1.4142135>}
  %d = Div(%x, %sqrt2)
  %e = Erf(%d)
  %one = Constant() {value=f32[] dense<1.0>}
  %p = Add(%e, %one)
  %xm = Mul(%x, %p)
  %half = Constant() {value=f32[] dense<0.5>}
  %y = Mul(%xm, %half)
})",
                 R"(kiln.model opset=14 opset.kiln=1
graph g(%a: f32[1,3,4]) -> (%y) {
  %w = init f32[4,6] dense<0.25>
  %bias = init f32[6] dense<0.5>
  %y = kiln::FusedMatMul(%a, %w, %bias) {activation="Gelu"}
})");
}

TEST(FuseEpilogue, MatMulTanhGeluAsGpt2ExportsIt) {
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%a: f32[2,4], %w: f32[4,8]) -> (%y) {
  %m = MatMul(%a, %w)
  %c05 = Constant() {value=f32[] dense<0.5>}
  %h = Mul(%m, %c05)
  %c3 = Constant() {value=f32[] dense<3.0>}
  %p = Pow(%m, %c3)
  %ck = Constant() {value=f32[] dense<0.044715>}
  %q = Mul(%p, %ck)
  %r = Add(%m, %q)
  %cs = Constant() {value=f32[] dense<0.7978846>}
  %s = Mul(%r, %cs)
  %t = Tanh(%s)
  %c1 = Constant() {value=f32[] dense<1.0>}
  %u = Add(%t, %c1)
  %y = Mul(%h, %u)
})",
                 R"(kiln.model opset=14 opset.kiln=1
graph g(%a: f32[2,4], %w: f32[4,8]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %w) {activation="GeluTanh"}
})");
}

TEST(FuseEpilogue, ConvSiluClipAndHardSwishForms) {
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, R"(kiln.model opset=13
graph g(%x: f32[1,2,3,3], %w: f32[2,2,1,1]) -> (%y1, %y2, %y3) {
  %c1 = Conv(%x, %w)
  %s = Sigmoid(%c1)
  %y1 = Mul(%s, %c1)
  %c2 = Conv(%x, %w)
  %lo = init f32[] dense<0.0>
  %hi = init f32[] dense<6.0>
  %y2 = Clip(%c2, %lo, %hi)
  %c3 = Conv(%x, %w)
  %hs = HardSigmoid(%c3) {alpha=0.16666667, beta=0.5}
  %y3 = Mul(%c3, %hs)
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,2,3,3], %w: f32[2,2,1,1]) -> (%y1, %y2, %y3) {
  %y1 = kiln::FusedConv(%x, %w) {activation="Silu"}
  %lo = init f32[] dense<0.0>
  %hi = init f32[] dense<6.0>
  %y2 = kiln::FusedConv(%x, %w) {activation="Clip", act_alpha=0.0, act_beta=6.0}
  %y3 = kiln::FusedConv(%x, %w) {activation="HardSwish"}
})");
}

TEST(FuseEpilogue, TheLaterConvTakesTheResidualAdd) {
  // ResNet's projection block: Add(conv_a, conv_b) -> Relu; conv_b comes last and absorbs it.
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, R"(kiln.model opset=13
graph g(%x: f32[1,2,3,3], %w: f32[2,2,1,1], %v: f32[2,2,1,1]) -> (%y) {
  %a = Conv(%x, %w)
  %b = Conv(%x, %v)
  %s = Add(%a, %b)
  %y = Relu(%s)
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,2,3,3], %w: f32[2,2,1,1], %v: f32[2,2,1,1]) -> (%y) {
  %a = Conv(%x, %w)
  %y = kiln::FusedConv(%x, %v, _, %a) {activation="Relu"}
})");
}

TEST(FuseEpilogue, GemmBecomesFusedMatMulWithBetaFoldedIntoTheBias) {
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, R"(kiln.model opset=13
graph g(%a: f32[2,3]) -> (%y, %y2) {
  %w = init f32[4,3] dense<1.0>
  %c = init f32[4] dense<1.0, 2.0, 3.0, 4.0>
  %y = Gemm(%a, %w, %c) {transB=1, alpha=2.0, beta=0.5}
  %y2 = Gemm(%a, %w, %c) {transB=1}
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[2,3]) -> (%y, %y2) {
  %w = init f32[4,3] dense<1.0>
  %c = init f32[4] dense<1.0, 2.0, 3.0, 4.0>
  %"Gemm.bias" = init f32[4] dense<0.5, 1.0, 1.5, 2.0>
  %y = kiln::FusedMatMul(%a, %w, %"Gemm.bias") {trans_b=1, alpha=2.0}
  %y2 = kiln::FusedMatMul(%a, %w, %c) {trans_b=1}
})");
}

TEST(FuseEpilogue, LeavesSharedIntermediatesAndOddBiasesAlone) {
  auto pass = passes::make_fuse_epilogue();
  // The conv output is read by Relu and by a graph output: nothing may change.
  const char* shared = R"(kiln.model opset=13
graph g(%x: f32[1,2,3,3], %w: f32[2,2,1,1]) -> (%c, %y) {
  %c = Conv(%x, %w)
  %y = Relu(%c)
})";
  expect_unchanged(*pass, shared);
  passes::PassContext ctx;
  ctx.explain = true;
  run_pass_on_text(*pass, shared, nullptr, &ctx);
  ASSERT_EQ(ctx.remarks.size(), 1u);
  EXPECT_EQ(ctx.remarks[0].message,
            "'c' has 1 readers and is a graph output: it must stay in memory, the epilogue stops before it");
  // A constant of the output's full shape is no per-feature bias; a Gemm with transA is declined.
  expect_unchanged(*pass, R"(kiln.model opset=13
graph g(%a: f32[2,3], %w: f32[3,4]) -> (%y, %y2) {
  %m = MatMul(%a, %w)
  %k = init f32[2,4] dense<1.0>
  %y = Add(%m, %k)
  %y2 = Gemm(%w, %a) {transA=1, transB=1}
})");
  // f64 is not fused.
  expect_unchanged(*pass, R"(kiln.model opset=13
graph g(%a: f64[2,3], %w: f64[3,4]) -> (%y) {
  %m = MatMul(%a, %w)
  %y = Relu(%m)
})");
}

// ---- the zoo models: same outputs before and after, and how much was fused

void report(const std::string& model, const ZooResult& r) {
  std::cout << "[fuse-epilogue] " << model << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes, "
            << count_op(r.model, "kiln", "FusedConv") << " FusedConv, " << count_op(r.model, "kiln", "FusedMatMul")
            << " FusedMatMul\n";
}

// If branches are optimized like the main graph (the compiled runtime plans them); a chain never
// reaches across a branch boundary: %m's only reader is a Relu inside a branch, so %m stays a Conv.
TEST(FuseEpilogue, FusesInsideIfBranchesButNotAcrossThem) {
  const char* before = R"(kiln.model opset=13
graph g(%c: bool[], %x: f32[1,2,4,4]) -> (%y) {
  %w = init f32[2,2,3,3] dense<-1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5, -1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5, -1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5, -1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5>
  %m = Conv(%x, %w) {pads=[1,1,1,1]}
  %y = If(%c) {
    then_branch=graph t() -> (%r) {
      %k = Conv(%x, %w) {pads=[1,1,1,1]}
      %r = Relu(%k)
    },
    else_branch=graph e() -> (%q) {
      %q = Relu(%m)
    }
  }
})";
  auto pass = passes::make_fuse_epilogue();
  expect_rewrite(*pass, before, R"(kiln.model opset=13 opset.kiln=1
graph g(%c: bool[], %x: f32[1,2,4,4]) -> (%y) {
  %w = init f32[2,2,3,3] dense<-1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5, -1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5, -1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5, -1, 0.75, 0.25, -0.25, -0.75, 1, 0.5, 0, -0.5>
  %m = Conv(%x, %w) {pads=[1,1,1,1]}
  %y = If(%c) {
    then_branch=graph t() -> (%r) {
      %r = kiln::FusedConv(%x, %w) {pads=[1,1,1,1], activation="Relu"}
    },
    else_branch=graph e() -> (%q) {
      %q = Relu(%m)
    }
  }
})");
  // The numbers: the interpreter on both conditions, before and after.
  Model m0 = parse_model(before);
  ops::infer_shapes(m0);
  Model m1 = run_pass_on_text(*pass, before);
  Tensor x(DType::f32, {1, 2, 4, 4});
  for (int64_t i = 0; i < 32; ++i) x.data<float>()[i] = static_cast<float>((i * 5) % 9) - 4.f;
  for (bool c : {true, false}) {
    std::map<std::string, Tensor> in = {{"c", Tensor::scalar<bool>(c)}, {"x", x}};
    const Tensor a = run_model(m0, in).at("y"), b = run_model(m1, in).at("y");
    ASSERT_EQ(a.dims(), b.dims());
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << c << " at " << i;
  }
}

TEST(FuseEpilogueZoo, Resnet50) {
  if (!zoo_available("resnet50")) GTEST_SKIP() << "build/zoo/resnet50 is missing";
  auto pass = passes::make_fuse_epilogue();
  ZooResult r = check_zoo_model("resnet50", {pass.get()});
  report("resnet50", r);
  EXPECT_EQ(count_op(r.model, "", "Relu"), 0u);  // every Relu follows a Conv (directly or via the residual Add)
  EXPECT_EQ(count_op(r.model, "", "Add"), 0u);
  EXPECT_EQ(count_op(r.model, "kiln", "FusedMatMul"), 1u);  // the classifier Gemm
}

TEST(FuseEpilogueZoo, MobilenetV2ClipActivations) {
  if (!zoo_available("mobilenet_v2")) GTEST_SKIP() << "build/zoo/mobilenet_v2 is missing";
  auto pass = passes::make_fuse_epilogue();
  ZooResult r = check_zoo_model("mobilenet_v2", {pass.get()});
  report("mobilenet_v2", r);
  EXPECT_EQ(count_op(r.model, "", "Clip"), 0u);
}

TEST(FuseEpilogueZoo, EfficientnetB0SiluActivations) {
  if (!zoo_available("efficientnet_b0")) GTEST_SKIP() << "build/zoo/efficientnet_b0 is missing";
  auto pass = passes::make_fuse_epilogue();
  ZooResult r = check_zoo_model("efficientnet_b0", {pass.get()});
  report("efficientnet_b0", r);
  EXPECT_GT(count_op(r.model, "kiln", "FusedConv"), 60u);
}

// Silero VAD v5 keeps its whole network inside If branches (one per sample rate): each branch's
// Conv1d + Relu pairs fuse, and the outputs stay within 1e-4 of the unfused model's.
TEST(FuseEpilogueZoo, SileroVadV5InsideItsBranches) {
  if (!zoo_available("silero_vad_v5")) GTEST_SKIP() << "build/zoo/silero_vad_v5 is missing";
  auto pass = passes::make_fuse_epilogue();
  ZooResult r = check_zoo_model("silero_vad_v5", {pass.get()});
  report("silero_vad_v5", r);
  std::function<size_t(const Graph&)> fused = [&](const Graph& g) {
    size_t n = 0;
    for (const auto& node : g.nodes()) {
      n += node->domain == "kiln" && node->op == "FusedConv";
      for (const Graph* sg : node->subgraphs()) n += fused(*sg);
    }
    return n;
  };
  EXPECT_EQ(fused(*r.model.graph), 10u);  // 4 encoder Conv + Relu and the decoder's Relu + Conv, per rate
}

}  // namespace
}  // namespace kiln::fusiontest

// Direct convolutions as F(2x2, 3x3) Winograd tiles (lower/winograd.cpp): which convolutions the
// lowering turns (before -> after on textual IR: the `winograd` attribute, p64 dropped, the
// weights packed again), why the others are not (--explain's text), and that the compiled model
// computes what the interpreter does at 1 and 2 threads (within 1e-5 of the largest output).
#include <gtest/gtest.h>

#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// 16 channels at 28x28:
//   c0: 3x3 on the graph's input (NCHW)               -> direct: its input is not blocked
//   c1: 3x3 between blocked tensors                    -> Winograd
//   c2: 3x3 with a residual (a), between blocked ones  -> Winograd
//   c3: 3x3 at stride 2                                -> direct
constexpr const char* kChain = R"(
kiln.model ir=8 opset=14 opset.kiln=1
graph g(%x: f32[1,16,28,28]) -> (%y, %s) {
  %w3 = init f32[16,16,3,3] dense<0.01>
  %b = init f32[16] dense<0.1>
  %a = kiln::FusedConv(%x, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c0
  %h = kiln::FusedConv(%a, %w3, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c1
  %o = kiln::FusedConv(%h, %w3, %b, %a) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} @c2
  %s = kiln::FusedConv(%o, %w3, %b) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @c3
  %y = GlobalAveragePool(%o) @gap
}
)";

Model parse_inferred() { return parse_sines(kChain, 0.05f); }

// "c0:- c1:W ...": W where the convolution runs Winograd tiles.
std::string marks(const Model& m) {
  std::string s;
  for (const auto& n : m.graph->nodes())
    if (n->op == "FusedConv") s += (s.empty() ? "" : " ") + n->name + ":" + (n->attr_i("winograd", 0) ? "W" : "-");
  return s;
}

TEST(Winograd, StrideOneWindowsBetweenBlockedTensorsTakeWinogradTiles) {
  Model m = parse_inferred();
  const LowerReport r = lower_model(m);
  if (!avx512() || !kernels::conv_winograd_enabled()) {
    EXPECT_EQ(marks(m), "c0:- c1:- c2:- c3:-");
    EXPECT_EQ(r.winograd_convs, 0);
    GTEST_SKIP() << "Winograd tiles need AVX-512 (and KILN_WINOGRAD not 0)";
  }
  EXPECT_EQ(marks(m), "c0:- c1:W c2:W c3:-");
  EXPECT_EQ(r.winograd_convs, 2);
  for (const auto& n : m.graph->nodes()) {
    if (n->op != "FusedConv") continue;
    EXPECT_EQ(n->attr_s("tactic", ""), "direct") << n->name;
    if (n->attr_i("winograd", 0)) {
      EXPECT_FALSE(n->has_attr("p64")) << n->name;
      // 16 transformed 16 x 16 matrices, packed as GEMM B panels (at least 16 x 16 x 16 floats).
      EXPECT_GE(n->inputs[1]->initializer->numel(), 16 * 16 * 16) << n->name;
      EXPECT_NE(n->inputs[1]->name.find(".winograd"), std::string::npos) << n->inputs[1]->name;
    }
  }
  for (const auto& k : r.kernels) {
    const bool turned = k.node == "c1" || k.node == "c2";
    if (turned || k.node == "c0") {
      const std::string want = turned ? "Winograd tiles" : "not as Winograd tiles: input or output not channel-blocked";
      EXPECT_NE(k.why.find(want), std::string::npos) << k.node << ": " << k.why;
    }
  }
  // The ONNX weights and the direct panels the Winograd ones replaced are gone.
  for (const Value* v : m.graph->initializers) EXPECT_NE(v->name, "w3");
  ops::verify_model(m);  // `winograd` is in FusedConv's schema
}

TEST(Winograd, CompiledTilesMatchTheInterpreter) {
  Model m = parse_inferred();
  lower_model(m);
  auto exe = load_lowered(m, "winograd");
  expect_lowered_matches(parse_inferred(), *exe, sine_input({1, 16, 28, 28}), "winograd tiles");
}

}  // namespace
}  // namespace kiln::lower

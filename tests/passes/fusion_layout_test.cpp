// layout: transpose pairs cancelled or composed, transposed B folded into MatMul / Gemm /
// FusedMatMul, transposes sunk through elementwise ops until they cancel, cases left alone, and
// bert_base / gpt2 before and after.
#include <iostream>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

TEST(Layout, TransposePairsCancelOrCompose) {
  auto pass = passes::make_layout();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%x: f32[2,3,4,5]) -> (%y, %z) {
  %a = Transpose(%x) {perm=[0,2,1,3]}
  %b = Transpose(%a) {perm=[0,2,1,3]}
  %y = Relu(%b)
  %c = Transpose(%x) {perm=[1,0,2,3]}
  %z = Transpose(%c) {perm=[0,1,3,2]}
})",
                 R"(kiln.model opset=14
graph g(%x: f32[2,3,4,5]) -> (%y, %z) {
  %y = Relu(%x)
  %z = Transpose(%x) {perm=[1,0,3,2]}
})");
}

TEST(Layout, TransposedBFoldsIntoTheProduct) {
  auto pass = passes::make_layout();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%a: f32[2,4,8], %b: f32[2,6,8], %w: f32[5,8], %c: f32[2,8]) -> (%y, %z) {
  %bt = Transpose(%b) {perm=[0,2,1]}
  %y = MatMul(%a, %bt)
  %wt = Transpose(%w) {perm=[1,0]}
  %z = Gemm(%c, %wt)
})",
                 R"(kiln.model opset=14 opset.kiln=1
graph g(%a: f32[2,4,8], %b: f32[2,6,8], %w: f32[5,8], %c: f32[2,8]) -> (%y, %z) {
  %y = kiln::FusedMatMul(%a, %b) {trans_b=1}
  %z = Gemm(%c, %w) {transB=1}
})");
}

TEST(Layout, TransposesSinkThroughElementwiseOpsAndCancel) {
  // [B,S,H,D] -> [B,H,S,D], elementwise work, and back: the transposes meet and vanish.
  auto pass = passes::make_layout();
  expect_rewrite(*pass, R"(kiln.model opset=14
graph g(%x: f32[1,4,2,3], %r: f32[1,4,2,3]) -> (%y) {
  %t = Transpose(%x) {perm=[0,2,1,3]}
  %a = Relu(%t)
  %two = init f32[] dense<2.0>
  %m = Mul(%a, %two)
  %tr = Transpose(%r) {perm=[0,2,1,3]}
  %s = Add(%m, %tr)
  %y = Transpose(%s) {perm=[0,2,1,3]}
})",
                 R"(kiln.model opset=14
graph g(%x: f32[1,4,2,3], %r: f32[1,4,2,3]) -> (%y) {
  %two = init f32[] dense<2.0>
  %"a.untransposed" = Relu(%x)
  %"m.untransposed" = Mul(%"a.untransposed", %two)
  %y = Add(%"m.untransposed", %r)
})");
}

TEST(Layout, LeavesOtherTransposesAlone) {
  // The MatMul's B transpose is not of the last two dims; Add broadcasts the transposed
  // [2,3,1] to [2,3,4], so sinking would transpose more data; a Transpose feeding a Softmax.
  auto pass = passes::make_layout();
  expect_unchanged(*pass, R"(kiln.model opset=14
graph g(%x: f32[2,3,4], %b: f32[4,2,5], %v: f32[3,2,1]) -> (%y, %z, %s) {
  %bt = Transpose(%b) {perm=[1,0,2]}
  %y = MatMul(%x, %bt)
  %vt = Transpose(%v) {perm=[1,0,2]}
  %z = Add(%vt, %x)
  %xt = Transpose(%x) {perm=[0,2,1]}
  %s = Softmax(%xt)
})");
}

void check(const std::string& model) {
  if (!zoo_available(model)) GTEST_SKIP() << "build/zoo/" << model << " is missing";
  auto ln = passes::make_fuse_layernorm();
  auto att = passes::make_fuse_attention();
  auto epi = passes::make_fuse_epilogue();
  auto ew = passes::make_fuse_elementwise();
  auto lay = passes::make_layout();
  ZooResult r = check_zoo_model(model, {ln.get(), att.get(), epi.get(), ew.get(), lay.get()});
  Model original = import_onnx((zoo_dir(model) / "model.onnx").string());
  std::cout << "[all fusions + layout] " << model << ": " << r.nodes_before << " -> " << r.nodes_after
            << " nodes; Transpose " << count_op(original, "", "Transpose") << " -> " << count_op(r.model, "", "Transpose")
            << "\n";
}

TEST(LayoutZoo, Gpt2DecodeAlone) {
  // The K transposes of the KV cache go into FusedMatMul {trans_b=1}.
  if (!zoo_available("gpt2_decode")) GTEST_SKIP() << "build/zoo/gpt2_decode is missing";
  auto lay = passes::make_layout();
  ZooResult r = check_zoo_model("gpt2_decode", {lay.get()});
  EXPECT_EQ(count_op(r.model, "kiln", "FusedMatMul"), 12u);
}

// The whole pipeline on the other zoo models (control flow in Silero VAD, a small CNN):
// nothing may break and the outputs stay within tolerance.
TEST(LayoutZoo, PipelineOnTheOtherZooModels) {
  for (const char* model : {"digits_cnn", "resnet18", "silero_vad_legacy", "silero_vad_v5", "silero_vad_v6"}) {
    if (!zoo_available(model)) continue;
    SCOPED_TRACE(model);
    auto ln = passes::make_fuse_layernorm();
    auto att = passes::make_fuse_attention();
    auto epi = passes::make_fuse_epilogue();
    auto ew = passes::make_fuse_elementwise();
    auto lay = passes::make_layout();
    ZooResult r = check_zoo_model(model, {ln.get(), att.get(), epi.get(), ew.get(), lay.get()});
    std::cout << "[all fusions + layout] " << model << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes\n";
  }
}

TEST(LayoutZoo, BertBaseAfterTheFusions) { check("bert_base"); }
TEST(LayoutZoo, Gpt2AfterTheFusions) { check("gpt2"); }

}  // namespace
}  // namespace kiln::fusiontest

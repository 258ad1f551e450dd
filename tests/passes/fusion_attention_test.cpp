// fuse-attention: GPT-2 (static causal buffer), GPT-2 with a KV cache (causal mask sliced by
// shapes), torch MultiheadAttention (rank 3, additive mask, Q pre-scaled), explicit masks that
// are not causal, cases left alone, a numeric check of the KV-cache form, and the zoo models.
#include <iostream>
#include <random>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

// GPT-2 at a fixed length: the folded causal buffer is True where a score is masked.
const char* kGpt2 = R"(kiln.model opset=14
graph g(%q: f32[1,2,4,8], %k: f32[1,4,2,8], %v: f32[1,2,4,8]) -> (%y) {
  %kt = Transpose(%k) {perm=[0,2,3,1]}
  %s = MatMul(%q, %kt)
  %c8 = Constant() {value=f32[] dense<8.0>}
  %d = Div(%s, %c8)
  %mask = Constant() {value=bool[1,1,4,4] dense<false, true, true, true, false, false, true, true, false, false, false, true, false, false, false, false>}
  %fill = Constant() {value=f32[] dense<-3.4028235e+38>}
  %w = Where(%mask, %fill, %d)
  %p = Softmax(%w) {axis=-1}
  %y = MatMul(%p, %v)
})";

TEST(FuseAttention, Gpt2StaticCausalBuffer) {
  auto pass = passes::make_fuse_attention();
  expect_rewrite(*pass, kGpt2, R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,2,4,8], %k: f32[1,4,2,8], %v: f32[1,2,4,8]) -> (%y) {
  %"kt.k" = Transpose(%k) {perm=[0,2,1,3]}
  %y = kiln::Attention(%q, %"kt.k", %v) {causal=1, scale=0.125}
})");
}

// GPT-2 with a KV cache: the mask is bias[:, :, past:past+seq, :past+seq] of a lower-triangular
// buffer, negated, with bounds computed from shapes.
const char* kDecode = R"(kiln.model opset=14
graph g(%q: f32[1,2,seq,4], %past_k: f32[1,2,past,4], %knew: f32[1,2,seq,4], %past_v: f32[1,2,past,4], %vnew: f32[1,2,seq,4]) -> (%y, %pk) {
  %pk = Concat(%past_k, %knew) {axis=2}
  %pv = Concat(%past_v, %vnew) {axis=2}
  %sq = Shape(%q)
  %i2 = Constant() {value=i64[] dense<2>}
  %nq = Gather(%sq, %i2) {axis=0}
  %sk = Shape(%pk)
  %nk = Gather(%sk, %i2) {axis=0}
  %kt = Transpose(%pk) {perm=[0,1,3,2]}
  %s = MatMul(%q, %kt)
  %c2 = Constant() {value=f32[] dense<2.0>}
  %d = Div(%s, %c2)
  %start = Sub(%nk, %nq)
  %bias = Constant() {value=bool[1,1,8,8] dense<true, false, false, false, false, false, false, false, true, true, false, false, false, false, false, false, true, true, true, false, false, false, false, false, true, true, true, true, false, false, false, false, true, true, true, true, true, false, false, false, true, true, true, true, true, true, false, false, true, true, true, true, true, true, true, false, true, true, true, true, true, true, true, true>}
  %ax0 = Constant() {value=i64[1] dense<0>}
  %start1 = Unsqueeze(%start, %ax0)
  %end1 = Unsqueeze(%nk, %ax0)
  %axis2 = Constant() {value=i64[1] dense<2>}
  %one = Constant() {value=i64[1] dense<1>}
  %rows = Slice(%bias, %start1, %end1, %axis2, %one)
  %zero = Constant() {value=i64[1] dense<0>}
  %axis3 = Constant() {value=i64[1] dense<3>}
  %cols = Slice(%rows, %zero, %end1, %axis3, %one)
  %masked = Not(%cols)
  %cond = Cast(%masked) {to=9}
  %fill = Constant() {value=f32[] dense<-3.4028235e+38>}
  %w = Where(%cond, %fill, %d)
  %p = Softmax(%w) {axis=-1}
  %y = MatMul(%p, %pv)
})";

TEST(FuseAttention, Gpt2KvCacheCausalMaskFromShapes) {
  auto pass = passes::make_fuse_attention();
  expect_rewrite(*pass, kDecode, R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,2,seq,4], %past_k: f32[1,2,past,4], %knew: f32[1,2,seq,4], %past_v: f32[1,2,past,4], %vnew: f32[1,2,seq,4]) -> (%y, %pk) {
  %pk = Concat(%past_k, %knew) {axis=2}
  %pv = Concat(%past_v, %vnew) {axis=2}
  %y = kiln::Attention(%q, %pk, %pv) {causal=1, scale=0.5}
})");
}

TEST(FuseAttention, Gpt2KvCacheGivesTheSameNumbers) {
  Model before = parse_model(kDecode);
  ops::infer_shapes(before);
  Model after = parse_model(kDecode);
  ops::infer_shapes(after);
  passes::PassContext ctx;
  ASSERT_TRUE(passes::make_fuse_attention()->run(after, ctx));
  ops::verify_model(after);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  auto rnd = [&](std::vector<int64_t> d) {
    Tensor t(DType::f32, d);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  for (int64_t past : {0, 3}) {
    std::map<std::string, Tensor> in = {{"q", rnd({1, 2, 2, 4})},      {"past_k", rnd({1, 2, past, 4})},
                                        {"knew", rnd({1, 2, 2, 4})},   {"past_v", rnd({1, 2, past, 4})},
                                        {"vnew", rnd({1, 2, 2, 4})}};
    Tensor want = run_model(before, in).at("y"), got = run_model(after, in).at("y");
    ASSERT_EQ(dims_str(got.dims()), dims_str(want.dims()));
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << "past " << past << " element " << i;
  }
}

// torch.nn.MultiheadAttention: [B·H, S, D] operands, Q scaled first, K as a Transpose of
// [S, B·H, D], an additive mask of [B·H, 1, S], and a Mul by 1.0 of the scores.
const char* kMultihead = R"(kiln.model opset=14
graph g(%q: f32[6,5,4], %k: f32[5,6,4], %v: f32[6,5,4], %mask: f32[6,1,5]) -> (%y) {
  %c2 = Constant() {value=f32[] dense<2.0>}
  %qs = Div(%q, %c2)
  %kt = Transpose(%k) {perm=[1,2,0]}
  %s = MatMul(%qs, %kt)
  %c1 = Constant() {value=f32[] dense<1.0>}
  %s1 = Mul(%s, %c1)
  %sm = Add(%s1, %mask)
  %p = Softmax(%sm) {axis=-1}
  %y = MatMul(%p, %v)
})";

TEST(FuseAttention, MultiheadRankThreeWithAdditiveMask) {
  auto pass = passes::make_fuse_attention();
  expect_rewrite(*pass, kMultihead, R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[6,5,4], %k: f32[5,6,4], %v: f32[6,5,4], %mask: f32[6,1,5]) -> (%y) {
  %"kt.k" = Transpose(%k) {perm=[1,0,2]}
  %axis0 = init i64[1] dense<0>
  %"q.4d" = Unsqueeze(%q, %axis0)
  %"kt.k.4d" = Unsqueeze(%"kt.k", %axis0)
  %"v.4d" = Unsqueeze(%v, %axis0)
  %"y.attention" = kiln::Attention(%"q.4d", %"kt.k.4d", %"v.4d", %mask) {scale=0.5}
  %y = Squeeze(%"y.attention", %axis0)
})");
}

TEST(FuseAttention, NonCausalWhereBecomesAnAdditiveMask) {
  auto pass = passes::make_fuse_attention();
  std::string text = kGpt2;
  text.replace(text.find("%v: f32[1,2,4,8])"), 17, "%v: f32[1,2,4,8], %m: bool[1,1,4,4])");
  text.replace(text.find("%w = Where(%mask,"), 17, "%w = Where(%m,");
  Model m = run_pass_on_text(*pass, text);
  std::string got = canonical(m);
  EXPECT_NE(got.find("%m.additive = Where(%m, %mask_fill, %mask_zero)"), std::string::npos) << got;
  EXPECT_NE(got.find("kiln::Attention(%q, %kt.k, %v, %m.additive) {scale=0.125}"), std::string::npos) << got;
}

TEST(FuseAttention, LeavesOtherShapesAlone) {
  auto pass = passes::make_fuse_attention();
  // Softmax over the queries, not the keys.
  std::string axis = kGpt2;
  axis.replace(axis.find("{axis=-1}"), 9, "{axis=2}");
  expect_unchanged(*pass, axis);
  // A -10000 fill does not vanish like the causal mask: not provably the same after fusion.
  std::string small = kGpt2;
  small.replace(small.find("-3.4028235e+38"), 14, "-10000.0");
  expect_unchanged(*pass, small);
  passes::PassContext ctx;
  ctx.explain = true;
  run_pass_on_text(*pass, small, nullptr, &ctx);
  ASSERT_EQ(ctx.remarks.size(), 1u);
  EXPECT_EQ(ctx.remarks[0].message, "Where fill -10000 is not large enough to vanish in the softmax");
  // The scores are also a graph output.
  std::string shared = kGpt2;
  shared.replace(shared.find("-> (%y)"), 7, "-> (%y, %d)");
  expect_unchanged(*pass, shared);
}

void check(const std::string& model, size_t want, bool causal) {
  if (!zoo_available(model)) GTEST_SKIP() << "build/zoo/" << model << " is missing";
  auto pass = passes::make_fuse_attention();
  ZooResult r = check_zoo_model(model, {pass.get()});
  size_t n = count_op(r.model, "kiln", "Attention"), n_causal = 0;
  for (const auto& node : r.model.graph->nodes()) n_causal += node->op == "Attention" && node->attr_i("causal", 0);
  std::cout << "[fuse-attention] " << model << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes, " << n
            << " Attention (" << n_causal << " causal)\n";
  EXPECT_EQ(n, want);
  EXPECT_EQ(n_causal, causal ? want : 0);
  EXPECT_EQ(count_op(r.model, "", "Softmax"), 0u);
}

TEST(FuseAttentionZoo, BertBase) { check("bert_base", 12, false); }
TEST(FuseAttentionZoo, Gpt2) { check("gpt2", 12, true); }
TEST(FuseAttentionZoo, Gpt2Decode) { check("gpt2_decode", 12, true); }

}  // namespace
}  // namespace kiln::fusiontest

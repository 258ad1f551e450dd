// fold-attention-views: torch's seq-first MultiheadAttention (BERT: Slices of one projection,
// Reshape, Transpose, Unsqueeze; Squeeze, Transpose, Reshape after), GPT-2's Split form, cases
// left alone (a copy read elsewhere, a reshape that is not a view, symbolic shapes), numbers
// before and after on hand-made graphs (interpreter) and on the zoo's BERT and GPT-2.
#include <iostream>
#include <random>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

// torch.nn.MultiheadAttention (seq-first) after fuse-attention: S = 4, E = 6, 2 heads of 3.
const char* kSeqFirst = R"(kiln.model opset=14 opset.kiln=1
graph g(%qkv: f32[4,1,18]) -> (%y) {
  %ax = Constant() {value=i64[1] dense<2>}
  %s0 = Constant() {value=i64[1] dense<0>}
  %s6 = Constant() {value=i64[1] dense<6>}
  %s12 = Constant() {value=i64[1] dense<12>}
  %s18 = Constant() {value=i64[1] dense<18>}
  %q2 = Slice(%qkv, %s0, %s6, %ax)
  %k2 = Slice(%qkv, %s6, %s12, %ax)
  %v2 = Slice(%qkv, %s12, %s18, %ax)
  %heads = Constant() {value=i64[3] dense<4, 2, 3>}
  %q3 = Reshape(%q2, %heads)
  %k3 = Reshape(%k2, %heads)
  %v3 = Reshape(%v2, %heads)
  %qt = Transpose(%q3) {perm=[1,0,2]}
  %kt = Transpose(%k3) {perm=[1,0,2]}
  %vt = Transpose(%v3) {perm=[1,0,2]}
  %a0 = Constant() {value=i64[1] dense<0>}
  %q4 = Unsqueeze(%qt, %a0)
  %k4 = Unsqueeze(%kt, %a0)
  %v4 = Unsqueeze(%vt, %a0)
  %att = kiln::Attention(%q4, %k4, %v4) {scale=0.5}
  %y3 = Squeeze(%att, %a0)
  %yt = Transpose(%y3) {perm=[1,0,2]}
  %flat = Constant() {value=i64[2] dense<4, 6>}
  %y = Reshape(%yt, %flat)
})";

TEST(FoldAttentionViews, SeqFirstSlicesAndTheOutputTranspose) {
  auto pass = passes::make_fold_attention_views();
  // Q at 0, K at 6, V at 12; a head 3 floats on, a position 18 on. Y: a head 3 on, a position 6.
  expect_rewrite(*pass, kSeqFirst, R"(kiln.model opset=14 opset.kiln=1
graph g(%qkv: f32[4,1,18]) -> (%y) {
  %y = kiln::Attention(%qkv, %qkv, %qkv) {k_view=[6,1,2,4,3,0,3,18], q_view=[0,1,2,4,3,0,3,18], scale=0.5, v_view=[12,1,2,4,3,0,3,18], y_shape=[4,6], y_view=[1,2,4,3,0,3,6]}
})");
}

// GPT-2: one Split of the projection, [B, S, H, D] heads, Transpose to [B, H, S, D].
const char* kSplit = R"(kiln.model opset=14 opset.kiln=1
graph g(%qkv: f32[2,5,12]) -> (%y) {
  %sizes = Constant() {value=i64[3] dense<4, 4, 4>}
  %q2, %k2, %v2 = Split(%qkv, %sizes) {axis=2}
  %heads = Constant() {value=i64[4] dense<2, 5, 2, 2>}
  %q3 = Reshape(%q2, %heads)
  %k3 = Reshape(%k2, %heads)
  %v3 = Reshape(%v2, %heads)
  %q4 = Transpose(%q3) {perm=[0,2,1,3]}
  %k4 = Transpose(%k3) {perm=[0,2,1,3]}
  %v4 = Transpose(%v3) {perm=[0,2,1,3]}
  %att = kiln::Attention(%q4, %k4, %v4) {causal=1, scale=0.7}
  %yt = Transpose(%att) {perm=[0,2,1,3]}
  %flat = Constant() {value=i64[3] dense<2, 5, 4>}
  %y = Reshape(%yt, %flat)
})";

TEST(FoldAttentionViews, Gpt2SplitAndBatchTwo) {
  auto pass = passes::make_fold_attention_views();
  expect_rewrite(*pass, kSplit, R"(kiln.model opset=14 opset.kiln=1
graph g(%qkv: f32[2,5,12]) -> (%y) {
  %y = kiln::Attention(%qkv, %qkv, %qkv) {causal=1, k_view=[4,2,2,5,2,60,2,12], q_view=[0,2,2,5,2,60,2,12], scale=0.7, v_view=[8,2,2,5,2,60,2,12], y_shape=[2,5,4], y_view=[2,2,5,2,20,2,4]}
})");
}

std::map<std::string, Tensor> random_inputs(const Model& m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::map<std::string, Tensor> in;
  for (const Value* v : m.graph->inputs) {
    Tensor t(DType::f32, v->shape.static_dims());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    in[v->name] = std::move(t);
  }
  return in;
}

// The reference kernel reads and writes the views: the same floats as the copies and the plain
// attention (bit for bit: the gathered operands are the copies' values, summed in the same order).
TEST(FoldAttentionViews, InterpreterGivesTheSameFloats) {
  for (const char* text : {kSeqFirst, kSplit}) {
    Model before = parse_model(text);
    ops::infer_shapes(before);
    auto inputs = random_inputs(before, 5);
    auto want = run_model(before, inputs);
    auto pass = passes::make_fold_attention_views();
    Model after = run_pass_on_text(*pass, text);
    auto got = run_model(after, inputs);
    const Tensor &w = want.at("y"), &g = got.at("y");
    ASSERT_EQ(dims_str(g.dims()), dims_str(w.dims()));
    for (int64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(g.data<float>()[i], w.data<float>()[i]) << "at " << i;
  }
}

TEST(FoldAttentionViews, LeavesAlone) {
  auto pass = passes::make_fold_attention_views();
  // The Q copy is also a graph output: Q's chain stops there (Q is a view of that copy, past
  // its Unsqueeze); K, V and Y fold all the way.
  std::string shared = kSeqFirst;
  shared.replace(shared.find("-> (%y)"), 7, "-> (%y, %qt)");
  bool changed = false;
  Model m = run_pass_on_text(*pass, shared, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(count_op(m, "", "Transpose"), 1u);  // Q's, for the graph output
  EXPECT_EQ(count_op(m, "", "Slice"), 1u);
  for (const auto& n : m.graph->nodes())
    if (n->op == "Attention") {
      EXPECT_EQ(n->inputs[0]->name, "qt");
      EXPECT_EQ(n->attr_ints("q_view", {}), (std::vector<int64_t>{0, 1, 2, 4, 3, 0, 12, 3}));
      EXPECT_EQ(n->inputs[1]->name, "qkv");
      EXPECT_TRUE(n->has_attr("y_view"));
    }
  // Symbolic shapes: no views.
  std::string symbolic = R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,2,S,3], %k: f32[1,S,2,3], %v: f32[1,2,S,3]) -> (%y) {
  %kt = Transpose(%k) {perm=[0,2,1,3]}
  %y = kiln::Attention(%q, %kt, %v) {scale=0.5}
})";
  expect_unchanged(*pass, symbolic);
  passes::PassContext ctx;
  ctx.explain = true;
  run_pass_on_text(*pass, symbolic, nullptr, &ctx);
  ASSERT_EQ(ctx.remarks.size(), 1u);
  EXPECT_EQ(ctx.remarks[0].message, "shapes are not static (views need static strides)");
  // Plain [B,H,S,D] operands: nothing to fold.
  expect_unchanged(*pass, R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,2,4,3], %k: f32[1,2,4,3], %v: f32[1,2,4,3]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v) {scale=0.5}
})");
}

// A reshape that merges dims the view does not keep contiguous is no view of the tensor before
// it: [4,3,2] transposed to [4,2,3] and reshaped to heads of [2,4,3] must read the Transpose's
// copy (as a plain view of it), not x.
TEST(FoldAttentionViews, ReshapeThatIsNotAViewStopsTheChain) {
  auto pass = passes::make_fold_attention_views();
  expect_rewrite(*pass, R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[4,3,2], %k: f32[1,2,4,3], %v: f32[1,2,4,3]) -> (%y) {
  %xt = Transpose(%x) {perm=[0,2,1]}
  %shape = Constant() {value=i64[4] dense<1, 2, 4, 3>}
  %q = Reshape(%xt, %shape)
  %y = kiln::Attention(%q, %k, %v) {scale=0.5}
})",
                 R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[4,3,2], %k: f32[1,2,4,3], %v: f32[1,2,4,3]) -> (%y) {
  %xt = Transpose(%x) {perm=[0,2,1]}
  %y = kiln::Attention(%xt, %k, %v) {q_view=[0,1,2,4,3,0,12,3], scale=0.5}
})");
}

// Malformed views are a clear error, not a read past the tensor.
TEST(FoldAttentionViews, BadViewsAreRejected) {
  auto err = [](const std::string& attrs) {
    try {
      Model m = parse_model(R"(kiln.model opset=14 opset.kiln=1
graph g(%qkv: f32[4,1,18]) -> (%y) {
  %y = kiln::Attention(%qkv, %qkv, %qkv) {)" + attrs + R"(}
})");
      ops::infer_shapes(m);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string ok_kv = "k_view=[6,1,2,4,3,0,3,18], v_view=[12,1,2,4,3,0,3,18], scale=0.5";
  EXPECT_EQ(err("q_view=[0,1,2,4,3,0,3,18], " + ok_kv), "");
  EXPECT_NE(err("q_view=[16,1,2,4,3,0,3,18], " + ok_kv).find("reaches past"), std::string::npos);
  EXPECT_NE(err("q_view=[0,1,2,4,3], " + ok_kv).find("needs 8 ints"), std::string::npos);
  // Y's view writing a position over another one's: not an exact cover of [4,6].
  EXPECT_NE(err("q_view=[0,1,2,4,3,0,3,18], " + ok_kv + ", y_shape=[4,6], y_view=[1,2,4,3,0,3,3]")
                .find("does not cover"),
            std::string::npos);
}

void check(const std::string& model) {
  if (!zoo_available(model)) GTEST_SKIP() << "build/zoo/" << model << " is missing";
  auto fuse = passes::make_fuse_attention();
  auto fold = passes::make_fold_attention_views();
  ZooResult r = check_zoo_model(model, {fuse.get(), fold.get()});
  size_t views = 0;
  for (const auto& n : r.model.graph->nodes())
    views += n->op == "Attention" && n->has_attr("q_view") && n->has_attr("k_view") && n->has_attr("v_view") &&
             n->has_attr("y_view");
  std::cout << "[fold-attention-views] " << model << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes, "
            << views << " attentions on views\n";
  EXPECT_EQ(views, 12u);
}

TEST(FoldAttentionViewsZoo, BertBase) { check("bert_base"); }
TEST(FoldAttentionViewsZoo, Gpt2) { check("gpt2"); }

}  // namespace
}  // namespace kiln::fusiontest

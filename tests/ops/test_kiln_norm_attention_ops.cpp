// kiln.LayerNorm, kiln.Attention and kiln.FusedElementwise against the ONNX graphs they
// replace (random data and hand-checked cases), their shape inference and costs.
#include <limits>

#include "kiln/ops/kiln_ops.h"
#include "test_kiln_support.h"

namespace kiln::kilntest {
namespace {

// ---- LayerNorm

TEST(KilnLayerNorm, EqualsLayerNormalizationOverTrailingDims) {
  const char* onnx = R"(kiln.model opset=17
graph g(%x: f32[3,4,5], %s: f32[4,5], %b: f32[5]) -> (%y) {
  %y = LayerNormalization(%x, %s, %b) {axis=-2, epsilon=0.001}
})";
  const char* kiln = R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[3,4,5], %s: f32[4,5], %b: f32[5]) -> (%y) {
  %y = kiln::LayerNorm(%x, %s, %b) {axis=-2, epsilon=0.001}
})";
  std::map<std::string, Tensor> feeds = {
      {"x", random_f32({3, 4, 5}, 31, -4, 4)}, {"s", random_f32({4, 5}, 32)}, {"b", random_f32({5}, 33)}};
  expect_close(run_text(kiln, feeds), run_text(onnx, feeds), 1e-6);
}

TEST(KilnLayerNorm, HandChecked) {
  const char* text = R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[1,3]) -> (%y) {
  %s = init f32[3] dense<1.0, 2.0, 1.0>
  %y = kiln::LayerNorm(%x, %s) {epsilon=0.0}
})";
  // mean 2, variance 2/3: (x - 2) / sqrt(2/3) * [1,2,1]
  Tensor y = run_text(text, {{"x", Tensor::from_vector<float>({1, 3}, {1, 2, 3})}});
  std::vector<double> v = values_of(y);
  EXPECT_NEAR(v[0], -1.2247449, 1e-6);
  EXPECT_NEAR(v[1], 0.0, 1e-6);
  EXPECT_NEAR(v[2], 1.2247449, 1e-6);
}

// ---- Attention

// The unfused graph: softmax(scale · Q Kᵀ + mask) V.
const char* kAttentionUnfused = R"(kiln.model opset=14
graph g(%q: f32[2,3,4,8], %k: f32[2,3,6,8], %v: f32[2,3,6,5], %mask: f32[2,1,4,6]) -> (%y) {
  %kt = Transpose(%k) {perm=[0,1,3,2]}
  %s = MatMul(%q, %kt)
  %scale = init f32[] dense<0.35>
  %ss = Mul(%s, %scale)
  %sm = Add(%ss, %mask)
  %p = Softmax(%sm) {axis=-1}
  %y = MatMul(%p, %v)
})";

std::map<std::string, Tensor> attention_feeds(const Tensor& mask) {
  return {{"q", random_f32({2, 3, 4, 8}, 41, -2, 2)},
          {"k", random_f32({2, 3, 6, 8}, 42, -2, 2)},
          {"v", random_f32({2, 3, 6, 5}, 43)},
          {"mask", mask}};
}

TEST(KilnAttention, EqualsMatMulSoftmaxMatMulWithAnAdditiveMask) {
  const char* fused = R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[2,3,4,8], %k: f32[2,3,6,8], %v: f32[2,3,6,5], %mask: f32[2,1,4,6]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v, %mask) {scale=0.35}
})";
  auto feeds = attention_feeds(random_f32({2, 1, 4, 6}, 44, -3, 0));
  Tensor got = run_text(fused, feeds);
  EXPECT_EQ(dims_str(got.dims()), "[2,3,4,5]");
  expect_close(got, run_text(kAttentionUnfused, feeds), 1e-5);
}

TEST(KilnAttention, CausalEqualsAnExplicitCausalMaskAlignedToTheLastQuery) {
  // Sq = 4 queries over Sk = 6 keys (2 cached): query i sees keys j <= i + 2.
  const char* fused = R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[2,3,4,8], %k: f32[2,3,6,8], %v: f32[2,3,6,5]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v) {scale=0.35, causal=1}
})";
  Tensor mask(DType::f32, {2, 1, 4, 6});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j)
        mask.data<float>()[(b * 4 + i) * 6 + j] = j > i + 2 ? -std::numeric_limits<float>::infinity() : 0.f;
  auto feeds = attention_feeds(mask);
  Tensor want = run_text(kAttentionUnfused, feeds);
  feeds.erase("mask");
  expect_close(run_text(fused, feeds), want, 1e-5);
}

TEST(KilnAttention, HandCheckedAndDefaultScale) {
  // One query [1] over keys [0], [1] with values 10, 20 and scale ln 3: weights 1/4, 3/4.
  const char* text = R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,1,1,1], %k: f32[1,1,2,1], %v: f32[1,1,2,1]) -> (%y, %d) {
  %y = kiln::Attention(%q, %k, %v) {scale=1.0986123}
  %d = kiln::Attention(%q, %k, %v)
})";
  Model m = parse_model(text);
  ops::verify_model(m);
  ops::infer_shapes(m);
  auto out = run_model(m, {{"q", Tensor::from_vector<float>({1, 1, 1, 1}, {1})},
                           {"k", Tensor::from_vector<float>({1, 1, 2, 1}, {0, 1})},
                           {"v", Tensor::from_vector<float>({1, 1, 2, 1}, {10, 20})}});
  EXPECT_NEAR(out.at("y").data<float>()[0], 17.5, 1e-5);
  // Default scale 1/sqrt(D) = 1: weights 1/(1+e), e/(1+e).
  double e = std::exp(1.0);
  EXPECT_NEAR(out.at("d").data<float>()[0], (10 + 20 * e) / (1 + e), 1e-5);
}

TEST(KilnAttention, ShapeInferenceAndErrors) {
  Model m = parse_model(R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,12,seq,64], %k: f32[1,12,"past+seq",64], %v: f32[1,12,"past+seq",32]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v) {causal=1}
})");
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[1,12,seq,32]");
  Model bad = parse_model(R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,12,4,64], %k: f32[1,12,4,32], %v: f32[1,12,4,32]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v)
})");
  try {
    ops::infer_shapes(bad);
    FAIL() << "mismatched head sizes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("differ in batch, heads or head size"), std::string::npos) << e.what();
  }
  Model bad_mask = parse_model(R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[1,2,4,8], %k: f32[1,2,4,8], %v: f32[1,2,4,8], %m: f32[3,4]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v, %m)
})");
  EXPECT_THROW(ops::infer_shapes(bad_mask), Error);
}

TEST(KilnAttention, CostIsTheUnfusedChainWithoutTheScoreTraffic) {
  Model unfused = parse_model(kAttentionUnfused);
  Model fused = parse_model(R"(kiln.model opset=14 opset.kiln=1
graph g(%q: f32[2,3,4,8], %k: f32[2,3,6,8], %v: f32[2,3,6,5], %mask: f32[2,1,4,6]) -> (%y) {
  %y = kiln::Attention(%q, %k, %v, %mask) {scale=0.35}
})");
  ops::infer_shapes(unfused);
  ops::infer_shapes(fused);
  ops::Cost f = *ops::node_cost(*fused.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(f.flops, total_flops(unfused));  // the Transpose of K costs no flops
  EXPECT_DOUBLE_EQ(f.bytes_read, 4.0 * (2 * 3 * 4 * 8 + 2 * 3 * 6 * 8 + 2 * 3 * 6 * 5 + 2 * 4 * 6));
  EXPECT_DOUBLE_EQ(f.bytes_written, 4.0 * 2 * 3 * 4 * 5);
}

// ---- FusedElementwise

const char* kElementwiseUnfused = R"(kiln.model opset=14
graph g(%x: f32[2,3,4], %b: f32[4]) -> (%y, %e) {
  %s = Sigmoid(%x)
  %m = Mul(%x, %s)
  %y = Add(%m, %b)
  %half = init f32[] dense<0.5>
  %h = Mul(%x, %half)
  %e = Erf(%h)
})";

const char* kElementwiseFused = R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[2,3,4], %b: f32[4]) -> (%y, %e) {
  %y, %e = kiln::FusedElementwise(%x, %b) {
    body=graph fused(%bx: f32[2,3,4], %bb: f32[4]) -> (%by, %be) {
      %half = init f32[] dense<0.5>
      %s = Sigmoid(%bx)
      %m = Mul(%bx, %s)
      %by = Add(%m, %bb)
      %h = Mul(%bx, %half)
      %be = Erf(%h)
    }
  }
})";

TEST(KilnFusedElementwise, RunsItsBodyLikeTheUnfusedOps) {
  std::map<std::string, Tensor> feeds = {{"x", random_f32({2, 3, 4}, 51, -3, 3)}, {"b", random_f32({4}, 52)}};
  Model u = parse_model(kElementwiseUnfused), f = parse_model(kElementwiseFused);
  for (Model* m : {&u, &f}) {
    ops::verify_model(*m);
    ops::infer_shapes(*m);
  }
  auto want = run_model(u, feeds), got = run_model(f, feeds);
  expect_close(got.at("y"), want.at("y"), 0);
  expect_close(got.at("e"), want.at("e"), 0);
  EXPECT_EQ(f.graph->outputs[1]->shape.str(), "[2,3,4]");
}

TEST(KilnFusedElementwise, BodyTypesFollowTheNodeInputs) {
  // The body was written for [2,3,4]; the node's inputs are [N,3,4]: inference re-derives it.
  std::string text = kElementwiseFused;
  text.replace(text.find("%x: f32[2,3,4]"), 14, "%x: f32[N,3,4]");
  Model m = parse_model(text);
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[N,3,4]");
}

TEST(KilnFusedElementwise, CostIsTheSumOfTheBodyWithOnlyOuterTraffic) {
  Model u = parse_model(kElementwiseUnfused), f = parse_model(kElementwiseFused);
  ops::infer_shapes(u);
  ops::infer_shapes(f);
  ops::Cost c = *ops::node_cost(*f.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(c.flops, total_flops(u));
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (24 + 4));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 48);
}

TEST(KilnFusedElementwise, OutputsMustShareOneShape) {
  Model m = parse_model(R"(kiln.model opset=14 opset.kiln=1
graph g(%x: f32[2,3], %b: f32[3]) -> (%y, %c) {
  %y, %c = kiln::FusedElementwise(%x, %b) {
    body=graph fused(%bx: f32[2,3], %bb: f32[3]) -> (%by, %bc) {
      %by = Add(%bx, %bb)
      %bc = Neg(%bb)
    }
  }
})");
  ops::verify_model(m);
  try {
    ops::infer_shapes(m);
    FAIL() << "outputs of two shapes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("body outputs differ in shape: [2,3] and [3]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::kilntest

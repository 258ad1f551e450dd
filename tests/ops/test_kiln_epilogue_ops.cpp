// kiln.FusedConv and kiln.FusedMatMul against the unfused ONNX ops they replace (random data
// and hand-checked cases), the activation table against the ONNX activation ops, the
// verifier's kiln-domain check, the refusal of pre-packed weights, and costs.
#include "kiln/ops/kiln_ops.h"
#include "test_kiln_support.h"

namespace kiln::kilntest {
namespace {

using ops::Activation;

TEST(KilnActivation, NamesRoundTripAndUnknownNamesFail) {
  for (auto a : {Activation::None, Activation::Relu, Activation::LeakyRelu, Activation::Clip, Activation::Sigmoid,
                 Activation::Tanh, Activation::Silu, Activation::HardSigmoid, Activation::HardSwish, Activation::Gelu,
                 Activation::GeluTanh})
    EXPECT_EQ(ops::parse_activation(ops::activation_name(a)), a);
  EXPECT_EQ(ops::activation_name(Activation::None), "");
  try {
    ops::parse_activation("Swish");
    FAIL() << "unknown activation accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown activation 'Swish' (known: Relu, LeakyRelu"), std::string::npos)
        << e.what();
  }
}

// apply_activation on a sweep of values equals the ONNX op (or op chain) it stands for.
TEST(KilnActivation, MatchesTheOnnxOps) {
  std::vector<float> xs;
  for (float x = -9.f; x <= 9.f; x += 0.37f) xs.push_back(x);
  Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(xs.size())}, xs);
  std::string head = "kiln.model opset=17 opset.kiln=1\ngraph g(%x: f32[" + std::to_string(xs.size()) + "]) -> (%y) {\n";
  struct Case {
    Activation act;
    float alpha, beta;
    std::string body;
  };
  std::vector<Case> cases = {
      {Activation::Relu, 0, 0, "%y = Relu(%x)"},
      {Activation::LeakyRelu, 0.2f, 0, "%y = LeakyRelu(%x) {alpha=0.2}"},
      {Activation::Clip, 0.f, 6.f,
       "%lo = init f32[] dense<0.0>\n%hi = init f32[] dense<6.0>\n%y = Clip(%x, %lo, %hi)"},
      {Activation::Sigmoid, 0, 0, "%y = Sigmoid(%x)"},
      {Activation::Tanh, 0, 0, "%y = Tanh(%x)"},
      {Activation::Silu, 0, 0, "%s = Sigmoid(%x)\n%y = Mul(%x, %s)"},
      {Activation::HardSigmoid, 0.3f, 0.4f, "%y = HardSigmoid(%x) {alpha=0.3, beta=0.4}"},
      {Activation::HardSwish, 0, 0, "%y = HardSwish(%x)"},
      {Activation::Gelu, 0, 0, "%y = Gelu(%x)"},
      {Activation::GeluTanh, 0, 0, "%y = Gelu(%x) {approximate=\"tanh\"}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(ops::activation_name(c.act)));
    Tensor want = run_text(head + c.body + "\n}", {{"x", x}});
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(ops::apply_activation(c.act, xs[i], c.alpha, c.beta), want.data<float>()[i],
                  2e-6 * (1 + std::abs(want.data<float>()[i])))
          << "x = " << xs[i];
  }
  EXPECT_EQ(ops::apply_activation(Activation::None, -3.5f, 0, 0), -3.5f);
}

// ---- FusedConv

const char* kConvUnfused = R"(kiln.model opset=13
graph g(%x: f32[2,6,9,8], %w: f32[8,3,3,3], %b: f32[8], %z: f32[2,8,5,3]) -> (%y) {
  %c = Conv(%x, %w, %b) {group=2, pads=[1,1,1,0], strides=[2,2], dilations=[1,2]}
  %r = Add(%c, %z)
  %y = Sigmoid(%r)
})";

const char* kConvFused = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,6,9,8], %w: f32[8,3,3,3], %b: f32[8], %z: f32[2,8,5,3]) -> (%y) {
  %y = kiln::FusedConv(%x, %w, %b, %z) {group=2, pads=[1,1,1,0], strides=[2,2], dilations=[1,2], activation="Sigmoid"}
})";

TEST(KilnFusedConv, EqualsConvAddActivationOnRandomData) {
  std::map<std::string, Tensor> feeds = {{"x", random_f32({2, 6, 9, 8}, 1)},
                                         {"w", random_f32({8, 3, 3, 3}, 2)},
                                         {"b", random_f32({8}, 3)},
                                         {"z", random_f32({2, 8, 5, 3}, 4)}};
  Tensor want = run_text(kConvUnfused, feeds);
  Tensor got = run_text(kConvFused, feeds);
  expect_close(got, want, 1e-6);
}

TEST(KilnFusedConv, HandCheckedPointwiseWithResidualAndRelu) {
  // y = relu(2x + 1 + z) for a 1x1 single-channel conv.
  const char* text = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,1,1,3], %z: f32[1,1,1,3]) -> (%y) {
  %w = init f32[1,1,1,1] dense<2.0>
  %b = init f32[1] dense<1.0>
  %y = kiln::FusedConv(%x, %w, %b, %z) {activation="Relu"}
})";
  Tensor y = run_text(text, {{"x", Tensor::from_vector<float>({1, 1, 1, 3}, {-1, 2, 3})},
                             {"z", Tensor::from_vector<float>({1, 1, 1, 3}, {0.5f, 0.5f, -10})}});
  EXPECT_EQ(values_of(y), (std::vector<double>{0, 5.5, 0}));
}

TEST(KilnFusedConv, ClipBoundsComeFromActAlphaAndActBeta) {
  const char* text = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,1,1,4]) -> (%y) {
  %w = init f32[1,1,1,1] dense<1.0>
  %y = kiln::FusedConv(%x, %w) {activation="Clip", act_alpha=0.0, act_beta=6.0}
})";
  Tensor y = run_text(text, {{"x", Tensor::from_vector<float>({1, 1, 1, 4}, {-2, 3, 6.5f, 100})}});
  EXPECT_EQ(values_of(y), (std::vector<double>{0, 3, 6, 6}));
}

TEST(KilnFusedConv, ShapeInferenceChecksTheResidual) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[N,2,5,5], %w: f32[4,2,3,3], %z: f32[N,4,2,2]) -> (%y) {
  %y = kiln::FusedConv(%x, %w, _, %z)
})");
  ops::verify_model(m);
  try {
    ops::infer_shapes(m);
    FAIL() << "a residual of the wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("residual Z [N,4,2,2] does not broadcast to the output [N,4,3,3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(KilnFusedConv, RefusesAPrePackedWeight) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,1,2,2]) -> (%y) {
  %w = init f32[1,1,1,1] dense<1.0>
  %y = kiln::FusedConv(%x, %w) {packed=1, w_shape=[1,1,1,1]} @conv
})");
  ops::verify_model(m);
  ops::infer_shapes(m);
  try {
    run_model(m, {{"x", random_f32({1, 1, 2, 2}, 5)}});
    FAIL() << "a packed node ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FusedConv node 'conv': has a pre-packed weight"), std::string::npos)
        << e.what();
  }
}

TEST(KilnFusedConv, CostIsConvPlusEpilogueWithoutIntermediateTraffic) {
  Model unfused = parse_model(kConvUnfused);
  Model fused = parse_model(kConvFused);
  ops::infer_shapes(unfused);
  ops::infer_shapes(fused);
  ops::Cost f = *ops::node_cost(*fused.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(f.flops, total_flops(unfused));
  // Reads x, w, b, z once and writes y: no conv output or sum in between.
  double bytes_in = 4.0 * (2 * 6 * 9 * 8 + 8 * 3 * 3 * 3 + 8 + 2 * 8 * 5 * 3);
  EXPECT_DOUBLE_EQ(f.bytes_read, bytes_in);
  EXPECT_DOUBLE_EQ(f.bytes_written, 4.0 * 2 * 8 * 5 * 3);
}

// The optional second output M is GlobalAveragePool(Y) ([N, K, 1, 1]): inferred, computed by the
// reference kernel as the pool would, and counted in the cost (one add an element, M written).
TEST(KilnFusedConv, SecondOutputIsTheGlobalAverageOfTheFirst) {
  const char* with_mean = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,6,9,8], %w: f32[8,3,3,3], %b: f32[8], %z: f32[2,8,5,3]) -> (%y, %m) {
  %y, %m = kiln::FusedConv(%x, %w, %b, %z) {group=2, pads=[1,1,1,0], strides=[2,2], dilations=[1,2], activation="Sigmoid"}
})";
  const char* pooled = R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[2,6,9,8], %w: f32[8,3,3,3], %b: f32[8], %z: f32[2,8,5,3]) -> (%m) {
  %y = kiln::FusedConv(%x, %w, %b, %z) {group=2, pads=[1,1,1,0], strides=[2,2], dilations=[1,2], activation="Sigmoid"}
  %m = GlobalAveragePool(%y)
})";
  std::map<std::string, Tensor> feeds = {{"x", random_f32({2, 6, 9, 8}, 1)},
                                         {"w", random_f32({8, 3, 3, 3}, 2)},
                                         {"b", random_f32({8}, 3)},
                                         {"z", random_f32({2, 8, 5, 3}, 4)}};
  Model m = parse_model(with_mean);
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("m")->shape.str(), "[2,8,1,1]");
  const auto out = run_model(m, feeds);
  expect_close(out.at("y"), run_text(kConvFused, feeds), 0);
  expect_close(out.at("m"), run_text(pooled, feeds), 0);
  Model plain = parse_model(kConvFused);
  ops::infer_shapes(plain);
  const ops::Cost one = *ops::node_cost(*plain.graph->nodes().at(0));
  const ops::Cost two = *ops::node_cost(*m.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(two.flops, one.flops + 2 * 8 * 5 * 3);
  EXPECT_DOUBLE_EQ(two.bytes_written, one.bytes_written + 4.0 * 2 * 8);
}

// ---- FusedMatMul

TEST(KilnFusedMatMul, EqualsGemmWithTransBAlphaBiasResidualAndGelu) {
  const char* unfused = R"(kiln.model opset=13
graph g(%a: f32[5,7], %b: f32[3,7], %c: f32[3], %z: f32[5,3]) -> (%y) {
  %m = Gemm(%a, %b, %c) {transB=1, alpha=0.5}
  %r = Add(%z, %m)
  %y = Gelu(%r)
})";
  const char* fused = R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[5,7], %b: f32[3,7], %c: f32[3], %z: f32[5,3]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b, %c, %z) {trans_b=1, alpha=0.5, activation="Gelu"}
})";
  std::map<std::string, Tensor> feeds = {{"a", random_f32({5, 7}, 11)},
                                         {"b", random_f32({3, 7}, 12)},
                                         {"c", random_f32({3}, 13)},
                                         {"z", random_f32({5, 3}, 14)}};
  expect_close(run_text(fused, feeds), run_text(unfused, feeds), 1e-6);
}

TEST(KilnFusedMatMul, BatchedBroadcastingWithTransposedBatchedB) {
  // A [2,1,4,6] @ op(B) with B [3,5,6] transposed per batch -> [2,3,4,5].
  const char* unfused = R"(kiln.model opset=13
graph g(%a: f32[2,1,4,6], %b: f32[3,5,6], %bias: f32[5]) -> (%y) {
  %bt = Transpose(%b) {perm=[0,2,1]}
  %m = MatMul(%a, %bt)
  %s = Add(%m, %bias)
  %y = LeakyRelu(%s) {alpha=0.1}
})";
  const char* fused = R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[2,1,4,6], %b: f32[3,5,6], %bias: f32[5]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b, %bias) {trans_b=1, activation="LeakyRelu", act_alpha=0.1}
})";
  std::map<std::string, Tensor> feeds = {
      {"a", random_f32({2, 1, 4, 6}, 21)}, {"b", random_f32({3, 5, 6}, 22)}, {"bias", random_f32({5}, 23)}};
  Tensor got = run_text(fused, feeds);
  EXPECT_EQ(dims_str(got.dims()), "[2,3,4,5]");
  expect_close(got, run_text(unfused, feeds), 1e-6);
}

TEST(KilnFusedMatMul, HandChecked) {
  // [1,2] @ [[1,2],[3,4]] = [7,10]; * 2 = [14,20]; + bias [1,-30] = [15,-10]; relu -> [15,0].
  const char* text = R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[1,2]) -> (%y) {
  %b = init f32[2,2] dense<1.0, 2.0, 3.0, 4.0>
  %bias = init f32[2] dense<1.0, -30.0>
  %y = kiln::FusedMatMul(%a, %b, %bias) {alpha=2.0, activation="Relu"}
})";
  Tensor y = run_text(text, {{"a", Tensor::from_vector<float>({1, 2}, {1, 2})}});
  EXPECT_EQ(values_of(y), (std::vector<double>{15, 0}));
}

TEST(KilnFusedMatMul, InferenceSwapsTransposedBAndRejectsAGrowingBias) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[S,8], %b: f32[16,8]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b) {trans_b=1}
})");
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[S,16]");
  Model bad = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[4,8], %b: f32[8,16], %bias: f32[2,4,16]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b, %bias)
})");
  EXPECT_THROW(ops::infer_shapes(bad), Error);
}

TEST(KilnFusedMatMul, RefusesAPrePackedWeightAndUnknownActivations) {
  Model packed = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[1,2]) -> (%y) {
  %b = init f32[2,2] dense<1.0>
  %y = kiln::FusedMatMul(%a, %b) {packed=1, w_shape=[2,2]} @mm
})");
  ops::infer_shapes(packed);
  try {
    run_model(packed, {{"a", random_f32({1, 2}, 6)}});
    FAIL() << "a packed node ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FusedMatMul node 'mm': has a pre-packed weight"), std::string::npos)
        << e.what();
  }
  Model unknown = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[1,2], %b: f32[2,2]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b) {activation="Swish"}
})");
  EXPECT_THROW(ops::infer_shapes(unknown), Error);
}

TEST(KilnFusedMatMul, CostIsMatMulBiasAndActivation) {
  Model unfused = parse_model(R"(kiln.model opset=13
graph g(%a: f32[4,8], %b: f32[8,16], %bias: f32[16]) -> (%y) {
  %m = MatMul(%a, %b)
  %s = Add(%bias, %m)
  %y = Relu(%s)
})");
  Model fused = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[4,8], %b: f32[8,16], %bias: f32[16]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b, %bias) {activation="Relu"}
})");
  ops::infer_shapes(unfused);
  ops::infer_shapes(fused);
  ops::Cost f = *ops::node_cost(*fused.graph->nodes().at(0));
  EXPECT_DOUBLE_EQ(f.flops, total_flops(unfused));
  EXPECT_DOUBLE_EQ(f.flops, 2.0 * 4 * 16 * 8 + 4 * 16 + 4 * 16);
  EXPECT_DOUBLE_EQ(f.bytes_read, 4.0 * (4 * 8 + 8 * 16 + 16));
  EXPECT_DOUBLE_EQ(f.bytes_written, 4.0 * 4 * 16);
}

// ---- the kiln domain in the verifier

TEST(KilnDomain, VerifierNeedsTheKilnOpsetImport) {
  Model m = parse_model(R"(kiln.model opset=13
graph g(%a: f32[1,2], %b: f32[2,2]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b) @mm
})");
  try {
    ops::verify_model(m);
    FAIL() << "a kiln op without the kiln opset was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "FusedMatMul node 'mm' (kiln opset 0): the model must import domain kiln version 1 (the pass that "
                 "introduces a kiln op sets Model::opsets[\"kiln\"])");
  }
  m.opsets["kiln"] = 1;
  EXPECT_NO_THROW(ops::verify_model(m));
  EXPECT_NE(ops::find_op("kiln", "FusedConv"), nullptr);
  EXPECT_EQ(ops::find_op("", "FusedConv"), nullptr);
}

TEST(KilnDomain, PrintsAsKilnColonColon) {
  const char* text = R"(kiln.model opset=13 opset.kiln=1
graph g(%a: f32[1,2], %b: f32[2,2]) -> (%y) {
  %y = kiln::FusedMatMul(%a, %b) {activation="Relu"}
})";
  Model m = parse_model(text);
  PrintOptions po;
  po.show_shapes = false;
  EXPECT_NE(print_model(m, po).find("%y = kiln::FusedMatMul(%a, %b) {activation=\"Relu\"}"), std::string::npos)
      << print_model(m, po);
}

}  // namespace
}  // namespace kiln::kilntest

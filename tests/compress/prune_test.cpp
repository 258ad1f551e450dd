// Structured pruning: channel groups through residual Adds (skipped, or pruned together with
// residuals), Concat offsets, depthwise convolutions, per-channel constants and Flatten; the
// pruned model equals the original with the removed channels zeroed; the least-squares
// reconstruction recovers the layers (and the model output) better than plain pruning.
#include <gtest/gtest.h>

#include <random>

#include "kiln/compress/least_squares.h"
#include "kiln/compress/model_copy.h"
#include "kiln/compress/prune.h"
#include "kiln/compress/report.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace {

void randomize(Model& m, uint64_t seed, float sd = 0.3f) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::normal_distribution<float> nd(0.f, sd);
  for (Value* v : m.graph->initializers)
    if (v->initializer->dtype() == DType::f32 && v->initializer->numel() > 1) {
      Tensor t(DType::f32, v->initializer->dims());
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
      v->initializer = t;
    }
}

Tensor random_input(std::vector<int64_t> dims, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::normal_distribution<float> nd(0.f, 1.f);
  Tensor t(DType::f32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
  return t;
}

double cosine(const Tensor& a, const Tensor& b) {
  AgreementSum s;
  s.add(a.data<float>(), b.data<float>(), a.numel());
  return s.result().cosine;
}

// A residual block: a -> relu -> b, added to relu(a); then c (1x1), global pooling, a Gemm.
const char* kResidual = R"(kiln.model opset=13
graph g(%x: f32[N,3,6,6]) -> (%y) {
  %wa = init f32[8,3,3,3] dense<0>
  %ba = init f32[8] dense<0>
  %wb = init f32[8,8,3,3] dense<0>
  %bb = init f32[8] dense<0>
  %wc = init f32[6,8,1,1] dense<0>
  %bc = init f32[6] dense<0>
  %wf = init f32[3,6] dense<0>
  %bf = init f32[3] dense<0>
  %a = Conv(%x, %wa, %ba) {pads=[1,1,1,1]} @conv_a
  %ra = Relu(%a)
  %b = Conv(%ra, %wb, %bb) {pads=[1,1,1,1]} @conv_b
  %s = Add(%ra, %b)
  %rs = Relu(%s)
  %c = Conv(%rs, %wc, %bc) @conv_c
  %rc = Relu(%c)
  %p = GlobalAveragePool(%rc)
  %f = Flatten(%p)
  %y = Gemm(%f, %wf, %bf) {transB=1} @fc
})";

Model residual_model() {
  Model m = parse_model(kResidual);
  randomize(m, 5);
  ops::infer_shapes(m);
  return m;
}

const ChannelGroup& group_of(const PrunePlan& p, const std::string& producer) {
  for (const auto& g : p.groups)
    if (std::find(g.producers.begin(), g.producers.end(), producer) != g.producers.end()) return g;
  throw Error("no group for " + producer);
}

TEST(PrunePlan, ResidualGroupsAreSkippedOrPrunedTogether) {
  Model m = residual_model();
  PruneOptions opt;
  opt.ratio = 0.5;
  PrunePlan p = plan_pruning(m, opt);
  ASSERT_EQ(p.groups.size(), 3u);  // {conv_a, conv_b} joined by the Add, conv_c, fc
  const ChannelGroup& ab = group_of(p, "conv_a");
  EXPECT_EQ(ab.producers, (std::vector<std::string>{"conv_a", "conv_b"}));
  EXPECT_FALSE(ab.pruned());
  EXPECT_NE(ab.skipped.find("--residuals"), std::string::npos) << ab.skipped;
  const ChannelGroup& c = group_of(p, "conv_c");
  EXPECT_TRUE(c.pruned());
  EXPECT_EQ(c.kept.size(), 3u);
  EXPECT_EQ(c.readers, (std::vector<std::string>{"fc"}));
  EXPECT_NE(group_of(p, "fc").skipped.find("graph output"), std::string::npos);

  opt.residuals = true;
  PrunePlan pr = plan_pruning(m, opt);
  const ChannelGroup& ab2 = group_of(pr, "conv_a");
  ASSERT_TRUE(ab2.pruned());
  EXPECT_EQ(ab2.kept.size(), 4u);
  // conv_b reads conv_a's channels and writes the same group; conv_c reads them too.
  EXPECT_EQ(ab2.readers, (std::vector<std::string>{"conv_b", "conv_c"}));
  Model pruned = copy_model(m);
  apply_pruning(pruned, pr);  // verifies the graph
  const Graph& g = *pruned.graph;
  EXPECT_EQ(g.find("a")->shape.str(), "[N,4,6,6]");
  EXPECT_EQ(g.find("b")->shape.str(), "[N,4,6,6]");
  EXPECT_EQ(g.find("s")->shape.str(), "[N,4,6,6]");
  EXPECT_EQ(g.find("c")->shape.str(), "[N,3,6,6]");
  EXPECT_EQ(g.outputs[0]->shape.str(), m.graph->outputs[0]->shape.str());
  Tensor x = random_input({2, 3, 6, 6}, 1);
  Tensor y0 = run_model(m, {{"x", x}}).at("y"), y1 = run_model(pruned, {{"x", x}}).at("y");
  EXPECT_EQ(y1.dims(), y0.dims());

  opt.exclude = {"conv_c"};
  EXPECT_NE(group_of(plan_pruning(m, opt), "conv_c").skipped.find("excluded"), std::string::npos);
  opt.exclude = {"nope"};
  EXPECT_THROW(plan_pruning(m, opt), Error);
  opt.exclude = {};
  opt.ratio = 1.0;
  EXPECT_THROW(plan_pruning(m, opt), Error);
}

// Two convolutions concatenated, a depthwise convolution, a per-channel scale and shift, a 1x1
// convolution and a Flatten (16 elements per channel) into a Gemm.
const char* kConcat = R"(kiln.model opset=13
graph g(%x: f32[N,2,4,4]) -> (%y) {
  %w1 = init f32[6,2,3,3] dense<0>
  %b1 = init f32[6] dense<0>
  %w2 = init f32[4,2,1,1] dense<0>
  %b2 = init f32[4] dense<0>
  %wd = init f32[10,1,3,3] dense<0>
  %bd = init f32[10] dense<0>
  %sc = init f32[1,10,1,1] dense<0>
  %sh = init f32[10,1,1] dense<0>
  %w3 = init f32[5,10,1,1] dense<0>
  %b3 = init f32[5] dense<0>
  %wf = init f32[80,7] dense<0>
  %c1 = Conv(%x, %w1, %b1) {pads=[1,1,1,1]} @c1
  %r1 = Relu(%c1)
  %c2 = Conv(%x, %w2, %b2) @c2
  %r2 = Relu(%c2)
  %cat = Concat(%r1, %r2) {axis=1}
  %d = Conv(%cat, %wd, %bd) {pads=[1,1,1,1], group=10} @dw
  %m = Mul(%d, %sc)
  %a = Add(%m, %sh)
  %ra = Relu(%a)
  %c3 = Conv(%ra, %w3, %b3) @c3
  %r3 = Relu(%c3)
  %f = Flatten(%r3)
  %y = MatMul(%f, %wf)
})";

TEST(PrunePlan, PrunedModelEqualsTheOriginalWithTheRemovedChannelsZeroed) {
  Model m = parse_model(kConcat);
  randomize(m, 9);
  ops::infer_shapes(m);
  PruneOptions opt;
  opt.ratio = 0.4;
  PrunePlan p = plan_pruning(m, opt);
  EXPECT_TRUE(group_of(p, "c1").pruned());
  EXPECT_TRUE(group_of(p, "c2").pruned());
  EXPECT_TRUE(group_of(p, "c3").pruned());
  Model pruned = copy_model(m);
  apply_pruning(pruned, p);
  EXPECT_EQ(pruned.graph->find("cat")->shape.str(), "[N,6,4,4]");  // 4 of 6 + 2 of 4 ... kept
  EXPECT_EQ(pruned.graph->find("f")->shape.str(), "[N,48]");       // 3 of 5 channels x 16
  // The reference: the original with every removed channel's producer weights, bias and
  // per-channel parameters zeroed (so the removed channels are 0 where the readers see them).
  Model zeroed = copy_model(m);
  std::map<std::string, Node*> by_name;
  for (const auto& n : zeroed.graph->nodes()) by_name[n->name] = n.get();
  for (const auto& e : p.edits) {
    if (e.kind == ChannelEdit::Reader) continue;
    Node* n = by_name.at(e.node);
    Tensor t = n->inputs[e.input]->initializer->clone();
    std::vector<int64_t> keep = surviving_indices(e.runs, p);
    int64_t inner = 1, len = t.dim(e.axis);
    for (size_t d = e.axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
    for (int64_t i = 0; i < t.numel(); ++i)
      if (std::find(keep.begin(), keep.end(), (i / inner) % len) == keep.end()) t.data<float>()[i] = 0;
    n->inputs[e.input] = zeroed.graph->add_initializer(zeroed.graph->unique_name("z"), t);
  }
  Tensor x = random_input({3, 2, 4, 4}, 2);
  Tensor yz = run_model(zeroed, {{"x", x}}).at("y"), yp = run_model(pruned, {{"x", x}}).at("y");
  ASSERT_EQ(yz.dims(), yp.dims());
  for (int64_t i = 0; i < yz.numel(); ++i) EXPECT_NEAR(yp.data<float>()[i], yz.data<float>()[i], 1e-4) << i;
}

TEST(PrunePlan, ChannelsMixedOtherwiseBlockTheirGroup) {
  Model m = parse_model(R"(kiln.model opset=13
graph g(%x: f32[1,2,4,4]) -> (%y) {
  %w = init f32[4,2,1,1] dense<0.5>
  %c = Conv(%x, %w) @c
  %y = Softmax(%c) {axis=1}
})");
  ops::infer_shapes(m);
  PrunePlan p = plan_pruning(m, PruneOptions{});
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_NE(p.groups[0].skipped.find("Softmax"), std::string::npos) << p.groups[0].skipped;
}

TEST(LeastSquares, RecoversALinearMapAcrossChunks) {
  const int64_t rows = 1500, d = 7, t = 3;  // more rows than one chunk
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> w(t * d), b = {0.5f, -1.f, 2.f}, x(rows * d), y(rows * t);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng) + 3.f;  // a large mean: the bias column matters
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < t; ++o) {
      double s = b[o];
      for (int64_t i = 0; i < d; ++i) s += w[o * d + i] * x[r * d + i];
      y[r * t + o] = static_cast<float>(s);
    }
  NormalEquations ne(d, t, true);
  ne.add(x.data(), y.data(), 700);
  ne.add(x.data() + 700 * d, y.data() + 700 * t, rows - 700);
  EXPECT_EQ(ne.rows(), rows);
  std::vector<double> sol = ne.solve(1e-9);
  for (int64_t o = 0; o < t; ++o) {
    for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(sol[o * (d + 1) + i], w[o * d + i], 1e-3);
    EXPECT_NEAR(sol[o * (d + 1) + d], b[o], 1e-2);
  }
  // XᵀX is summed in float (sgemm), in the ISA's order: under 1e-8 of the total with AVX-512's,
  // 2.7e-8 with AVX2's; an exact fit in double would be ~1e-15.
  EXPECT_LT(ne.squared_error(sol) / ne.squared_total(), 1e-7);
  std::vector<double> zero(sol.size(), 0.0);
  EXPECT_NEAR(ne.squared_error(zero), ne.squared_total(), 1e-6 * ne.squared_total());
  // A strong ridge shrinks the weights.
  std::vector<double> shrunk = ne.solve(100.0);
  EXPECT_LT(std::abs(shrunk[0]), std::abs(sol[0]));
}

TEST(LeastSquares, SingularSystemsStillSolve) {
  // Two identical feature columns and no ridge: the factorisation fails, lambda grows, the fit holds.
  const int64_t rows = 64;
  std::vector<float> x(rows * 2), y(rows);
  for (int64_t r = 0; r < rows; ++r) x[r * 2] = x[r * 2 + 1] = static_cast<float>(r % 7), y[r] = 2.f * (r % 7);
  NormalEquations ne(2, 1, false);
  ne.add(x.data(), y.data(), rows);
  std::vector<double> sol = ne.solve(0.0);
  EXPECT_NEAR(sol[0] + sol[1], 2.0, 1e-3);
  EXPECT_LT(ne.squared_error(sol) / ne.squared_total(), 1e-6);
}

TEST(Reconstruct, LeastSquaresBeatsPlainPruningOnEveryLayerAndTheOutput) {
  Model m = residual_model();
  PruneOptions opt;
  opt.ratio = 0.4;
  opt.residuals = true;
  PrunePlan p = plan_pruning(m, opt);
  Model plain = copy_model(m);
  apply_pruning(plain, p);
  Model fitted = copy_model(plain);
  BatchSource calib = BatchSource::random(m, 6, 17, {{"N", 8}});
  std::vector<LayerFit> fits = reconstruct_pruned(m, fitted, p, calib, ReconstructOptions{});
  ASSERT_EQ(fits.size(), 3u);  // conv_b, conv_c, fc
  for (const auto& f : fits) {
    EXPECT_LT(f.error_fit, f.error_plain) << f.node;
    EXPECT_GT(f.rows, 0);
  }
  EXPECT_EQ(fits[0].unknowns, 5 * 9 + 1);  // conv_b: 5 kept input channels x 3x3, plus the bias
  // Held-out inputs (another seed): the refitted model is closer to the original.
  double c_plain = 0, c_fit = 0;
  for (int k = 0; k < 4; ++k) {
    Tensor x = random_input({8, 3, 6, 6}, 100 + k);
    Tensor y0 = run_model(m, {{"x", x}}).at("y");
    c_plain += cosine(y0, run_model(plain, {{"x", x}}).at("y"));
    c_fit += cosine(y0, run_model(fitted, {{"x", x}}).at("y"));
  }
  EXPECT_GT(c_fit, c_plain);
  EXPECT_GT(c_fit / 4, 0.9);
  // Shapes and graph are still consistent after the refit.
  ops::verify_model(fitted);
  EXPECT_EQ(fitted.graph->find("b")->shape.str(), plain.graph->find("b")->shape.str());
}

}  // namespace
}  // namespace kiln::compress

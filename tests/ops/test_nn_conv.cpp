// Conv and ConvTranspose against naive loops over many shapes, plus hand-checked cases,
// shape inference with symbolic dims, and error cases.
#include "test_nn_support.h"

namespace kiln::nntest {
namespace {

struct ConvCfg {
  std::vector<int64_t> x, w;  // X and W dims
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty = defaults
  bool bias = true;
};

// Multi-index helpers for the naive loops.
std::vector<int64_t> unflatten(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> r(dims.size());
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) r[d] = i % dims[d], i /= dims[d];
  return r;
}
int64_t flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t r = 0;
  for (size_t d = 0; d < dims.size(); ++d) r = r * dims[d] + idx[d];
  return r;
}

Tensor naive_conv(const Tensor& X, const Tensor& W, const Tensor* B, const ConvCfg& c) {
  size_t r = c.x.size() - 2;
  std::vector<int64_t> s = c.strides.empty() ? std::vector<int64_t>(r, 1) : c.strides;
  std::vector<int64_t> d = c.dilations.empty() ? std::vector<int64_t>(r, 1) : c.dilations;
  std::vector<int64_t> p = c.pads.empty() ? std::vector<int64_t>(2 * r, 0) : c.pads;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end()), out(r);
  for (size_t i = 0; i < r; ++i) out[i] = (in[i] + p[i] + p[i + r] - (k[i] - 1) * d[i] - 1) / s[i] + 1;
  int64_t N = c.x[0], C = c.x[1], M = c.w[0], Cg = C / c.group, Mg = M / c.group;
  std::vector<int64_t> ydims = {N, M};
  ydims.insert(ydims.end(), out.begin(), out.end());
  Tensor Y(DType::f32, ydims);
  int64_t OS = numel_of(out), KS = numel_of(k);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < OS; ++o) {
        std::vector<int64_t> oi = unflatten(o, out);
        double acc = B ? B->data<float>()[m] : 0.0;
        for (int64_t cc = 0; cc < Cg; ++cc)
          for (int64_t kk = 0; kk < KS; ++kk) {
            std::vector<int64_t> ki = unflatten(kk, k), ii(r);
            bool inside = true;
            for (size_t t = 0; t < r; ++t) {
              ii[t] = oi[t] * s[t] - p[t] + ki[t] * d[t];
              inside = inside && ii[t] >= 0 && ii[t] < in[t];
            }
            if (!inside) continue;
            int64_t ch = (m / Mg) * Cg + cc;
            acc += static_cast<double>(X.data<float>()[(n * C + ch) * numel_of(in) + flatten(ii, in)]) *
                   W.data<float>()[(m * Cg + cc) * KS + kk];
          }
        Y.data<float>()[(n * M + m) * OS + o] = static_cast<float>(acc);
      }
  return Y;
}

void check_conv(const ConvCfg& c, unsigned seed) {
  Tensor X = random_f32(c.x, seed), W = random_f32(c.w, seed + 1), B = random_f32({c.w[0]}, seed + 2);
  std::map<std::string, Attribute> attrs = {{"group", c.group}};
  if (!c.strides.empty()) attrs["strides"] = c.strides;
  if (!c.dilations.empty()) attrs["dilations"] = c.dilations;
  if (!c.pads.empty()) attrs["pads"] = c.pads;
  std::vector<Arg> args = {in("x", X), init("w", W)};
  if (c.bias) args.push_back(init("b", B));
  Tensor want = naive_conv(X, W, c.bias ? &B : nullptr, c);
  for (int threads : {1, 2}) {
    OneNode g("Conv", args, {"y"}, attrs);
    auto y = g.run(threads);
    expect_close(y[0], want, 1e-4, str_cat("conv case seed ", seed));
    EXPECT_EQ(g.out(0).shape, Shape::of(want.dims()));
  }
}

TEST(NnConv, MatchesNaiveLoopsOverShapes) {
  std::vector<ConvCfg> cases = {
      {{1, 1, 5, 5}, {1, 1, 3, 3}},
      {{2, 3, 7, 6}, {4, 3, 3, 2}, 1, {2, 1}, {1, 1}, {1, 0, 2, 1}},
      {{1, 4, 9, 9}, {6, 2, 3, 3}, 2, {1, 2}, {2, 1}, {1, 1, 1, 1}},
      {{2, 6, 8, 7}, {6, 1, 3, 3}, 6, {2, 2}, {1, 1}, {1, 1, 1, 1}},          // depthwise
      {{1, 3, 8, 8}, {6, 1, 3, 3}, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, false},   // depthwise multiplier 2
      {{1, 5, 6, 7}, {7, 5, 1, 1}},                                          // pointwise in place
      {{1, 5, 6, 7}, {3, 5, 1, 1}, 1, {2, 2}},                               // strided 1x1
      {{3, 2, 11}, {5, 2, 4}, 1, {3}, {2}, {3, 1}},                          // 1-D
      {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}},  // 3-D
      {{1, 8, 13, 5}, {20, 4, 3, 3}, 2, {1, 1}, {1, 1}, {1, 1, 1, 1}},       // ragged GEMM edges
      {{1, 3, 1, 1}, {2, 3, 1, 1}},
  };
  unsigned seed = 1;
  for (const auto& c : cases) check_conv(c, seed += 7);
}

TEST(NnConv, HandCheckedPaddedSum) {
  // 3x3 ones kernel over a 3x3 input of 1..9 with pad 1: each output is its neighbourhood sum.
  Tensor X = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor W = f32({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  OneNode g("Conv", {in("x", X), init("w", W)}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  expect_values(g.run()[0], {1, 1, 3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
}

TEST(NnConv, AutoPadSameUpperAndLower) {
  // 1-D input 1..4, kernel [1,1,1], stride 1: total pad 2, split evenly either way.
  Tensor X = f32({1, 1, 4}, {1, 2, 3, 4}), W = f32({1, 1, 3}, {1, 1, 1});
  OneNode up("Conv", {in("x", X), init("w", W)}, {"y"}, {{"auto_pad", "SAME_UPPER"}});
  expect_values(up.run()[0], {1, 1, 4}, {3, 6, 9, 7});
  // kernel 2: total pad 1; SAME_UPPER pads at the end, SAME_LOWER at the start.
  Tensor W2 = f32({1, 1, 2}, {1, 10});
  OneNode up2("Conv", {in("x", X), init("w", W2)}, {"y"}, {{"auto_pad", "SAME_UPPER"}});
  expect_values(up2.run()[0], {1, 1, 4}, {21, 32, 43, 4});
  OneNode lo2("Conv", {in("x", X), init("w", W2)}, {"y"}, {{"auto_pad", "SAME_LOWER"}});
  expect_values(lo2.run()[0], {1, 1, 4}, {10, 21, 32, 43});
  OneNode valid("Conv", {in("x", X), init("w", W2)}, {"y"}, {{"auto_pad", "VALID"}, {"strides", std::vector<int64_t>{2}}});
  expect_values(valid.run()[0], {1, 1, 2}, {21, 43});
}

TEST(NnConv, SymbolicBatchFlowsThrough) {
  OneNode g("Conv", {{"x", Tensor(), false, Shape({Dim::sym("N"), Dim(3), Dim(32), Dim(32)})},
                     init("w", Tensor(DType::f32, {8, 3, 3, 3}))},
            {"y"}, {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  g.m.graph->inputs[0]->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("N"), Dim(8), Dim(16), Dim(16)}));
  auto cost = ops::node_cost(*g.node);
  EXPECT_FALSE(cost.has_value());  // symbolic N: no concrete cost
}

TEST(NnConv, CostIsTwoMacsPerOutputTap) {
  OneNode g("Conv", {in("x", Tensor(DType::f32, {1, 4, 8, 8})), init("w", Tensor(DType::f32, {6, 2, 3, 3}))}, {"y"},
            {{"group", 2}});
  g.infer();
  auto cost = ops::node_cost(*g.node);
  ASSERT_TRUE(cost.has_value());
  EXPECT_DOUBLE_EQ(cost->flops, 2.0 * (6 * 6 * 6) * (2 * 9));
  EXPECT_DOUBLE_EQ(cost->bytes_read, 4.0 * (4 * 64 + 6 * 2 * 9));
  EXPECT_DOUBLE_EQ(cost->bytes_written, 4.0 * 6 * 36);
}

TEST(NnConv, ChannelMismatchNamesTheNode) {
  OneNode g("Conv", {in("x", Tensor(DType::f32, {1, 4, 5, 5})), init("w", Tensor(DType::f32, {2, 3, 3, 3}))}, {"y"});
  try {
    g.infer();
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("channel"), std::string::npos) << e.what();
  }
}

// ---- ConvTranspose ----------------------------------------------------------------

Tensor naive_conv_transpose(const Tensor& X, const Tensor& W, const std::vector<int64_t>& s,
                            const std::vector<int64_t>& d, const std::vector<int64_t>& pb,
                            const std::vector<int64_t>& out, int64_t group) {
  size_t r = s.size();
  int64_t N = X.dim(0), C = X.dim(1), Mg = W.dim(1), M = Mg * group, Cg = C / group;
  std::vector<int64_t> in(X.dims().begin() + 2, X.dims().end()), k(W.dims().begin() + 2, W.dims().end());
  std::vector<int64_t> ydims = {N, M};
  ydims.insert(ydims.end(), out.begin(), out.end());
  Tensor Y(DType::f32, ydims);
  int64_t IS = numel_of(in), KS = numel_of(k), OS = numel_of(out);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < IS; ++i)
        for (int64_t mm = 0; mm < Mg; ++mm)
          for (int64_t kk = 0; kk < KS; ++kk) {
            std::vector<int64_t> ii = unflatten(i, in), ki = unflatten(kk, k), oi(r);
            bool inside = true;
            for (size_t t = 0; t < r; ++t) {
              oi[t] = ii[t] * s[t] - pb[t] + ki[t] * d[t];
              inside = inside && oi[t] >= 0 && oi[t] < out[t];
            }
            if (!inside) continue;
            int64_t m = (c / Cg) * Mg + mm;
            Y.data<float>()[(n * M + m) * OS + flatten(oi, out)] +=
                X.data<float>()[(n * C + c) * IS + i] * W.data<float>()[(c * Mg + mm) * KS + kk];
          }
  return Y;
}

TEST(NnConvTranspose, MatchesNaiveWithStridesPadsGroupsOutputPadding) {
  Tensor X = random_f32({2, 4, 5, 4}, 11), W = random_f32({4, 3, 3, 2}, 12);
  // out = s*(in-1) + output_padding + (k-1)*d + 1 - pb - pe
  OneNode g("ConvTranspose", {in("x", X), init("w", W)}, {"y"},
            {{"group", 2},
             {"strides", std::vector<int64_t>{2, 3}},
             {"dilations", std::vector<int64_t>{1, 2}},
             {"pads", std::vector<int64_t>{1, 0, 0, 2}},
             {"output_padding", std::vector<int64_t>{1, 2}}});
  auto y = g.run(2);
  std::vector<int64_t> out = {2 * 4 + 1 + 2 + 1 - 1 - 0, 3 * 3 + 2 + 2 + 1 - 0 - 2};
  expect_close(y[0], naive_conv_transpose(X, W, {2, 3}, {1, 2}, {1, 0}, out, 2));
  EXPECT_EQ(g.out(0).shape, Shape::of(y[0].dims()));
}

TEST(NnConvTranspose, HandChecked1DWithBias) {
  // x = [1, 2], w = [1, 1, 1], stride 2: y = [1, 1, 1+2, 2, 2] + bias 10.
  OneNode g("ConvTranspose",
            {in("x", f32({1, 1, 2}, {1, 2})), init("w", f32({1, 1, 3}, {1, 1, 1})), init("b", f32({1}, {10}))}, {"y"},
            {{"strides", std::vector<int64_t>{2}}});
  expect_values(g.run()[0], {1, 1, 5}, {11, 11, 13, 12, 12});
}

TEST(NnConvTranspose, OutputShapeAndAutoPad) {
  // Full output 5; output_shape 4 drops one: SAME_UPPER keeps the start (pad at the end).
  Tensor X = f32({1, 1, 2}, {1, 2}), W = f32({1, 1, 3}, {1, 1, 1});
  OneNode up("ConvTranspose", {in("x", X), init("w", W)}, {"y"},
             {{"strides", std::vector<int64_t>{2}}, {"auto_pad", "SAME_UPPER"}});
  expect_values(up.run()[0], {1, 1, 4}, {1, 1, 3, 2});
  OneNode lo("ConvTranspose", {in("x", X), init("w", W)}, {"y"},
             {{"strides", std::vector<int64_t>{2}}, {"output_shape", std::vector<int64_t>{4}}});
  expect_values(lo.run()[0], {1, 1, 4}, {1, 3, 2, 2});
}

TEST(NnConvTranspose, SymbolicBatchAndChannelMismatch) {
  OneNode g("ConvTranspose", {{"x", Tensor(), false, Shape({Dim::sym("N"), Dim(4), Dim(5), Dim(5)})},
                              init("w", Tensor(DType::f32, {4, 2, 3, 3}))},
            {"y"}, {{"group", 2}});
  g.m.graph->inputs[0]->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("N"), Dim(4), Dim(7), Dim(7)}));
  OneNode bad("ConvTranspose", {in("x", Tensor(DType::f32, {1, 3, 5, 5})), init("w", Tensor(DType::f32, {4, 2, 3, 3}))},
              {"y"});
  EXPECT_THROW(bad.infer(), Error);
}

}  // namespace
}  // namespace kiln::nntest

namespace kiln::nntest {
namespace {

TEST(NnConv, HalfAndDoubleInputsKeepTheirDtype) {
  Tensor X = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor W = f32({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  std::map<std::string, Attribute> pads = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  for (DType dt : {DType::f16, DType::bf16, DType::f64}) {
    OneNode g("Conv", {in("x", X.cast(dt)), init("w", W.cast(dt))}, {"y"}, pads);
    Tensor y = g.run()[0];
    EXPECT_EQ(y.dtype(), dt);
    expect_values(y, {1, 1, 3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
  }
}

}  // namespace
}  // namespace kiln::nntest

// BF16 kernels against double-precision loops on many shapes (ragged tiles, odd K, every
// epilogue part), for the AVX512-BF16 table where the CPU has it and the scalar emulation
// everywhere; then kiln quantize --precision bf16|fp16 artifacts against their reference (native
// kernels, the forced f32 fallback, f16 storage). Tolerance (kernels/bf16.h): |y - ref| <= 2^-8 * sum_k |w_k x_k| + 1e-5 * (|ref| + 1),
// ref computed from the bf16 weights and the unrounded f32 activations.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "kiln/compress/driver.h"
#include "kiln/compress/report.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/dtype.h"
#include "kiln/ir/text.h"
#include "kiln/kernels/bf16.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::kernels::bf16 {
namespace {

std::vector<const BKernels*> tables() {
  std::vector<const BKernels*> t = {&emulated()};
  if (native()) t.push_back(native());
  return t;
}

std::vector<float> randn(int64_t n, uint32_t seed, float sd = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = from_f32(v[i]);
  return o;
}

void expect_within(float got, double ref, double abs_sum, const std::string& where) {
  const double tol = std::ldexp(abs_sum, -8) * 1.001 + 1e-5 * (std::abs(ref) + 1);
  EXPECT_LE(std::abs(got - ref), tol) << where << " got " << got << " want " << ref;
}

TEST(Bf16, RoundingMatchesTheIrConversion) {
  const float cases[] = {0.f, -0.f, 1.f, 1.00390625f, 1.005859375f, 3.14159f, -2.71828f, 1e-40f, 65504.f, 3.4e38f,
                         std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (float f : cases) {
    EXPECT_EQ(from_f32(f), f32_to_bf16(f)) << f;
    EXPECT_EQ(to_f32(from_f32(f)), bf16_to_f32(f32_to_bf16(f))) << f;
  }
  EXPECT_EQ(from_f32(1.00390625f), 0x3F80);   // halfway between 1 and 1 + 2^-7: to even (1)
  EXPECT_EQ(from_f32(1.01171875f), 0x3F82);   // halfway between 1 + 2^-7 and 1 + 2^-6: to even
  EXPECT_TRUE(std::isnan(to_f32(from_f32(std::nanf("")))));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  for (int i = 0; i < 10000; ++i) {
    const float f = u(rng);
    EXPECT_LE(std::abs(to_f32(from_f32(f)) - f), std::ldexp(std::abs(f), -8)) << f;  // unit roundoff 2^-8
  }
}

TEST(Bf16, GemmMatchesDoubleOnManyShapes) {
  const int64_t shapes[][3] = {{1, 1, 1},   {1, 17, 3},  {5, 9, 7},    {8, 32, 64}, {9, 33, 65}, {13, 50, 2},
                               {64, 64, 64}, {70, 45, 129}, {3, 100, 300}, {33, 31, 16}};
  for (const BKernels* k : tables()) {
    for (const auto& sh : shapes) {
      const int64_t M = sh[0], N = sh[1], K = sh[2];
      // rows = activations (f32, rounded when packed), cols = weights (bf16), bias per column,
      // residual and ReLU: the MatMul arrangement; then weights as rows (bias per row), the
      // convolution arrangement.
      std::vector<float> a = randn(M * K, 11 + static_cast<uint32_t>(M * N * K));
      std::vector<uint16_t> w = to_bf16(randn(K * N, 7 + static_cast<uint32_t>(K)));
      std::vector<float> bias = randn(N, 3), res = randn(M * N, 5);
      std::vector<uint32_t> rows(packed_rows_words(*k, M, K)), cols(packed_cols_words(*k, K, N));
      pack_rows_f32(*k, a.data(), K, M, K, rows.data(), 2);
      pack_cols_bf16(*k, w.data(), N, false, K, N, cols.data());
      std::vector<float> y(M * N);
      Epilogue e;
      e.bias = bias.data();
      e.residual = res.data();
      e.ldr = N;
      e.act = Act::Relu;
      gemm_packed(*k, M, N, K, rows.data(), cols.data(), y.data(), N, e, 2);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0, abs_sum = 0;
          for (int64_t q = 0; q < K; ++q) {
            const double p = static_cast<double>(a[i * K + q]) * to_f32(w[q * N + j]);
            s += p, abs_sum += std::abs(p);
          }
          const double ref = std::max(0.0, s + bias[j] + res[i * N + j]);
          expect_within(y[i * N + j], ref, abs_sum,
                        std::string(bisa_name(k->isa)) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                            std::to_string(K) + " at " + std::to_string(i) + "," + std::to_string(j));
        }
      // Weights as the rows operand (transposed storage [N, K] read with trans = true as cols too).
      std::vector<uint16_t> wt(N * K);
      for (int64_t q = 0; q < K; ++q)
        for (int64_t j = 0; j < N; ++j) wt[j * K + q] = w[q * N + j];
      std::vector<uint32_t> cols_t(packed_cols_words(*k, K, N));
      pack_cols_bf16(*k, wt.data(), K, true, K, N, cols_t.data());
      EXPECT_EQ(cols_t, cols);
      std::vector<uint32_t> wrows(packed_rows_words(*k, N, K));
      pack_rows_bf16(*k, wt.data(), K, N, K, wrows.data());
      std::vector<float> at(K * M);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t q = 0; q < K; ++q) at[q * M + i] = a[i * K + q];
      std::vector<uint32_t> acols(packed_cols_words(*k, K, M));
      // activations as cols: pack_panel over rows of `at` (row q at offset q * M; odd K: -1)
      const int64_t kp = (K + 1) / 2, nt = (M + k->nr - 1) / k->nr;
      std::vector<int64_t> offsets(2 * kp, -1);
      for (int64_t q = 0; q < K; ++q) offsets[q] = q * M;
      for (int64_t t = 0; t < nt; ++t) {
        const int64_t j0 = t * k->nr, cnt = std::min<int64_t>(k->nr, M - j0);
        k->pack_panel(at.data() + j0, offsets.data(), kp, cnt, acols.data() + t * kp * k->nr);
      }
      std::vector<float> yt(N * M);
      Epilogue er;
      er.bias = bias.data();
      er.bias_per_row = true;
      gemm_packed(*k, N, M, K, wrows.data(), acols.data(), yt.data(), M, er, 1);
      for (int64_t j = 0; j < N; ++j)
        for (int64_t i = 0; i < M; ++i) {
          double s = 0, abs_sum = 0;
          for (int64_t q = 0; q < K; ++q) {
            const double p = static_cast<double>(a[i * K + q]) * to_f32(w[q * N + j]);
            s += p, abs_sum += std::abs(p);
          }
          expect_within(yt[j * M + i], s + bias[j], abs_sum, std::string(bisa_name(k->isa)) + " rows=weights");
        }
    }
  }
}

struct ConvCase {
  int64_t N, C, H, W, K, R, S, stride, pad, dil;
};

TEST(Bf16, ConvolutionMatchesDoubleOnManyShapes) {
  const ConvCase cases[] = {{1, 3, 9, 9, 8, 3, 3, 1, 1, 1},   {2, 16, 7, 7, 24, 1, 1, 1, 0, 1},
                            {1, 5, 12, 10, 9, 3, 3, 2, 1, 1}, {1, 3, 15, 15, 4, 7, 7, 2, 3, 1},
                            {1, 6, 8, 8, 33, 3, 3, 1, 2, 2},  {1, 64, 14, 14, 40, 1, 1, 2, 0, 1},
                            {1, 7, 5, 6, 3, 2, 3, 1, 0, 1},   {1, 9, 23, 21, 70, 3, 3, 1, 1, 1},
                            {1, 4, 11, 13, 17, 3, 3, 3, 1, 1}, {1, 5, 13, 12, 10, 3, 2, 2, 2, 3},
                            {2, 33, 10, 10, 19, 1, 1, 2, 0, 1}, {1, 64, 20, 20, 24, 3, 3, 1, 1, 1},
                            {1, 64, 5, 5, 200, 3, 3, 1, 1, 1}, {1, 16, 7, 7, 64, 3, 3, 1, 1, 1},
                            {1, 8, 5, 9, 90, 3, 3, 1, 1, 1},   {2, 12, 14, 14, 64, 3, 3, 2, 1, 1}};
  for (const BKernels* k : tables()) {
    int pixels = 0;  // shapes that ran with output positions as rows
    for (const auto& c : cases) {
      Conv2dShape s;
      s.N = c.N, s.C = c.C, s.H = c.H, s.W = c.W, s.K = c.K, s.R = c.R, s.S = c.S;
      s.stride_h = s.stride_w = c.stride, s.dil_h = s.dil_w = c.dil;
      s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = c.pad;
      const int64_t OH = s.out_h(), OW = s.out_w();
      std::vector<float> x = randn(s.N * s.C * s.H * s.W, 21);
      std::vector<uint16_t> w = to_bf16(randn(s.K * s.C * s.R * s.S, 22, 0.2f));
      std::vector<float> bias = randn(s.K, 23), res = randn(s.N * s.K * OH * OW, 24);
      std::vector<uint32_t> packed(conv_packed_weight_words(*k, s));
      conv_pack_weight(*k, s, w.data(), packed.data());
      std::vector<char> ws(conv_workspace_bytes(*k, s, 2));
      std::vector<float> y(s.N * s.K * OH * OW);
      Epilogue e;
      e.bias = bias.data();
      e.residual = res.data();
      e.act = Act::Relu;
      conv2d(*k, s, x.data(), packed.data(), y.data(), e, ws.data(), 2);
      pixels += conv_uses_pixels(*k, s);
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t m = 0; m < s.K; ++m)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              double sum = 0, abs_sum = 0;
              for (int64_t ci = 0; ci < s.C; ++ci)
                for (int64_t r = 0; r < s.R; ++r)
                  for (int64_t q = 0; q < s.S; ++q) {
                    const int64_t ih = oh * c.stride - c.pad + r * c.dil, iw = ow * c.stride - c.pad + q * c.dil;
                    if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                    const double p = static_cast<double>(x[((n * s.C + ci) * s.H + ih) * s.W + iw]) *
                                     to_f32(w[((m * s.C + ci) * s.R + r) * s.S + q]);
                    sum += p, abs_sum += std::abs(p);
                  }
              const int64_t o = ((n * s.K + m) * OH + oh) * OW + ow;
              expect_within(y[o], std::max(0.0, sum + bias[m] + res[o]), abs_sum,
                            std::string(bisa_name(k->isa)) + " conv " + std::to_string(c.C) + "x" + std::to_string(c.R));
            }
    }
    EXPECT_GE(pixels, 2) << bisa_name(k->isa) << ": the positions-as-rows orientation was not exercised";
  }
}

TEST(Bf16, RuntimeTableAndForcedFallback) {
  EXPECT_EQ(runtime_kernels(), native());
  set_force_fallback(true);
  EXPECT_EQ(runtime_kernels(), nullptr);
  set_force_fallback(false);
  EXPECT_EQ(runtime_kernels(), native());
  if (native()) {
    EXPECT_EQ(native()->isa, BIsa::Avx512Bf16);
  }
}

}  // namespace
}  // namespace kiln::kernels::bf16

// ---- the compiled runtime: kiln quantize --precision bf16|fp16 ----------------------------------

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;

// conv 3x3 + ReLU, a 1x1 conv added to it (residual), global pooling, a Gemm.
std::string write_model(const fs::path& dir) {
  Model m = parse_model(R"(kiln.model opset=13
graph g(%x: f32[2,8,10,10]) -> (%y) {
  %w1 = init f32[16,8,3,3] dense<0>
  %b1 = init f32[16] dense<0>
  %w2 = init f32[16,16,1,1] dense<0>
  %wf = init f32[5,16] dense<0>
  %bf = init f32[5] dense<0>
  %c1 = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}
  %r1 = Relu(%c1)
  %c2 = Conv(%r1, %w2)
  %s = Add(%c2, %r1)
  %p = GlobalAveragePool(%s)
  %f = Flatten(%p)
  %y = Gemm(%f, %wf, %bf) {transB=1}
})");
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.f, 0.3f);
  for (Value* v : m.graph->initializers) {
    Tensor t(DType::f32, v->initializer->dims());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
    v->initializer = t;
  }
  ops::infer_shapes(m);
  fs::create_directories(dir);
  const std::string path = (dir / "model.onnx").string();
  export_onnx(m, path);
  return path;
}

struct Outputs {
  Tensor fast, reference;
  int half_nodes = 0;
  DType weight_type = DType::undefined;
};

Outputs compile_and_run(const std::string& precision, const std::string& name, bool force_fallback) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "compress_test" / name;
  fs::remove_all(dir);
  QuantizeJob job;
  job.model_path = write_model(dir);
  job.out_path = (dir / "m.kiln").string();
  job.precision = precision;
  job.cache_dir = (dir / "cache").string();
  QuantizeResult r = quantize_file(job);
  kernels::bf16::set_force_fallback(force_fallback);
  auto exe = Executable::load(job.out_path);
  Tensor x(DType::f32, {2, 8, 10, 10});
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(rng);
  Outputs o;
  o.fast = exe->run({{"x", x}}).at("y");
  kernels::bf16::set_force_fallback(false);
  o.reference = run_model(exe->model(), {{"x", x}}).at("y");  // the Half ops' reference: f32 on widened weights
  for (const auto& n : exe->model().graph->nodes())
    if (n->op == "HalfConv" || n->op == "HalfMatMul") {
      ++o.half_nodes;
      o.weight_type = n->inputs[1]->dtype;
    }
  EXPECT_EQ(r.quantized_nodes, o.half_nodes);
  return o;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, static_cast<double>(std::abs(t.data<float>()[i])));
  return m;
}

TEST(HalfPrecision, Bf16ArtifactMatchesItsReferenceWithinTheStatedTolerance) {
  Outputs o = compile_and_run("bf16", "bf16_native", false);
  EXPECT_EQ(o.half_nodes, 3);  // two convolutions and the Gemm
  EXPECT_EQ(o.weight_type, DType::bf16);
  AgreementSum s;
  s.add(o.reference.data<float>(), o.fast.data<float>(), o.reference.numel());
  // Activations rounded to bf16 (2^-8 relative) in three layers: a few 2^-8 of the output's scale.
  EXPECT_GT(s.result().cosine, 0.9999);
  EXPECT_LE(s.result().max_abs, 0.02 * max_abs(o.reference));
  if (!kernels::bf16::native()) GTEST_SKIP() << "no AVX512-BF16 here: the f32 fallback ran (checked below)";
  EXPECT_GT(s.result().max_abs, 0.0) << "the bf16 dot-product kernel rounds activations: some output must differ";
}

TEST(HalfPrecision, ForcedFallbackIsTheF32KernelsOnWidenedWeights) {
  Outputs o = compile_and_run("bf16", "bf16_fallback", true);
  EXPECT_EQ(o.weight_type, DType::bf16);
  // f32 kernels vs the f32 reference on the same widened weights: float rounding only.
  for (int64_t i = 0; i < o.reference.numel(); ++i)
    EXPECT_NEAR(o.fast.data<float>()[i], o.reference.data<float>()[i], 1e-4 * (max_abs(o.reference) + 1)) << i;
}

TEST(HalfPrecision, Fp16StoresHalfWeightsAndComputesInF32) {
  Outputs o = compile_and_run("fp16", "fp16", false);
  EXPECT_EQ(o.half_nodes, 3);
  EXPECT_EQ(o.weight_type, DType::f16);
  for (int64_t i = 0; i < o.reference.numel(); ++i)
    EXPECT_NEAR(o.fast.data<float>()[i], o.reference.data<float>()[i], 1e-4 * (max_abs(o.reference) + 1)) << i;
}

}  // namespace
}  // namespace kiln::compress

// Quantization ops against hand-computed integers (rounding ties, saturation, per-axis
// parameters) and, for the integer GEMM/convolution paths, against naive direct loops.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {
namespace {

using Attrs = std::map<std::string, Attribute>;
using Ins = std::vector<std::optional<Tensor>>;

// Runs one node (inputs nullopt = omitted) and checks that shape inference predicted the
// dtype and dims the kernel produced.
std::vector<Tensor> run_node(const std::string& op, const Ins& ins, Attrs attrs = {}, size_t n_out = 1,
                             int64_t opset = 13) {
  Model m;
  m.opsets[""] = opset;
  Graph& g = *m.graph;
  std::vector<Value*> vals;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]) {
      vals.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    vals.push_back(g.add_input(name, ins[i]->dtype(), Shape::of(ins[i]->dims())));
    feeds[name] = *ins[i];
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < n_out; ++i) outs.push_back("out" + std::to_string(i));
  Node* n = g.add_node(op, vals, outs, std::move(attrs));
  for (Value* o : n->outputs) g.outputs.push_back(o);
  ops::verify_model(m);
  ops::infer_shapes(m);
  auto res = run_model(m, feeds);
  std::vector<Tensor> r;
  for (Value* o : n->outputs) {
    const Tensor& t = res.at(o->name);
    EXPECT_EQ(o->dtype, t.dtype()) << op << " output " << o->name;
    EXPECT_EQ(o->shape, Shape::of(t.dims())) << op << " output " << o->name;
    r.push_back(t);
  }
  return r;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_int64(i));
  return v;
}

// A u8 or i8 tensor from ints.
Tensor q(DType dt, std::vector<int64_t> dims, const std::vector<int>& v) {
  Tensor t(dt, dims);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::u8) t.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
    else t.data<int8_t>()[i] = static_cast<int8_t>(v[i]);
  }
  return t;
}
Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }
Tensor fs(float v) { return Tensor::scalar<float>(v); }

// Random u8/i8 tensor with a fixed seed.
Tensor random_q(DType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t(dt, dims);
  std::uniform_int_distribution<int> d(dt == DType::u8 ? 0 : -128, dt == DType::u8 ? 255 : 127);
  std::vector<int> v(t.numel());
  for (int& x : v) x = d(rng);
  return q(dt, dims, v);
}

// ---- QuantizeLinear ----------------------------------------------------------------------

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturatesU8) {
  auto y = run_node("QuantizeLinear", {f32({6}, {2.5f, 3.5f, -2.5f, 1000.f, -1000.f, 0.5f}), fs(1.0f),
                                       Tensor::scalar<uint8_t>(10)})[0];
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{12, 14, 8, 255, 0, 10}));
  // x / scale ties: 5/2 = 2.5 -> 2, 7/2 = 3.5 -> 4; no zero point means u8 with 0.
  auto z = run_node("QuantizeLinear", {f32({3}, {5.f, 7.f, -1.f}), fs(2.0f), std::nullopt})[0];
  EXPECT_EQ(z.dtype(), DType::u8);
  EXPECT_EQ(ints(z), (std::vector<int64_t>{2, 4, 0}));
}

TEST(QuantizeLinear, SaturatesI8) {
  auto y = run_node("QuantizeLinear", {f32({6}, {2.5f, -2.5f, 127.5f, -200.f, 0.5f, -0.5f}), fs(1.0f),
                                       Tensor::scalar<int8_t>(-1)})[0];
  EXPECT_EQ(y.dtype(), DType::i8);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, -3, 127, -128, -1, -1}));
}

TEST(QuantizeLinear, I32Input) {
  auto y = run_node("QuantizeLinear", {Tensor::from_vector<int32_t>({2}, {5, -7}), fs(2.0f), Tensor::scalar<int8_t>(0)})[0];
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, -4}));
}

TEST(QuantizeLinear, PerAxis) {
  Tensor x = f32({2, 3}, {1, 2, 4, 3, 5, -400});
  Tensor s = f32({3}, {1, 2, 4});
  Tensor zp = q(DType::u8, {3}, {0, 10, 100});
  // Column j uses scale[j], zero point[j]: 5/2 = 2.5 -> 2 (tie to even), -400/4 + 100 = 0.
  std::vector<int64_t> want{1, 11, 101, 3, 12, 0};
  EXPECT_EQ(ints(run_node("QuantizeLinear", {x, s, zp})[0]), want);  // default axis 1
  EXPECT_EQ(ints(run_node("QuantizeLinear", {x, s, zp}, {{"axis", int64_t{-1}}})[0]), want);
  // Along axis 0: row i uses scale[i].
  auto r = run_node("QuantizeLinear", {x, f32({2}, {1, 4}), q(DType::u8, {2}, {0, 200})}, {{"axis", int64_t{0}}})[0];
  EXPECT_EQ(ints(r), (std::vector<int64_t>{1, 2, 4, 201, 201, 100}));  // 5/4 = 1.25 -> 1, 3/4 -> 1
}

TEST(QuantizeLinear, Errors) {
  Tensor x = f32({2, 3}, {1, 2, 4, 3, 5, -400});
  std::string e = error_of([&] { run_node("QuantizeLinear", {x, f32({3}, {1, 2, 4}), std::nullopt}, {}, 1, 10); });
  EXPECT_NE(e.find("needs opset >= 13"), std::string::npos) << e;
  e = error_of([&] { run_node("QuantizeLinear", {x, f32({2}, {1, 2}), std::nullopt}); });
  EXPECT_NE(e.find("scale has 2 entries"), std::string::npos) << e;
  e = error_of([&] { run_node("QuantizeLinear", {x, fs(1), Tensor::scalar<int32_t>(0)}); });
  EXPECT_NE(e.find("y_zero_point must be u8 or i8, got i32"), std::string::npos) << e;
}

// ---- DequantizeLinear --------------------------------------------------------------------

TEST(DequantizeLinear, PerTensorPerAxisAndI32) {
  auto y = run_node("DequantizeLinear", {q(DType::u8, {3}, {0, 128, 255}), fs(0.5f), Tensor::scalar<uint8_t>(128)})[0];
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.data<float>()[0], -64.0f);
  EXPECT_EQ(y.data<float>()[1], 0.0f);
  EXPECT_EQ(y.data<float>()[2], 63.5f);
  auto pa = run_node("DequantizeLinear",
                     {q(DType::i8, {2, 2}, {-128, 127, 10, -10}), f32({2}, {2, 0.25f}), q(DType::i8, {2}, {0, -10})},
                     {{"axis", int64_t{1}}})[0];
  std::vector<float> want{-256.f, 34.25f, 20.f, 0.f};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pa.data<float>()[i], want[i]);
  auto i32 = run_node("DequantizeLinear", {Tensor::from_vector<int32_t>({2}, {-3, 4}), fs(0.25f), std::nullopt})[0];
  EXPECT_EQ(i32.data<float>()[0], -0.75f);
  EXPECT_EQ(i32.data<float>()[1], 1.0f);
}

TEST(DequantizeLinear, Errors) {
  std::string e = error_of([&] {
    run_node("DequantizeLinear", {Tensor::from_vector<int32_t>({1}, {3}), fs(1), Tensor::scalar<int32_t>(2)});
  });
  EXPECT_NE(e.find("i32 x needs a zero point of 0"), std::string::npos) << e;
  e = error_of([&] { run_node("DequantizeLinear", {q(DType::u8, {1}, {3}), fs(1), Tensor::scalar<int8_t>(0)}); });
  EXPECT_NE(e.find("x_zero_point is i8 but"), std::string::npos) << e;
}

// ---- DynamicQuantizeLinear (expected values: the ONNX formula evaluated by hand in f32)

void expect_dynamic(std::vector<float> x, float scale, int zp, std::vector<int64_t> y) {
  auto r = run_node("DynamicQuantizeLinear", {f32({static_cast<int64_t>(x.size())}, x)}, {}, 3);
  EXPECT_EQ(ints(r[0]), y);
  EXPECT_FLOAT_EQ(r[1].data<float>()[0], scale);
  EXPECT_EQ(r[2].as_int64(0), zp);
}

TEST(DynamicQuantizeLinear, MatchesOnnxFormula) {
  // scale = 5/255; zp = round(3 / scale) = 153; 1.275/scale = 25.5 -> 26 is a tie rounded to even.
  expect_dynamic({0, 2, -3, -2.5f, 1.34f, 0.5f}, 5.0f / 255, 153, {153, 255, 0, 26, 221, 179});
  expect_dynamic({-1, -2.1f, -1.3f, -2.5f, -3.34f, -4}, 4.0f / 255, 255, {191, 121, 172, 96, 42, 0});
  expect_dynamic({1, 2.1f, 1.3f, 2.5f, 3.34f, 4}, 4.0f / 255, 0, {64, 134, 83, 159, 213, 255});
  expect_dynamic({0, 0}, 1.0f, 0, {0, 0});  // empty range: scale 1 (as ONNX Runtime)
}

// ---- MatMulInteger / QLinearMatMul: naive reference ------------------------------------

// Per-row (a) / per-column (b) zero points as flat vectors indexed [batch of operand][i].
struct NaiveMat {
  std::vector<int64_t> a, b, out;
  std::vector<int64_t> acc;  // int64 accumulators, output order
};

// Naive numpy-matmul with explicit coordinates; zp(a|b)(operand batch flat, row|col).
NaiveMat naive_matmul(const Tensor& A, const Tensor& B, const std::function<int(int64_t, int64_t)>& azp,
                      const std::function<int(int64_t, int64_t)>& bzp) {
  NaiveMat r;
  std::vector<int64_t> a = A.dims(), b = B.dims();
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  while (ab.size() < rank) ab.insert(ab.begin(), 1);
  while (bb.size() < rank) bb.insert(bb.begin(), 1);
  std::vector<int64_t> batch(rank);
  for (size_t i = 0; i < rank; ++i) batch[i] = std::max(ab[i], bb[i]);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  for (int64_t i = 0; i < nb; ++i) {
    // Coordinates of batch i, then the operands' flat batch indices (size-1 dims broadcast).
    std::vector<int64_t> coord(rank);
    for (int64_t r2 = i, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) coord[d] = r2 % batch[d], r2 /= batch[d];
    int64_t ai = 0, bi = 0;
    for (size_t d = 0; d < rank; ++d) {
      ai = ai * ab[d] + (ab[d] == 1 ? 0 : coord[d]);
      bi = bi * bb[d] + (bb[d] == 1 ? 0 : coord[d]);
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += (A.as_int64((ai * M + m) * K + k) - azp(ai, m)) * (B.as_int64((bi * K + k) * N + n) - bzp(bi, n));
        r.acc.push_back(s);
      }
  }
  r.out = batch;
  if (!a1) r.out.push_back(M);
  if (!b1) r.out.push_back(N);
  return r;
}

TEST(MatMulInteger, HandComputed) {
  // (A - 1) = [[0,1],[2,3]], (B - 2) = [[3,4],[5,6]] -> [[5,6],[21,26]].
  auto y = run_node("MatMulInteger", {q(DType::u8, {2, 2}, {1, 2, 3, 4}), q(DType::u8, {2, 2}, {5, 6, 7, 8}),
                                      Tensor::scalar<uint8_t>(1), Tensor::scalar<uint8_t>(2)})[0];
  EXPECT_EQ(y.dtype(), DType::i32);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{5, 6, 21, 26}));
  // i8 x u8, per-row zero point of A, per-column of B.
  auto z = run_node("MatMulInteger", {q(DType::i8, {2, 2}, {-1, 2, 3, -4}), q(DType::u8, {2, 2}, {1, 3, 3, 5}),
                                      q(DType::i8, {2}, {0, -1}), q(DType::u8, {2}, {1, 3})})[0];
  // rows (A - zp_row): [-1,2], [4,-3]; cols (B - zp_col): [0,2], [0,2] -> [[4,4],[-6,-6]]
  EXPECT_EQ(ints(z), (std::vector<int64_t>{4, 4, -6, -6}));
}

struct MatCase {
  std::vector<int64_t> a, b;
  DType at, bt;
  std::vector<int64_t> azp_dims, bzp_dims;  // empty: scalar; {-1}: omitted
};

TEST(MatMulInteger, MatchesNaiveOverShapes) {
  std::mt19937 rng(7);
  std::vector<MatCase> cases = {
      {{3, 4}, {4, 5}, DType::u8, DType::u8, {}, {}},
      {{3, 4}, {4, 5}, DType::i8, DType::u8, {3}, {5}},
      {{2, 1, 3, 4}, {3, 4, 2}, DType::u8, DType::i8, {3}, {-1}},
      {{4}, {4, 3}, DType::u8, DType::u8, {-1}, {3}},
      {{2, 3, 4}, {4}, DType::i8, DType::i8, {2, 3, 1}, {}},
      {{2, 3, 4}, {2, 4, 5}, DType::u8, DType::u8, {2, 3, 1}, {2, 1, 5}},
      {{1, 2, 0}, {0, 3}, DType::u8, DType::u8, {}, {}},  // K = 0: all zeros
  };
  for (const auto& c : cases) {
    Tensor A = random_q(c.at, c.a, rng), B = random_q(c.bt, c.b, rng);
    std::optional<Tensor> az, bz;
    if (c.azp_dims != std::vector<int64_t>{-1}) az = random_q(c.at, c.azp_dims, rng);
    if (c.bzp_dims != std::vector<int64_t>{-1}) bz = random_q(c.bt, c.bzp_dims, rng);
    auto zp_of = [](const std::optional<Tensor>& z, int64_t per_batch) {
      return [z, per_batch](int64_t batch, int64_t i) -> int {
        if (!z) return 0;
        if (z->numel() == 1) return static_cast<int>(z->as_int64(0));
        return static_cast<int>(z->as_int64(z->rank() == 1 ? i : batch * per_batch + i));
      };
    };
    int64_t M = c.a.size() == 1 ? 1 : c.a[c.a.size() - 2], N = c.b.size() == 1 ? 1 : c.b.back();
    NaiveMat want = naive_matmul(A, B, zp_of(az, M), zp_of(bz, N));
    Tensor y = run_node("MatMulInteger", {A, B, az, bz})[0];
    SCOPED_TRACE(dims_str(c.a) + " x " + dims_str(c.b));
    EXPECT_EQ(y.dims(), want.out);
    EXPECT_EQ(ints(y), want.acc);
  }
}

TEST(MatMulInteger, ZeroPointErrors) {
  Tensor A = q(DType::u8, {2, 2}, {1, 2, 3, 4});
  std::string e = error_of([&] { run_node("MatMulInteger", {A, A, Tensor::scalar<int8_t>(1), std::nullopt}); });
  EXPECT_NE(e.find("a_zero_point is i8 but"), std::string::npos) << e;
  e = error_of([&] { run_node("MatMulInteger", {A, A, std::nullopt, q(DType::u8, {3}, {1, 2, 3})}); });
  EXPECT_NE(e.find("b_zero_point has shape [3]"), std::string::npos) << e;
  e = error_of([&] { run_node("MatMulInteger", {A, q(DType::u8, {3, 1}, {1, 2, 3})}); });
  EXPECT_NE(e.find("do not agree on the inner dim"), std::string::npos) << e;
}

// Requantization as the spec writes it, computed independently of the kernel.
int requant(int64_t acc, float mult, int zp, int lo, int hi) {
  float v = static_cast<float>(acc) * mult;
  double r = std::nearbyint(static_cast<double>(v)) + zp;
  return static_cast<int>(std::min<double>(hi, std::max<double>(lo, r)));
}

TEST(QLinearMatMul, OnnxExample) {
  // The ONNX operator example; expected values worked out with f32 arithmetic.
  Tensor a = q(DType::u8, {2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  Tensor b = q(DType::u8, {4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  auto y = run_node("QLinearMatMul", {a, fs(0.0066f), Tensor::scalar<uint8_t>(113), b, fs(0.00705f),
                                      Tensor::scalar<uint8_t>(114), fs(0.0107f), Tensor::scalar<uint8_t>(118)})[0];
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{168, 115, 255, 1, 66, 151}));
}

TEST(QLinearMatMul, PerRowPerColumnI8MatchesNaive) {
  std::mt19937 rng(11);
  Tensor a = random_q(DType::i8, {2, 3, 6}, rng), b = random_q(DType::u8, {6, 4}, rng);
  Tensor a_zp = q(DType::i8, {3}, {-3, 0, 5}), b_zp = q(DType::u8, {4}, {128, 120, 0, 255});
  Tensor a_s = f32({3}, {0.01f, 0.02f, 0.015f}), b_s = f32({4}, {0.05f, 0.04f, 0.03f, 0.002f});
  float ys = 0.02f;
  Tensor y = run_node("QLinearMatMul", {a, a_s, a_zp, b, b_s, b_zp, fs(ys), Tensor::scalar<int8_t>(-5)})[0];
  NaiveMat n = naive_matmul(
      a, b, [&](int64_t, int64_t m) { return static_cast<int>(a_zp.as_int64(m)); },
      [&](int64_t, int64_t j) { return static_cast<int>(b_zp.as_int64(j)); });
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 4}));
  bool saw_lo = false, saw_hi = false;
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t m = (i / 4) % 3, j = i % 4;
    float mult = a_s.data<float>()[m] * b_s.data<float>()[j] / ys;
    int want = requant(n.acc[i], mult, -5, -128, 127);
    EXPECT_EQ(y.as_int64(i), want) << "element " << i;
    saw_lo |= want == -128;
    saw_hi |= want == 127;
  }
  EXPECT_TRUE(saw_lo && saw_hi) << "the case should exercise saturation at both ends";
}

// ---- ConvInteger / QLinearConv: naive direct convolution -------------------------------

struct ConvCase {
  std::vector<int64_t> x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dils, pads;  // empty: attribute omitted (defaults)
  std::string auto_pad;                      // empty: omitted
  DType xt = DType::u8, wt = DType::u8;
  bool per_channel = false;
};

Attrs conv_attrs(const ConvCase& c) {
  Attrs a;
  if (c.group != 1) a["group"] = c.group;
  if (!c.strides.empty()) a["strides"] = c.strides;
  if (!c.dils.empty()) a["dilations"] = c.dils;
  if (!c.pads.empty()) a["pads"] = c.pads;
  if (!c.auto_pad.empty()) a["auto_pad"] = c.auto_pad;
  return a;
}

// acc[n][m][out...] with explicit loops over every output, channel and tap; taps that fall
// into padding read the zero point, i.e. contribute nothing.
std::pair<std::vector<int64_t>, std::vector<int64_t>> naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w,
                                                                 int x_zp, const std::vector<int>& w_zp) {
  size_t nsp = c.x.size() - 2;
  std::vector<int64_t> s(nsp, 1), d(nsp, 1), pb(nsp, 0), out(nsp);
  if (!c.strides.empty()) s = c.strides;
  if (!c.dils.empty()) d = c.dils;
  for (size_t i = 0; i < nsp; ++i) {
    int64_t in = c.x[2 + i], dk = (c.w[2 + i] - 1) * d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + dk - in);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
    } else if (c.auto_pad == "VALID") {
      out[i] = (in - dk) / s[i] + 1;
    } else {
      int64_t b = c.pads.empty() ? 0 : c.pads[i], e = c.pads.empty() ? 0 : c.pads[i + nsp];
      pb[i] = b;
      out[i] = (in + b + e - dk) / s[i] + 1;
    }
  }
  int64_t N = c.x[0], C = c.x[1], M = c.w[0], cg = C / c.group, mg = M / c.group;
  int64_t P = 1, T = 1, I = 1;
  for (size_t i = 0; i < nsp; ++i) P *= out[i], T *= c.w[2 + i], I *= c.x[2 + i];
  std::vector<int64_t> acc;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < P; ++p) {
        std::vector<int64_t> o(nsp);
        for (int64_t r = p, i = nsp - 1; i >= 0; --i) o[i] = r % out[i], r /= out[i];
        int64_t sum = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          int64_t ch = (m / mg) * cg + ci;
          for (int64_t t = 0; t < T; ++t) {
            std::vector<int64_t> k(nsp);
            for (int64_t r = t, i = nsp - 1; i >= 0; --i) k[i] = r % c.w[2 + i], r /= c.w[2 + i];
            int64_t off = 0;
            bool inside = true;
            for (size_t i = 0; i < nsp; ++i) {
              int64_t pos = o[i] * s[i] - pb[i] + k[i] * d[i];
              inside &= pos >= 0 && pos < c.x[2 + i];
              off = off * c.x[2 + i] + pos;
            }
            if (!inside) continue;
            int64_t xv = x.as_int64((n * C + ch) * I + off) - x_zp;
            int64_t wv = w.as_int64((m * cg + ci) * T + t) - w_zp[w_zp.size() == 1 ? 0 : m];
            sum += xv * wv;
          }
        }
        acc.push_back(sum);
      }
  std::vector<int64_t> dims{N, M};
  dims.insert(dims.end(), out.begin(), out.end());
  return {dims, acc};
}

std::vector<ConvCase> conv_cases() {
  return {
      {.x = {1, 2, 5, 5}, .w = {3, 2, 3, 3}, .pads = {1, 1, 1, 1}},
      {.x = {2, 3, 7, 6}, .w = {4, 3, 2, 3}, .strides = {2, 2}, .dils = {2, 1}, .pads = {0, 1, 2, 0},
       .xt = DType::i8, .per_channel = true},
      {.x = {1, 4, 5, 5}, .w = {6, 2, 3, 3}, .group = 2, .strides = {2, 1}, .wt = DType::i8, .per_channel = true},
      {.x = {1, 3, 6, 6}, .w = {3, 1, 3, 3}, .group = 3, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
      {.x = {1, 2, 5, 4}, .w = {2, 2, 2, 3}, .strides = {2, 2}, .auto_pad = "SAME_LOWER", .xt = DType::i8,
       .wt = DType::i8},
      {.x = {2, 2, 9}, .w = {3, 2, 3}, .dils = {2}, .pads = {2, 1}, .per_channel = true},
      {.x = {1, 2, 4, 4, 3}, .w = {2, 2, 2, 2, 2}, .strides = {2, 1, 1}, .pads = {1, 1, 1, 1, 1, 1}},
      {.x = {1, 1, 6, 6}, .w = {2, 1, 3, 3}, .strides = {2, 2}, .auto_pad = "VALID", .wt = DType::i8},
  };
}

TEST(ConvInteger, OnnxExample) {
  // x - 1 = 1..9 as 3x3; 2x2 all-ones kernel sums each window.
  Tensor x = q(DType::u8, {1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = q(DType::u8, {1, 1, 2, 2}, {1, 1, 1, 1});
  auto y = run_node("ConvInteger", {x, w, Tensor::scalar<uint8_t>(1), std::nullopt})[0];
  EXPECT_EQ(y.dtype(), DType::i32);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{12, 16, 24, 28}));
  auto p = run_node("ConvInteger", {x, w, Tensor::scalar<uint8_t>(1), std::nullopt},
                    {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0];
  EXPECT_EQ(p.dims(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(ints(p), (std::vector<int64_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
}

TEST(ConvInteger, MatchesNaiveOverShapes) {
  std::mt19937 rng(3);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(dims_str(c.x) + " * " + dims_str(c.w) + " " + c.auto_pad);
    Tensor x = random_q(c.xt, c.x, rng), w = random_q(c.wt, c.w, rng);
    Tensor x_zp = random_q(c.xt, {}, rng);
    Tensor w_zp = random_q(c.wt, c.per_channel ? std::vector<int64_t>{c.w[0]} : std::vector<int64_t>{}, rng);
    std::vector<int> wz;
    for (int64_t i = 0; i < w_zp.numel(); ++i) wz.push_back(static_cast<int>(w_zp.as_int64(i)));
    auto [dims, acc] = naive_conv(c, x, w, static_cast<int>(x_zp.as_int64(0)), wz);
    Tensor y = run_node("ConvInteger", {x, w, x_zp, w_zp}, conv_attrs(c))[0];
    EXPECT_EQ(y.dims(), dims);
    EXPECT_EQ(ints(y), acc);
    // Without zero points, both are 0.
    auto [d0, acc0] = naive_conv(c, x, w, 0, {0});
    EXPECT_EQ(ints(run_node("ConvInteger", {x, w}, conv_attrs(c))[0]), acc0);
  }
}

TEST(QLinearConv, PerChannelBiasTiesAndSaturation) {
  // x - 10 = [0,10,20,30]; scale 0.5. Channel 0: w - 1 = 2, bias 1, w_scale 1 ->
  // (2*xs + 1) * 0.5 = 0.5, 10.5, 20.5, 30.5 -> ties to even 0, 10, 20, 30 -> + 230, 260 saturates.
  // Channel 1: w - 0 = 1, bias -10, w_scale 0.25 -> (xs - 10) * 0.125 = -1.25, 0, 1.25, 2.5 -> -1, 0, 1, 2.
  Tensor x = q(DType::u8, {1, 1, 2, 2}, {10, 20, 30, 40});
  Tensor w = q(DType::u8, {2, 1, 1, 1}, {3, 1});
  auto y = run_node("QLinearConv", {x, fs(0.5f), Tensor::scalar<uint8_t>(10), w, f32({2}, {1.0f, 0.25f}),
                                    q(DType::u8, {2}, {1, 0}), fs(1.0f), Tensor::scalar<uint8_t>(230),
                                    Tensor::from_vector<int32_t>({2}, {1, -10})})[0];
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{230, 240, 250, 255, 229, 230, 231, 232}));
}

TEST(QLinearConv, MatchesNaiveOverShapes) {
  std::mt19937 rng(5);
  int64_t saturated = 0, interior = 0;  // the scales must exercise both
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(dims_str(c.x) + " * " + dims_str(c.w) + " " + c.auto_pad);
    Tensor x = random_q(c.xt, c.x, rng), w = random_q(c.wt, c.w, rng);
    Tensor x_zp = random_q(c.xt, {}, rng);
    int64_t M = c.w[0];
    Tensor w_zp = random_q(c.wt, c.per_channel ? std::vector<int64_t>{M} : std::vector<int64_t>{}, rng);
    std::vector<float> ws;
    for (int64_t m = 0; m < (c.per_channel ? M : 1); ++m) ws.push_back(0.002f + 0.003f * static_cast<float>(m));
    Tensor w_scale = c.per_channel ? f32({M}, ws) : fs(ws[0]);
    std::vector<int32_t> bias;
    for (int64_t m = 0; m < M; ++m) bias.push_back(static_cast<int32_t>(m * 997 % 4000) - 2000);
    DType yt = c.xt;  // output u8 or i8
    Tensor y_zp = yt == DType::u8 ? Tensor::scalar<uint8_t>(100) : Tensor::scalar<int8_t>(-7);
    float xs = 0.01f, ys = 0.05f;
    std::vector<int> wz;
    for (int64_t i = 0; i < w_zp.numel(); ++i) wz.push_back(static_cast<int>(w_zp.as_int64(i)));
    auto [dims, acc] = naive_conv(c, x, w, static_cast<int>(x_zp.as_int64(0)), wz);
    Tensor y = run_node("QLinearConv",
                        {x, fs(xs), x_zp, w, w_scale, w_zp, fs(ys), y_zp, Tensor::from_vector<int32_t>({M}, bias)},
                        conv_attrs(c))[0];
    ASSERT_EQ(y.dims(), dims);
    EXPECT_EQ(y.dtype(), yt);
    int lo = yt == DType::u8 ? 0 : -128, hi = yt == DType::u8 ? 255 : 127;
    int64_t per_m = static_cast<int64_t>(acc.size()) / (c.x[0] * M);
    for (size_t i = 0; i < acc.size(); ++i) {
      int64_t m = (static_cast<int64_t>(i) / per_m) % M;
      float mult = xs * ws[c.per_channel ? m : 0] / ys;
      int want = requant(acc[i] + bias[m], mult, static_cast<int>(y_zp.as_int64(0)), lo, hi);
      EXPECT_EQ(y.as_int64(i), want) << "element " << i;
      (want == lo || want == hi ? saturated : interior) += 1;
    }
  }
  EXPECT_GT(saturated, 0);
  EXPECT_GT(interior, 5 * saturated) << saturated << " saturated";
}

TEST(QLinearConv, Errors) {
  Tensor x = q(DType::u8, {1, 1, 2, 2}, {10, 20, 30, 40});
  Tensor w = q(DType::u8, {2, 1, 1, 1}, {3, 1});
  auto run = [&](Tensor w_zp, Tensor bias) {
    run_node("QLinearConv", {x, fs(0.5f), Tensor::scalar<uint8_t>(10), w, fs(1.0f), w_zp, fs(1.0f),
                             Tensor::scalar<uint8_t>(0), bias});
  };
  std::string e = error_of([&] { run(Tensor::scalar<int8_t>(0), Tensor::from_vector<int32_t>({2}, {0, 0})); });
  EXPECT_NE(e.find("w_zero_point is i8 but"), std::string::npos) << e;
  e = error_of([&] { run(Tensor::scalar<uint8_t>(0), Tensor::from_vector<int32_t>({3}, {0, 0, 0})); });
  EXPECT_NE(e.find("bias B must be i32 of shape [2]"), std::string::npos) << e;
  e = error_of([&] {
    run_node("ConvInteger", {x, q(DType::u8, {1, 2, 1, 1}, {1, 1})});
  });
  EXPECT_NE(e.find("needs 1 channels per group"), std::string::npos) << e;
}

TEST(QuantCost, CountsMultiplyAdds) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::u8, Shape{1, 4, 5, 5});
  Value* w = g.add_input("w", DType::u8, Shape{6, 2, 3, 3});
  Node* n = g.add_node("ConvInteger", {x, w}, {"y"}, {{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* a = g.add_input("a", DType::i8, Shape{2, 3, 4});
  Value* b = g.add_input("b", DType::i8, Shape{4, 5});
  Node* mm = g.add_node("MatMulInteger", {a, b}, {"z"});
  ops::infer_shapes(m);
  EXPECT_EQ(n->outputs[0]->shape, (Shape{1, 6, 5, 5}));
  auto c = ops::node_cost(*n);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flops, 2.0 * 6 * 25 * 2 * 9);            // outputs x (C/group * kernel taps)
  EXPECT_EQ(c->bytes_read, 100 + 108);                  // u8 x and w
  EXPECT_EQ(c->bytes_written, 6 * 25 * 4);              // i32 y
  EXPECT_EQ(ops::node_cost(*mm)->flops, 2.0 * 2 * 3 * 5 * 4);
}

// A symbolic batch (int8 models exported with a dynamic N) keeps the spatial output dims known:
// they are what batch 1 gives; unknown spatial input dims stay unknown.
TEST(QuantShapes, SymbolicBatchKeepsTheSpatialDims) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::u8, Shape(std::vector<Dim>{Dim::sym("N"), 4, 9, 10}));
  Value* w = g.add_input("w", DType::u8, Shape{6, 2, 3, 3});
  Node* n = g.add_node("ConvInteger", {x, w}, {"y"},
                       {{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                        {"strides", std::vector<int64_t>{2, 2}}});
  Value* x2 = g.add_input("x2", DType::u8, Shape(std::vector<Dim>{Dim::sym("N"), 4, Dim::sym("H"), 10}));
  Node* n2 = g.add_node("ConvInteger", {x2, w}, {"y2"}, {{"group", int64_t{2}}});
  ops::infer_shapes(m);
  EXPECT_EQ(n->outputs[0]->shape, Shape(std::vector<Dim>{Dim::sym("N"), 6, 5, 5}));
  EXPECT_EQ(n2->outputs[0]->shape, Shape(std::vector<Dim>{Dim::sym("N"), 6, Dim::unknown(), Dim::unknown()}));
}

}  // namespace
}  // namespace kiln

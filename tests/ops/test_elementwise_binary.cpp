// Binary arithmetic with broadcasting: hand-checked values, integer semantics (Div
// truncates, Mod signs), mixed-dtype Pow, BitShift, PRelu, and the broadcast engine
// against a naive index computation over many shape pairs.
#include <random>

#include "op_test_util.h"

namespace kiln {
namespace {
using namespace kiln::test;

Tensor run_bin(const std::string& op, Tensor a, Tensor b, std::map<std::string, Attribute> attrs = {},
               int64_t opset = 13, Shape* inferred = nullptr) {
  OneNode t(op, opset);
  t.input("a", std::move(a)).input("b", std::move(b));
  for (auto& [k, v] : attrs) t.attr(k, v);
  Tensor y = t.run1();
  EXPECT_EQ(t.out_shape(), Shape::of(y.dims()));
  EXPECT_EQ(t.out_dtype(), y.dtype());
  if (inferred) *inferred = t.out_shape();
  return y;
}

TEST(ElementwiseBinary, ArithmeticSameShape) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {10, 20, 30, 40});
  expect_tensor(run_bin("Add", a, b), {2, 2}, {11, 22, 33, 44});
  expect_tensor(run_bin("Sub", a, b), {2, 2}, {-9, -18, -27, -36});
  expect_tensor(run_bin("Mul", a, b), {2, 2}, {10, 40, 90, 160});
  expect_tensor(run_bin("Div", a, b), {2, 2}, {0.1, 0.1, 0.1, 0.1});
}

TEST(ElementwiseBinary, BroadcastRowColumnScalar) {
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run_bin("Add", m, f32({3}, {10, 20, 30})), {2, 3}, {11, 22, 33, 14, 25, 36});
  expect_tensor(run_bin("Add", m, f32({2, 1}, {100, 200})), {2, 3}, {101, 102, 103, 204, 205, 206});
  expect_tensor(run_bin("Mul", f32({}, {2}), m), {2, 3}, {2, 4, 6, 8, 10, 12});
  // both sides broadcast: [2,1] - [1,3] -> [2,3]
  expect_tensor(run_bin("Sub", f32({2, 1}, {10, 20}), f32({1, 3}, {1, 2, 3})), {2, 3}, {9, 8, 7, 19, 18, 17});
}

TEST(ElementwiseBinary, MismatchedBroadcastIsAnError) {
  EXPECT_THROW(run_bin("Add", f32({2, 3}, std::vector<float>(6)), f32({2}, {1, 2})), Error);
  EXPECT_THROW(run_bin("Add", f32({2}, {1, 2}), i32({2}, {1, 2})), Error);  // dtypes differ
}

TEST(ElementwiseBinary, SymbolicDimsBroadcast) {
  OneNode t("Add", 13);
  t.input_decl("a", DType::f32, Shape({Dim::sym("N"), Dim(1), Dim(4)}), f32({2, 1, 4}, std::vector<float>(8, 1)));
  t.input("b", f32({3, 1}, {1, 2, 3}));
  EXPECT_EQ(t.out_shape().str(), "[N,3,4]");
  Tensor y = t.run1();
  EXPECT_EQ(dims_str(y.dims()), "[2,3,4]");
  EXPECT_EQ(y.data<float>()[4], 3.0f);  // a=1 + b[1]=2
}

TEST(ElementwiseBinary, IntegerArithmetic) {
  expect_tensor(run_bin("Add", i32({3}, {1, -2, 3}), i32({1}, {10})), {3}, {11, 8, 13});
  expect_tensor(run_bin("Mul", i64({2}, {-3, 4}), i64({2}, {5, -6})), {2}, {-15, -24});
  // integer division truncates toward zero
  expect_tensor(run_bin("Div", i32({4}, {7, -7, 7, -7}), i32({4}, {2, 2, -2, -2})), {4}, {3, -3, -3, 3});
  EXPECT_THROW(run_bin("Div", i32({2}, {1, 2}), i32({2}, {1, 0})), Error);
  // uint8 wraps
  Tensor w = run_bin("Add", u8({1}, {250}), u8({1}, {10}));
  EXPECT_EQ(w.data<uint8_t>()[0], 4);
}

TEST(ElementwiseBinary, ModSignSemantics) {
  Tensor a = i32({4}, {7, -7, 7, -7}), b = i32({4}, {3, 3, -3, -3});
  // fmod = 0: sign of the divisor (Python)
  expect_tensor(run_bin("Mod", a, b), {4}, {1, 2, -2, -1});
  // fmod = 1: sign of the dividend (C)
  expect_tensor(run_bin("Mod", a, b, {{"fmod", 1}}), {4}, {1, -1, 1, -1});
  expect_tensor(run_bin("Mod", f32({2}, {5.5f, -5.5f}), f32({2}, {2, 2}), {{"fmod", 1}}), {2}, {1.5, -1.5});
  EXPECT_THROW(run_bin("Mod", f32({1}, {1}), f32({1}, {2})), Error);  // floats need fmod = 1
  EXPECT_THROW(run_bin("Mod", i32({1}, {1}), i32({1}, {0})), Error);
}

TEST(ElementwiseBinary, PowMixedDtypes) {
  expect_tensor(run_bin("Pow", f32({3}, {2, 3, 4}), f32({3}, {2, 0.5f, -1})), {3}, {4, std::sqrt(3.0), 0.25});
  expect_tensor(run_bin("Pow", f32({2}, {-3, 1.5f}), f32({}, {2})), {2}, {9, 2.25});
  // int base, float exponent -> int result (ONNX test pow_types_int32_float32)
  Tensor y = run_bin("Pow", i32({3}, {1, 2, 3}), f32({3}, {4, 5, 6}));
  EXPECT_EQ(y.dtype(), DType::i32);
  expect_tensor(y, {3}, {1, 32, 729});
  // float base, int64 exponent -> float result
  Tensor z = run_bin("Pow", f32({2}, {1.5f, 2}), i64({1}, {3}));
  EXPECT_EQ(z.dtype(), DType::f32);
  expect_tensor(z, {2}, {3.375, 8});
}

TEST(ElementwiseBinary, BitShift) {
  expect_tensor(run_bin("BitShift", u8({3}, {16, 4, 1}), u8({3}, {1, 2, 3}), {{"direction", "RIGHT"}}), {3},
                {8, 1, 0});
  Tensor l = run_bin("BitShift", Tensor::from_vector<uint32_t>({2}, {16, 1}),
                     Tensor::from_vector<uint32_t>({2}, {1, 31}), {{"direction", "LEFT"}}, 11);
  expect_tensor(l, {2}, {32, 2147483648.0});
  EXPECT_THROW(run_bin("BitShift", i32({1}, {1}), i32({1}, {1}), {{"direction", "LEFT"}}), Error);
  EXPECT_THROW(run_bin("BitShift", u8({1}, {1}), u8({1}, {1}), {{"direction", "UP"}}), Error);
}

TEST(ElementwiseBinary, PReluSlopeBroadcastsToX) {
  // per-channel slope [C,1,1] on [1,C,1,2]
  Tensor x = f32({1, 2, 1, 2}, {-1, 2, -3, 4});
  expect_tensor(run_bin("PRelu", x, f32({2, 1, 1}, {0.5f, 0.25f})), {1, 2, 1, 2}, {-0.5, 2, -0.75, 4});
  expect_tensor(run_bin("PRelu", f32({3}, {-2, 0, 2}), f32({1}, {0.1f})), {3}, {-0.2, 0, 2});
  // the slope may not make the output bigger than X (unidirectional)
  EXPECT_THROW(run_bin("PRelu", f32({2}, {-1, 1}), f32({3, 2}, std::vector<float>(6))), Error);
}

TEST(ElementwiseBinary, HalfPrecisionThroughF32) {
  Tensor y = run_bin("Mul", f32({2}, {1.5f, -2}).cast(DType::f16), f32({2}, {2, 3}).cast(DType::f16));
  EXPECT_EQ(y.dtype(), DType::f16);
  expect_tensor(y, {2}, {3, -6});
}

// out[i] computed from multi-indices, the obvious way.
std::vector<float> naive_add(const std::vector<int64_t>& ad, const std::vector<float>& a, const std::vector<int64_t>& bd,
                             const std::vector<float>& b, std::vector<int64_t>* od) {
  size_t r = std::max(ad.size(), bd.size());
  std::vector<int64_t> A(r, 1), B(r, 1);
  std::copy(ad.begin(), ad.end(), A.begin() + (r - ad.size()));
  std::copy(bd.begin(), bd.end(), B.begin() + (r - bd.size()));
  od->assign(r, 0);
  for (size_t i = 0; i < r; ++i) (*od)[i] = std::max(A[i], B[i]);
  std::vector<float> out(numel_of(*od));
  for (int64_t lin = 0; lin < static_cast<int64_t>(out.size()); ++lin) {
    int64_t rest = lin, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t k = rest % (*od)[d];
      rest /= (*od)[d];
      ia += (A[d] == 1 ? 0 : k) * sa;
      ib += (B[d] == 1 ? 0 : k) * sb;
      sa *= A[d];
      sb *= B[d];
    }
    out[lin] = a[ia] + 1000 * b[ib];
  }
  return out;
}

TEST(ElementwiseBinary, BroadcastEngineMatchesNaiveIndexing) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> rank_d(0, 4), dim_d(1, 4), coin(0, 2);
  for (int trial = 0; trial < 150; ++trial) {
    std::vector<int64_t> od;
    int r = rank_d(rng);
    for (int i = 0; i < r; ++i) od.push_back(dim_d(rng));
    auto derive = [&] {
      std::vector<int64_t> d;
      int drop = std::uniform_int_distribution<int>(0, r)(rng);
      for (int i = drop; i < r; ++i) d.push_back(coin(rng) == 0 ? 1 : od[i]);
      return d;
    };
    std::vector<int64_t> ad = derive(), bd = derive();
    std::vector<float> a(numel_of(ad)), b(numel_of(bd));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
    std::vector<int64_t> want_dims;
    std::vector<float> want = naive_add(ad, a, bd, b, &want_dims);
    // a + 1000 * b, as Add(a, Mul(b, 1000)) would be two nodes; scale b up front instead
    std::vector<float> b1000(b.size());
    for (size_t i = 0; i < b.size(); ++i) b1000[i] = 1000 * b[i];
    SCOPED_TRACE(dims_str(ad) + " + " + dims_str(bd));
    Tensor y = run_bin("Add", f32(ad, a), f32(bd, b1000));
    ASSERT_EQ(dims_str(y.dims()), dims_str(want_dims));
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(y.data<float>()[i], want[i]) << "element " << i;
  }
}

TEST(ElementwiseBinary, LargeBroadcastParallelMatchesSerialFormula) {
  // [64, 128, 16] + [16]: over the parallel threshold, with a row broadcast
  const int64_t n = 64 * 128 * 16;
  std::vector<float> a(n), b(16);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 1000);
  for (int i = 0; i < 16; ++i) b[i] = static_cast<float>(i) * 0.5f;
  Tensor y = run_bin("Add", f32({64, 128, 16}, a), f32({16}, b));
  for (int64_t i = 0; i < n; i += 101) ASSERT_EQ(y.data<float>()[i], a[i] + b[i % 16]);
}

TEST(ElementwiseBinary, CostIsOneFlopPerOutput) {
  OneNode t("Add", 13);
  t.input("a", f32({4, 3}, std::vector<float>(12))).input("b", f32({3}, {1, 2, 3}));
  auto c = ops::node_cost(t.node());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flops, 12);
  EXPECT_EQ(c->bytes_read, (12 + 3) * 4);
  EXPECT_EQ(c->bytes_written, 12 * 4);
}

}  // namespace
}  // namespace kiln

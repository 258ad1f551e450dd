// Unary math and activations: each op on a few hand-checked values, plus dtype variants
// (f64, f16, integers), attributes and errors.
#include <cmath>

#include "op_test_util.h"

namespace kiln {
namespace {
using namespace kiln::test;

// Runs a one-input op on f32 [n] and returns the values.
Tensor run_unary(const std::string& op, Tensor x, std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
  OneNode t(op, opset);
  t.input("x", std::move(x));
  for (auto& [k, v] : attrs) t.attr(k, v);
  Tensor y = t.run1();
  EXPECT_EQ(t.out_shape(), Shape::of(y.dims()));
  return y;
}

struct Case {
  std::string op;
  std::vector<float> in;
  std::vector<double> want;
};

TEST(ElementwiseUnary, MathOnHandValues) {
  const double pi = 3.141592653589793;
  std::vector<Case> cases = {
      {"Abs", {-2.5f, 0, 3}, {2.5, 0, 3}},
      {"Neg", {-2.5f, 0, 3}, {2.5, 0, -3}},
      {"Sign", {-2.5f, 0, 3}, {-1, 0, 1}},
      {"Ceil", {-1.5f, 1.2f, 2}, {-1, 2, 2}},
      {"Floor", {-1.5f, 1.2f, 2}, {-2, 1, 2}},
      {"Round", {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f}, {0, 2, 2, -0.0, -2, 3}},  // ties to even
      {"Reciprocal", {2, -4, 0.5f}, {0.5, -0.25, 2}},
      {"Sqrt", {4, 9, 0}, {2, 3, 0}},
      {"Exp", {0, 1, -1}, {1, M_E, 1 / M_E}},
      {"Log", {1, static_cast<float>(M_E), 0}, {0, 1, -INFINITY}},
      {"Sin", {0, static_cast<float>(pi / 2)}, {0, 1}},
      {"Cos", {0, static_cast<float>(pi)}, {1, -1}},
      {"Tan", {0, static_cast<float>(pi / 4)}, {0, 1}},
      {"Asin", {0, 1}, {0, pi / 2}},
      {"Acos", {1, 0}, {0, pi / 2}},
      {"Atan", {0, 1}, {0, pi / 4}},
      {"Sinh", {0, 1}, {0, (M_E - 1 / M_E) / 2}},
      {"Cosh", {0, 1}, {1, (M_E + 1 / M_E) / 2}},
      {"Tanh", {0, 1}, {0, (M_E - 1 / M_E) / (M_E + 1 / M_E)}},
      {"Asinh", {0, 1}, {0, std::log(1 + std::sqrt(2.0))}},
      {"Acosh", {1, 2}, {0, std::log(2 + std::sqrt(3.0))}},
      {"Atanh", {0, 0.5f}, {0, 0.5 * std::log(3.0)}},
      {"Erf", {0, 1, -1}, {0, 0.8427007929497149, -0.8427007929497149}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    Tensor y = run_unary(c.op, f32({static_cast<int64_t>(c.in.size())}, c.in));
    expect_tensor(y, {static_cast<int64_t>(c.in.size())}, c.want);
  }
}

TEST(ElementwiseUnary, ActivationsWithDefaults) {
  const double e = M_E;
  std::vector<Case> cases = {
      {"Relu", {-1, 0, 2}, {0, 0, 2}},
      {"LeakyRelu", {-1, 2}, {-0.01, 2}},
      {"ThresholdedRelu", {0.5f, 1, 1.5f}, {0, 0, 1.5}},
      {"Elu", {-1, 2}, {1 / e - 1, 2}},
      {"Celu", {-1, 2}, {1 / e - 1, 2}},
      {"Selu", {-1, 2}, {1.0507009873554805 * 1.6732632423543772 * (1 / e - 1), 2 * 1.0507009873554805}},
      {"Sigmoid", {0, 1, -100}, {0.5, 1 / (1 + 1 / e), 1 / (1 + std::exp(100.0))}},
      {"HardSigmoid", {-5, 0, 1, 5}, {0, 0.5, 0.7, 1}},
      {"HardSwish", {-4, 0, 1, 4}, {0, 0, 1 * (1 / 6.0 + 0.5), 4}},
      {"Softplus", {0, 1, 100}, {std::log(2.0), std::log(1 + e), 100}},
      {"Softsign", {1, -3}, {0.5, -0.75}},
      {"Mish", {0, 1}, {0, std::tanh(std::log(1 + e))}},
      {"Gelu", {0, 1, -1}, {0, 0.8413447460685429, -0.15865525393145707}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    Tensor y = run_unary(c.op, f32({static_cast<int64_t>(c.in.size())}, c.in));
    expect_tensor(y, {static_cast<int64_t>(c.in.size())}, c.want);
  }
}

TEST(ElementwiseUnary, ActivationAttributes) {
  expect_tensor(run_unary("LeakyRelu", f32({2}, {-2, 3}), {{"alpha", 0.5f}}), {2}, {-1, 3});
  expect_tensor(run_unary("ThresholdedRelu", f32({2}, {2, 3}), {{"alpha", 2.5f}}), {2}, {0, 3});
  expect_tensor(run_unary("Elu", f32({1}, {-1}), {{"alpha", 2.0f}}), {1}, {2 * (1 / M_E - 1)});
  // celu(-1; alpha=2) = 2 (e^(-1/2) - 1)
  expect_tensor(run_unary("Celu", f32({1}, {-1}), {{"alpha", 2.0f}}), {1}, {2 * (std::exp(-0.5) - 1)});
  expect_tensor(run_unary("Selu", f32({2}, {-1, 1}), {{"alpha", 2.0f}, {"gamma", 3.0f}}), {2},
                {3 * 2 * (1 / M_E - 1), 3});
  expect_tensor(run_unary("HardSigmoid", f32({2}, {1, -1}), {{"alpha", 0.5f}, {"beta", 0.25f}}), {2}, {0.75, 0});
  // tanh approximation of gelu at 1: 0.5 (1 + tanh(sqrt(2/pi) * 1.044715))
  double k = std::sqrt(2 / M_PI) * 1.044715;
  expect_tensor(run_unary("Gelu", f32({1}, {1}), {{"approximate", "tanh"}}), {1}, {0.5 * (1 + std::tanh(k))});
  EXPECT_THROW(run_unary("Gelu", f32({1}, {1}), {{"approximate", "fast"}}), Error);
}

TEST(ElementwiseUnary, F64AndHalfPrecision) {
  Tensor y = run_unary("Exp", f64({2}, {0, 2}));
  EXPECT_EQ(y.dtype(), DType::f64);
  expect_tensor(y, {2}, {1, std::exp(2.0)}, 1e-12);
  Tensor h = run_unary("Sqrt", f32({2}, {4, 2}).cast(DType::f16));
  EXPECT_EQ(h.dtype(), DType::f16);
  expect_tensor(h, {2}, {2, 1.41421}, 1e-3);
  Tensor b = run_unary("Relu", f32({2}, {-4, 2}).cast(DType::bf16));
  EXPECT_EQ(b.dtype(), DType::bf16);
  expect_tensor(b, {2}, {0, 2});
}

TEST(ElementwiseUnary, IntegerAbsNegSignRelu) {
  expect_tensor(run_unary("Abs", i32({3}, {-7, 0, 5})), {3}, {7, 0, 5});
  expect_tensor(run_unary("Neg", i64({2}, {-7, 5})), {2}, {7, -5});
  expect_tensor(run_unary("Sign", i32({3}, {-7, 0, 5})), {3}, {-1, 0, 1});
  expect_tensor(run_unary("Relu", i32({3}, {-7, 0, 5})), {3}, {0, 0, 5});
  // the most negative int8 wraps instead of overflowing
  Tensor a = run_unary("Abs", Tensor::from_vector<int8_t>({1}, {-128}));
  EXPECT_EQ(a.data<int8_t>()[0], -128);
  EXPECT_THROW(run_unary("Exp", i32({1}, {1})), Error);
}

TEST(ElementwiseUnary, IsNaNIsInfNot) {
  Tensor x = f32({4}, {1, NAN, INFINITY, -INFINITY});
  {
    OneNode t("IsNaN", 13);
    t.input("x", x);
    Tensor y = t.run1();
    EXPECT_EQ(t.out_dtype(), DType::boolean);
    expect_tensor(y, {4}, {0, 1, 0, 0});
  }
  expect_tensor(run_unary("IsInf", x), {4}, {0, 0, 1, 1});
  expect_tensor(run_unary("IsInf", x, {{"detect_negative", 0}}), {4}, {0, 0, 1, 0});
  expect_tensor(run_unary("IsInf", x, {{"detect_positive", 0}}), {4}, {0, 0, 0, 1});
  expect_tensor(run_unary("Not", boolean({3}, {true, false, true})), {3}, {0, 1, 0});
  EXPECT_THROW(run_unary("Not", f32({1}, {1})), Error);
}

TEST(ElementwiseUnary, SymbolicShapeFlowsThrough) {
  OneNode t("Tanh", 13);
  t.input_decl("x", DType::f32, Shape({Dim::sym("N"), Dim(3)}), f32({2, 3}, {0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(t.out_shape().str(), "[N,3]");
  Tensor y = t.run1();
  EXPECT_EQ(dims_str(y.dims()), "[2,3]");
  EXPECT_NEAR(y.data<float>()[3], std::tanh(1.0), 1e-6);
}

TEST(ElementwiseUnary, LargeInputRunsInParallelWithSameResult) {
  const int64_t n = 200000;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 17) - 8;
  Tensor y = run_unary("Sigmoid", f32({n}, v));
  for (int64_t i = 0; i < n; i += 997) EXPECT_NEAR(y.data<float>()[i], 1 / (1 + std::exp(-double(v[i]))), 1e-6);
}

TEST(ElementwiseUnary, CostCountsFlopsPerElement) {
  OneNode t("Exp", 13);
  t.input("x", f32({2, 5}, std::vector<float>(10, 0)));
  auto cost = ops::node_cost(t.node());
  ASSERT_TRUE(cost.has_value());
  EXPECT_GT(cost->flops, 10);  // a few flops per element
  EXPECT_EQ(cost->bytes_read, 40);
  EXPECT_EQ(cost->bytes_written, 40);
}

}  // namespace
}  // namespace kiln

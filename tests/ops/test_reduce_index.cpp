// Softmax/LogSoftmax/Hardmax (opset < 13 coerces to 2-D, 13+ is one axis), ArgMax/ArgMin,
// TopK and CumSum.
#include <cmath>

#include "op_test_util.h"

namespace kiln {
namespace {
using namespace kiln::test;

Tensor run1(const std::string& op, Tensor x, std::map<std::string, Attribute> attrs, int64_t opset = 13) {
  OneNode t(op, opset);
  t.input("x", std::move(x));
  for (auto& [k, v] : attrs) t.attr(k, v);
  Tensor y = t.run1();
  EXPECT_EQ(t.out_shape(), Shape::of(y.dims()));
  return y;
}

// softmax of a row, the naive way
std::vector<double> softmax_of(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  for (double& x : v) x = std::exp(x) / s;
  return v;
}

TEST(ReduceIndex, SoftmaxOpset13IsAlongOneAxis) {
  Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // axis = 1 of [2,2,2]: pairs (0,2), (1,3), (4,6), (5,7) -> each pair differs by 2
  auto p = softmax_of({0, 2});
  expect_tensor(run1("Softmax", x, {{"axis", 1}}), {2, 2, 2}, {p[0], p[0], p[1], p[1], p[0], p[0], p[1], p[1]});
  // default axis -1: pairs differ by 1
  auto q = softmax_of({0, 1});
  expect_tensor(run1("Softmax", x, {}), {2, 2, 2}, {q[0], q[1], q[0], q[1], q[0], q[1], q[0], q[1]});
}

TEST(ReduceIndex, SoftmaxBeforeOpset13CoercesTo2D) {
  Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // default axis 1: each row is the 4 elements of x[i]
  auto p = softmax_of({0, 1, 2, 3});
  expect_tensor(run1("Softmax", x, {}, 11), {2, 2, 2}, {p[0], p[1], p[2], p[3], p[0], p[1], p[2], p[3]});
  // axis 0: one row of all 8
  auto all = softmax_of({0, 1, 2, 3, 4, 5, 6, 7});
  expect_tensor(run1("Softmax", x, {{"axis", 0}}, 11), {2, 2, 2}, all);
  // LogSoftmax with the same coercion
  std::vector<double> lp;
  for (double v : p) lp.push_back(std::log(v));
  expect_tensor(run1("LogSoftmax", x, {}, 9), {2, 2, 2}, {lp[0], lp[1], lp[2], lp[3], lp[0], lp[1], lp[2], lp[3]});
}

TEST(ReduceIndex, SoftmaxIsStableAndChecksAxis) {
  expect_tensor(run1("Softmax", f32({2}, {1000, 1000}), {}), {2}, {0.5, 0.5});
  expect_tensor(run1("LogSoftmax", f32({2}, {1000, 1000}), {}), {2}, {-std::log(2.0), -std::log(2.0)});
  EXPECT_THROW(run1("Softmax", f32({2}, {1, 2}), {{"axis", 1}}), Error);
  EXPECT_THROW(run1("Softmax", i32({2}, {1, 2}), {}), Error);
}

TEST(ReduceIndex, Hardmax) {
  Tensor x = f32({2, 3}, {1, 3, 3, 5, 0, 2});
  expect_tensor(run1("Hardmax", x, {}), {2, 3}, {0, 1, 0, 1, 0, 0});  // first max wins
  expect_tensor(run1("Hardmax", x, {{"axis", 0}}), {2, 3}, {0, 1, 1, 1, 0, 0});
}

TEST(ReduceIndex, HardmaxBeforeOpset13CoercesTo2D) {
  // rows of 4 (default axis 1 on [2,2,2]); the max of each row is its last element
  Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 7, 4, 5, 6});
  expect_tensor(run1("Hardmax", x, {}, 11), {2, 2, 2}, {0, 0, 0, 1, 1, 0, 0, 0});
  expect_tensor(run1("Hardmax", x, {}, 13), {2, 2, 2}, {0, 1, 0, 1, 1, 0, 0, 1});
}

TEST(ReduceIndex, ArgMaxArgMin) {
  Tensor x = f32({2, 3}, {1, 5, 5, 7, 0, 7});
  Tensor a = run1("ArgMax", x, {{"axis", 1}});
  EXPECT_EQ(a.dtype(), DType::i64);
  expect_tensor(a, {2, 1}, {1, 0});
  expect_tensor(run1("ArgMax", x, {{"axis", 1}, {"select_last_index", 1}}, 12), {2, 1}, {2, 2});
  expect_tensor(run1("ArgMax", x, {{"keepdims", 0}}), {3}, {1, 0, 1});
  expect_tensor(run1("ArgMin", x, {{"axis", -1}, {"keepdims", 0}}), {2}, {0, 1});
  expect_tensor(run1("ArgMin", i64({3}, {4, -2, -2}), {{"select_last_index", 1}}), {1}, {2});
  EXPECT_THROW(run1("ArgMax", x, {{"axis", 2}}), Error);
}

TEST(ReduceIndex, TopKWithKInput) {
  OneNode t("TopK", 11);
  t.input("x", f32({2, 4}, {1, 4, 2, 4, 9, 8, 7, 6})).constant("k", i64({1}, {2})).outputs(2);
  EXPECT_EQ(t.out_shape(0).str(), "[2,2]");
  EXPECT_EQ(t.out_dtype(1), DType::i64);
  auto out = t.run();
  expect_tensor(out[0], {2, 2}, {4, 4, 9, 8});
  expect_tensor(out[1], {2, 2}, {1, 3, 0, 1});  // tie: lower index first
}

TEST(ReduceIndex, TopKSmallestAlongAxis0) {
  OneNode t("TopK", 11);
  t.input("x", f32({3, 2}, {5, 1, 2, 3, 2, 0})).constant("k", i64({1}, {2})).outputs(2);
  t.attr("axis", 0).attr("largest", 0);
  auto out = t.run();
  expect_tensor(out[0], {2, 2}, {2, 0, 2, 1});
  expect_tensor(out[1], {2, 2}, {1, 2, 2, 0});
}

TEST(ReduceIndex, TopKSmallestTiesTakeLowerIndex) {
  OneNode t("TopK", 11);
  t.input("x", i32({5}, {3, 1, 2, 1, 1})).constant("k", i64({1}, {3})).attr("largest", 0).outputs(2);
  auto out = t.run();
  expect_tensor(out[0], {3}, {1, 1, 1});
  expect_tensor(out[1], {3}, {1, 3, 4});
}

TEST(ReduceIndex, TopKAttributeBeforeOpset10AndErrors) {
  OneNode t("TopK", 9);
  t.input("x", f32({4}, {3, 1, 4, 1})).attr("k", 3).outputs(2);
  auto out = t.run();
  expect_tensor(out[0], {3}, {4, 3, 1});
  expect_tensor(out[1], {3}, {2, 0, 1});
  OneNode bad("TopK", 11);
  bad.input("x", f32({2}, {1, 2})).constant("k", i64({1}, {3})).outputs(2);
  EXPECT_THROW(bad.run(), Error);
}

TEST(ReduceIndex, TopKUnknownKLeavesDimUnknown) {
  OneNode t("TopK", 11);
  t.input("x", f32({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})).input("k", i64({1}, {1})).outputs(2);
  EXPECT_EQ(t.out_shape(0).str(), "[2,?]");
  auto out = t.run();
  expect_tensor(out[0], {2, 1}, {4, 9});
}

TEST(ReduceIndex, CumSumVariants) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto cum = [&](int64_t axis, int exclusive, int reverse) {
    OneNode t("CumSum", 13);
    t.input("x", x).constant("axis", i64({}, {axis})).attr("exclusive", exclusive).attr("reverse", reverse);
    return t.run1();
  };
  expect_tensor(cum(1, 0, 0), {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_tensor(cum(0, 0, 0), {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_tensor(cum(1, 1, 0), {2, 3}, {0, 1, 3, 0, 4, 9});
  expect_tensor(cum(1, 0, 1), {2, 3}, {6, 5, 3, 15, 11, 6});
  expect_tensor(cum(-1, 1, 1), {2, 3}, {5, 3, 0, 11, 6, 0});
  OneNode ti("CumSum", 11);
  ti.input("x", i32({4}, {1, -2, 3, 10})).constant("axis", i32({1}, {0}));
  expect_tensor(ti.run1(), {4}, {1, -1, 2, 12});
  EXPECT_THROW(cum(2, 0, 0), Error);
}

TEST(ReduceIndex, SoftmaxCostIsAFewFlopsPerElement) {
  OneNode t("Softmax", 13);
  t.input("x", f32({2, 8}, std::vector<float>(16)));
  auto c = ops::node_cost(t.node());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flops, 5 * 16);
}

}  // namespace
}  // namespace kiln

// Reductions: every Reduce* op on a hand-checked 2x3 input, axes as attribute and (for
// ReduceSum from opset 13) as input, keepdims, noop_with_empty_axes, integers, errors,
// and the collapsed loop against a naive sum over many shapes and axis sets.
#include <random>

#include "op_test_util.h"

namespace kiln {
namespace {
using namespace kiln::test;

// x = [[1, 2, 3], [4, 5, 6]]
Tensor x23() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

Tensor run_reduce(const std::string& op, Tensor x, std::map<std::string, Attribute> attrs, int64_t opset = 12,
                  Shape* inferred = nullptr) {
  OneNode t(op, opset);
  t.input("x", std::move(x));
  for (auto& [k, v] : attrs) t.attr(k, v);
  Tensor y = t.run1();
  EXPECT_EQ(t.out_shape(), Shape::of(y.dims()));
  EXPECT_EQ(t.out_dtype(), y.dtype());
  if (inferred) *inferred = t.out_shape();
  return y;
}

TEST(Reduce, EachOpOverAxis1) {
  std::map<std::string, Attribute> a = {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}};
  expect_tensor(run_reduce("ReduceSum", x23(), a), {2}, {6, 15});
  expect_tensor(run_reduce("ReduceMean", x23(), a), {2}, {2, 5});
  expect_tensor(run_reduce("ReduceMax", x23(), a), {2}, {3, 6});
  expect_tensor(run_reduce("ReduceMin", x23(), a), {2}, {1, 4});
  expect_tensor(run_reduce("ReduceProd", x23(), a), {2}, {6, 120});
  expect_tensor(run_reduce("ReduceSumSquare", x23(), a), {2}, {14, 77});
  expect_tensor(run_reduce("ReduceL1", f32({2, 2}, {-1, 2, -3, -4}), a), {2}, {3, 7});
  expect_tensor(run_reduce("ReduceL2", f32({2, 2}, {3, -4, 6, 8}), a), {2}, {5, 10});
  expect_tensor(run_reduce("ReduceLogSum", x23(), a), {2}, {std::log(6.0), std::log(15.0)});
  expect_tensor(run_reduce("ReduceLogSumExp", x23(), a), {2},
                {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
                 std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0))});
}

TEST(Reduce, KeepdimsAndAllAxes) {
  expect_tensor(run_reduce("ReduceSum", x23(), {{"axes", std::vector<int64_t>{0}}}), {1, 3}, {5, 7, 9});
  expect_tensor(run_reduce("ReduceSum", x23(), {}), {1, 1}, {21});  // no axes: all, keepdims default 1
  expect_tensor(run_reduce("ReduceMax", x23(), {{"keepdims", 0}}), {}, {6});
  expect_tensor(run_reduce("ReduceMean", x23(), {{"axes", std::vector<int64_t>{-1, 0}}, {"keepdims", 0}}), {}, {3.5});
  // middle axis of [2,3,2]
  Tensor x = f32({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  expect_tensor(run_reduce("ReduceSum", x, {{"axes", std::vector<int64_t>{1}}}), {2, 1, 2}, {9, 12, 27, 30});
}

TEST(Reduce, LogSumExpIsStableForLargeValues) {
  expect_tensor(run_reduce("ReduceLogSumExp", f32({2}, {1000, 1000}), {{"keepdims", 0}}), {}, {1000 + std::log(2.0)});
}

TEST(Reduce, ReduceSumAxesInputFromOpset13) {
  {
    OneNode t("ReduceSum", 13);
    t.input("x", x23()).constant("axes", i64({1}, {0})).attr("keepdims", 0);
    EXPECT_EQ(t.out_shape().str(), "[3]");
    expect_tensor(t.run1(), {3}, {5, 7, 9});
  }
  {  // axes omitted: reduce all
    OneNode t("ReduceSum", 13);
    t.input("x", x23());
    expect_tensor(t.run1(), {1, 1}, {21});
  }
  {  // empty axes with noop_with_empty_axes: identity
    OneNode t("ReduceSum", 13);
    t.input("x", x23()).constant("axes", i64({0}, {})).attr("noop_with_empty_axes", 1);
    EXPECT_EQ(t.out_shape().str(), "[2,3]");
    expect_tensor(t.run1(), {2, 3}, {1, 2, 3, 4, 5, 6});
  }
  {  // axes only known at run time: keepdims keeps the rank
    OneNode t("ReduceSum", 13);
    t.input("x", x23()).input("axes", i64({1}, {1}));
    EXPECT_EQ(t.out_shape().str(), "[?,?]");
    expect_tensor(t.run1(), {2, 1}, {6, 15});
  }
}

TEST(Reduce, SymbolicDimsSurvive) {
  OneNode t("ReduceMean", 13);
  t.input_decl("x", DType::f32, Shape({Dim::sym("N"), Dim(4)}), f32({1, 4}, {1, 2, 3, 4}));
  t.attr("axes", std::vector<int64_t>{-1});
  EXPECT_EQ(t.out_shape().str(), "[N,1]");
  expect_tensor(t.run1(), {1, 1}, {2.5});
}

TEST(Reduce, IntegersAndEmpty) {
  std::map<std::string, Attribute> a = {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}};
  Tensor xi = i32({2, 2}, {-3, 7, 4, 4});
  expect_tensor(run_reduce("ReduceSum", xi, a), {2}, {4, 8});
  expect_tensor(run_reduce("ReduceMax", xi, a), {2}, {7, 4});
  expect_tensor(run_reduce("ReduceMin", i64({2, 2}, {-3, 7, 4, 4}), a), {2}, {-3, 4});
  expect_tensor(run_reduce("ReduceMean", xi, a), {2}, {2, 4});
  expect_tensor(run_reduce("ReduceProd", xi, a), {2}, {-21, 16});
  EXPECT_THROW(run_reduce("ReduceLogSum", xi, a), Error);
  // reducing an empty dim gives the identity
  Tensor e = f32({2, 0}, {});
  expect_tensor(run_reduce("ReduceSum", e, a), {2}, {0, 0});
  expect_tensor(run_reduce("ReduceProd", e, a), {2}, {1, 1});
  expect_tensor(run_reduce("ReduceMax", e, a), {2}, {-INFINITY, -INFINITY});
}

TEST(Reduce, HalfPrecision) {
  Tensor y = run_reduce("ReduceSum", x23().cast(DType::f16), {{"axes", std::vector<int64_t>{0}}, {"keepdims", 0}});
  EXPECT_EQ(y.dtype(), DType::f16);
  expect_tensor(y, {3}, {5, 7, 9});
}

TEST(Reduce, BadAxesAreErrors) {
  EXPECT_THROW(run_reduce("ReduceSum", x23(), {{"axes", std::vector<int64_t>{2}}}), Error);
  EXPECT_THROW(run_reduce("ReduceSum", x23(), {{"axes", std::vector<int64_t>{1, -1}}}), Error);
  OneNode t("ReduceSum", 13);
  t.input("x", x23()).input("axes", i64({1}, {5}));
  EXPECT_THROW(t.run1(), Error);
}

TEST(Reduce, CollapsedLoopMatchesNaiveSum) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    int r = std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> dims;
    std::vector<int64_t> axes;
    for (int i = 0; i < r; ++i) {
      dims.push_back(std::uniform_int_distribution<int>(1, 4)(rng));
      if (std::uniform_int_distribution<int>(0, 1)(rng)) axes.push_back(i);
    }
    if (axes.empty()) axes.push_back(r - 1);
    std::vector<float> v(numel_of(dims));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7) % 13);
    // naive: every input element adds into the output index with reduced coords zeroed
    std::vector<int64_t> od = dims;
    for (int64_t a : axes) od[a] = 1;
    std::vector<double> want(numel_of(od), 0);
    for (int64_t lin = 0; lin < static_cast<int64_t>(v.size()); ++lin) {
      int64_t rest = lin, o = 0, os = 1;
      for (int d = r - 1; d >= 0; --d) {
        int64_t k = rest % dims[d];
        rest /= dims[d];
        o += (od[d] == 1 ? 0 : k) * os;
        os *= od[d];
      }
      want[o] += v[lin];
    }
    SCOPED_TRACE(dims_str(dims) + " axes " + dims_str(axes));
    Tensor y = run_reduce("ReduceSum", f32(dims, v), {{"axes", axes}});
    expect_tensor(y, od, want);
  }
}

TEST(Reduce, LargeInputSplitOverThreadsMatchesNaive) {
  // [3, 300, 128]: over the parallel threshold; outer dims kept, inner reduced (and vice versa)
  const int64_t a = 3, b = 300, k = 128;
  std::vector<float> v(a * b * k);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 31) % 17);
  std::vector<double> last(a * b, 0), mid(a * k, 0);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t t = 0; t < k; ++t) {
        last[i * b + j] += v[(i * b + j) * k + t];
        mid[i * k + t] += v[(i * b + j) * k + t];
      }
  expect_tensor(run_reduce("ReduceSum", f32({a, b, k}, v), {{"axes", std::vector<int64_t>{2}}}), {a, b, 1}, last);
  expect_tensor(run_reduce("ReduceSum", f32({a, b, k}, v), {{"axes", std::vector<int64_t>{1}}}), {a, 1, k}, mid);
  std::vector<double> mx(a * b);
  for (int64_t r = 0; r < a * b; ++r) {
    double m = -1e30, s = 0;
    for (int64_t t = 0; t < k; ++t) m = std::max<double>(m, v[r * k + t]);
    for (int64_t t = 0; t < k; ++t) s += std::exp(v[r * k + t] - m);
    mx[r] = m + std::log(s);
  }
  expect_tensor(run_reduce("ReduceLogSumExp", f32({a, b, k}, v), {{"axes", std::vector<int64_t>{-1}}}), {a, b, 1}, mx);
}

TEST(Reduce, CostIsOneFlopPerInput) {
  OneNode t("ReduceMean", 13);
  t.input("x", f32({4, 8}, std::vector<float>(32))).attr("axes", std::vector<int64_t>{1});
  auto c = ops::node_cost(t.node());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flops, 32);
  EXPECT_EQ(c->bytes_read, 128);
  EXPECT_EQ(c->bytes_written, 16);
}

}  // namespace
}  // namespace kiln

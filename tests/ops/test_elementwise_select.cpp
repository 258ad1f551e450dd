// Comparisons, logic, variadic Sum/Mean/Max/Min, Where, Clip (both opset forms), Cast
// and CastLike.
#include "op_test_util.h"

namespace kiln {
namespace {
using namespace kiln::test;

Tensor run_n(const std::string& op, std::vector<Tensor> ins, std::map<std::string, Attribute> attrs = {},
             int64_t opset = 13) {
  OneNode t(op, opset);
  for (size_t i = 0; i < ins.size(); ++i) t.input("x" + std::to_string(i), ins[i]);
  for (auto& [k, v] : attrs) t.attr(k, v);
  Tensor y = t.run1();
  EXPECT_EQ(t.out_shape(), Shape::of(y.dims()));
  EXPECT_EQ(t.out_dtype(), y.dtype());
  return y;
}

TEST(ElementwiseSelect, Comparisons) {
  Tensor a = f32({3}, {1, 2, 3}), b = f32({1}, {2});
  Tensor eq = run_n("Equal", {a, b});
  EXPECT_EQ(eq.dtype(), DType::boolean);
  expect_tensor(eq, {3}, {0, 1, 0});
  expect_tensor(run_n("Greater", {a, b}), {3}, {0, 0, 1});
  expect_tensor(run_n("GreaterOrEqual", {a, b}), {3}, {0, 1, 1});
  expect_tensor(run_n("Less", {a, b}), {3}, {1, 0, 0});
  expect_tensor(run_n("LessOrEqual", {a, b}), {3}, {1, 1, 0});
  expect_tensor(run_n("Equal", {i64({2, 1}, {5, 6}), i64({2}, {5, 6})}), {2, 2}, {1, 0, 0, 1});
  expect_tensor(run_n("Equal", {boolean({2}, {true, false}), boolean({2}, {true, true})}), {2}, {1, 0});
  expect_tensor(run_n("Less", {f32({2}, {1, 2}).cast(DType::f16), f32({2}, {2, 1}).cast(DType::f16)}), {2}, {1, 0});
  EXPECT_THROW(run_n("Equal", {f32({1}, {1}), i32({1}, {1})}), Error);
}

TEST(ElementwiseSelect, Logic) {
  Tensor a = boolean({4}, {false, false, true, true}), b = boolean({4}, {false, true, false, true});
  expect_tensor(run_n("And", {a, b}), {4}, {0, 0, 0, 1});
  expect_tensor(run_n("Or", {a, b}), {4}, {0, 1, 1, 1});
  expect_tensor(run_n("Xor", {a, b}), {4}, {0, 1, 1, 0});
  expect_tensor(run_n("And", {a, boolean({}, {true})}), {4}, {0, 0, 1, 1});
  EXPECT_THROW(run_n("And", {f32({1}, {1}), f32({1}, {1})}), Error);
}

TEST(ElementwiseSelect, VariadicBroadcasting) {
  Tensor a = f32({2, 1}, {1, 2}), b = f32({3}, {10, 20, 30}), c = f32({}, {100});
  expect_tensor(run_n("Sum", {a, b, c}), {2, 3}, {111, 121, 131, 112, 122, 132});
  expect_tensor(run_n("Mean", {a, b, c}), {2, 3}, {37, 121 / 3.0, 131 / 3.0, 112 / 3.0, 122 / 3.0, 44});
  expect_tensor(run_n("Max", {f32({3}, {1, 5, 3}), f32({3}, {4, 2, 6}), f32({1}, {2})}), {3}, {4, 5, 6});
  expect_tensor(run_n("Min", {f32({3}, {1, 5, 3}), f32({3}, {4, 2, 6}), f32({1}, {2})}), {3}, {1, 2, 2});
  expect_tensor(run_n("Max", {i32({2}, {-1, 7}), i32({2}, {3, -9})}), {2}, {3, 7});
  expect_tensor(run_n("Sum", {f32({2}, {1, 2})}), {2}, {1, 2});  // one input: a copy
  expect_tensor(run_n("Sum", {i64({2}, {1, 2}), i64({1}, {-5}), i64({2}, {10, 20})}), {2}, {6, 17});
  expect_tensor(run_n("Min", {f64({2, 0}, {}), f64({1}, {1})}), {2, 0}, {});  // empty broadcast
  expect_tensor(run_n("Max", {f32({2}, {1, NAN}), f32({2}, {NAN, 0})}), {2}, {NAN, NAN});
  EXPECT_THROW(run_n("Sum", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}), Error);
  EXPECT_THROW(run_n("Mean", {i32({1}, {1}), i32({1}, {2})}), Error);
}

TEST(ElementwiseSelect, WhereBroadcastsAllThree) {
  Tensor cond = boolean({2, 1}, {true, false});
  Tensor y = run_n("Where", {cond, f32({3}, {1, 2, 3}), f32({}, {-1})});
  expect_tensor(y, {2, 3}, {1, 2, 3, -1, -1, -1});
  Tensor yi = run_n("Where", {boolean({3}, {true, false, true}), i64({3}, {1, 2, 3}), i64({3}, {7, 8, 9})});
  EXPECT_EQ(yi.dtype(), DType::i64);
  expect_tensor(yi, {3}, {1, 8, 3});
  Tensor yb = run_n("Where", {boolean({2}, {true, false}), boolean({2}, {false, false}), boolean({2}, {true, true})});
  expect_tensor(yb, {2}, {0, 1});
  Tensor yh = run_n("Where", {boolean({2}, {false, true}), f32({2}, {1, 2}).cast(DType::f16),
                              f32({2}, {3, 4}).cast(DType::f16)});
  EXPECT_EQ(yh.dtype(), DType::f16);
  expect_tensor(yh, {2}, {3, 2});
  EXPECT_THROW(run_n("Where", {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}), Error);
  EXPECT_THROW(run_n("Where", {boolean({2}, {true, true}), f32({3}, {1, 2, 3}), f32({1}, {1})}), Error);
}

TEST(ElementwiseSelect, ClipBoundsAsInputsFromOpset11) {
  Tensor x = f32({5}, {-3, -1, 0, 1, 3});
  {
    OneNode t("Clip", 13);
    t.input("x", x).constant("lo", f32({}, {-1})).constant("hi", f32({}, {2}));
    expect_tensor(t.run1(), {5}, {-1, -1, 0, 1, 2});
  }
  {  // only max given: min omitted
    OneNode t("Clip", 12);
    t.input("x", x).omitted().constant("hi", f32({}, {0}));
    expect_tensor(t.run1(), {5}, {-3, -1, 0, 0, 0});
  }
  {  // no bounds: identity
    OneNode t("Clip", 11);
    t.input("x", x);
    expect_tensor(t.run1(), {5}, {-3, -1, 0, 1, 3});
  }
  {  // min > max: every value becomes max
    OneNode t("Clip", 13);
    t.input("x", x).constant("lo", f32({}, {2})).constant("hi", f32({}, {1}));
    expect_tensor(t.run1(), {5}, {1, 1, 1, 1, 1});
  }
  {  // integers (opset 12+)
    OneNode t("Clip", 13);
    t.input("x", i32({3}, {-5, 5, 50})).constant("lo", i32({}, {0})).constant("hi", i32({}, {10}));
    expect_tensor(t.run1(), {3}, {0, 5, 10});
  }
  {  // bound of another dtype is an error
    OneNode t("Clip", 13);
    t.input("x", x).constant("lo", f64({}, {0}));
    EXPECT_THROW(t.run1(), Error);
  }
}

TEST(ElementwiseSelect, ClipBoundsAsAttributesBeforeOpset11) {
  Tensor x = f32({4}, {-3, 0, 0.5f, 3});
  expect_tensor(run_n("Clip", {x}, {{"min", -1.0f}, {"max", 1.0f}}, 9), {4}, {-1, 0, 0.5, 1});
  expect_tensor(run_n("Clip", {x}, {{"min", 0.25f}}, 10), {4}, {0.25, 0.25, 0.5, 3});
  // at opset 11 the attributes mean nothing: inputs rule
  expect_tensor(run_n("Clip", {x}, {{"min", 0.25f}}, 11), {4}, {-3, 0, 0.5, 3});
}

TEST(ElementwiseSelect, CastBetweenDtypes) {
  Tensor x = f32({5}, {-2.7f, -0.5f, 0, 1.5f, 300});
  Tensor y = run_n("Cast", {x}, {{"to", 6}});  // int32: truncates toward zero
  EXPECT_EQ(y.dtype(), DType::i32);
  expect_tensor(y, {5}, {-2, 0, 0, 1, 300});
  expect_tensor(run_n("Cast", {x}, {{"to", 9}}), {5}, {1, 1, 0, 1, 1});  // bool: nonzero is true
  Tensor h = run_n("Cast", {x}, {{"to", 10}});
  EXPECT_EQ(h.dtype(), DType::f16);
  expect_tensor(h, {5}, {-2.69922, -0.5, 0, 1.5, 300}, 1e-4);
  Tensor bf = run_n("Cast", {f32({1}, {1.00390625f})}, {{"to", 16}});  // bf16 keeps 8 significant bits
  EXPECT_EQ(bf.dtype(), DType::bf16);
  expect_tensor(bf, {1}, {1.0});
  expect_tensor(run_n("Cast", {boolean({2}, {true, false})}, {{"to", 1}}), {2}, {1, 0});
  expect_tensor(run_n("Cast", {i64({2}, {-1, 70000})}, {{"to", 11}}), {2}, {-1, 70000});
  Tensor u = run_n("Cast", {i64({1}, {258})}, {{"to", 2}});  // integer narrowing wraps
  EXPECT_EQ(u.dtype(), DType::u8);
  expect_tensor(u, {1}, {2});
  Tensor same = run_n("Cast", {x}, {{"to", 1}});
  expect_tensor(same, {5}, {-2.7, -0.5, 0, 1.5, 300});
  EXPECT_THROW(run_n("Cast", {x}, {{"to", 8}}), Error);  // string: not in kiln
}

TEST(ElementwiseSelect, CastLikeTakesTheTargetDtype) {
  OneNode t("CastLike", 15);
  t.input("x", f32({2}, {1.9f, -1.9f})).input("like", i64({1}, {0}));
  EXPECT_EQ(t.out_dtype(), DType::i64);
  expect_tensor(t.run1(), {2}, {1, -1});
}

}  // namespace
}  // namespace kiln

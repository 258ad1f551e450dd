// The rewrite API as a user pass sees it: patterns indexed by root op, replacements built
// before the root, graph-output names kept, declines reported once with their reasons.
#include "kiln/passes/rewrite.h"

#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

// x * 2 -> x + x (a new node before the root, reading a value defined before it).
class MulTwoToAdd : public RewritePattern {
 public:
  std::string name() const override { return "mul2-to-add"; }
  std::vector<std::string> root_ops() const override { return {"Mul"}; }
  Decision match(const Node& n, const Model&) const override {
    const Tensor* c = constant_of(n.input(1));
    if (!c || c->numel() != 1 || c->as_double(0) != 2.0) return Decision::no("the second operand is not a constant 2");
    return Decision::yes();
  }
  void apply(Node& n, Rewriter& rw) const override {
    Node* add = rw.create("Add", {n.inputs[0], n.inputs[0]});
    EXPECT_EQ(add->outputs[0]->dtype, DType::f32);  // inferred on creation
    EXPECT_EQ(add->outputs[0]->shape, Shape({3}));
    rw.replace(n.outputs[0], add->outputs[0]);
  }
};

// Neg(Neg(x)) -> x: rooted at the outer Neg, so one rewrite exposes the next (x4 -> x).
class DoubleNeg : public RewritePattern {
 public:
  std::string name() const override { return "double-neg"; }
  std::vector<std::string> root_ops() const override { return {"Neg"}; }
  Decision match(const Node& n, const Model&) const override {
    const Value* in = n.input(0);
    if (!in->producer || in->producer->op != "Neg") return Decision::no("input is not a Neg");
    return Decision::yes();
  }
  void apply(Node& n, Rewriter& rw) const override { rw.replace(n.outputs[0], n.inputs[0]->producer->inputs[0]); }
};

std::unique_ptr<Pass> make_test_pass() {
  auto p = std::make_unique<PatternPass>("test-patterns", "test");
  p->add(std::make_unique<MulTwoToAdd>());
  p->add(std::make_unique<DoubleNeg>());
  return p;
}

PassRun run_test_pass(const std::string& text) {
  PassRun r;
  r.model = parse_verified(text);
  r.ctx.explain = true;
  PassManager pm;
  pm.add(make_test_pass());
  r.records = pm.run(r.model, r.ctx);
  return r;
}

TEST(RewriteApi, ReplacementsKeepTopologicalOrderAndOutputNames) {
  PassRun r = run_test_pass(R"(
graph g(%x: f32[3]) -> (%y, %z) {
  %two = init f32[] dense<2.0>
  %e = Exp(%x)
  %y = Mul(%e, %two)
  %z = Relu(%y)
})");
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[3]) -> (%y, %z) {
  %two = init f32[] dense<2.0>
  %e = Exp(%x)
  %y = Add(%e, %e)
  %z = Relu(%y)
})"));
}

TEST(RewriteApi, RoundsRepeatUntilNoPatternMatchesAndReportDeclinesOnce) {
  PassRun r = run_test_pass(R"(
graph g(%x: f32[3]) -> (%y) {
  %three = init f32[] dense<3.0>
  %a = Neg(%x)
  %b = Neg(%a)
  %c = Neg(%b)
  %d = Neg(%c)
  %e = Neg(%d)
  %y = Mul(%e, %three)
})");
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[3]) -> (%y) {
  %three = init f32[] dense<3.0>
  %e = Neg(%x)
  %y = Mul(%e, %three)
})"));
  int applied = 0, declined_mul = 0;
  for (const auto& rm : r.ctx.remarks) {
    applied += rm.applied;
    if (!rm.applied && rm.message == "mul2-to-add: the second operand is not a constant 2") ++declined_mul;
  }
  EXPECT_EQ(applied, 2);
  EXPECT_EQ(declined_mul, 1);  // from the last round only, not once per round
}

TEST(RewriteApi, ReplacingAnOutputByAnInputInsertsAnIdentity) {
  PassRun r = run_test_pass(R"(
graph g(%x: f32[3]) -> (%y) {
  %a = Neg(%x)
  %y = Neg(%a)
})");
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%x: f32[3]) -> (%y) {
  %y = Identity(%x)
})"));
}

TEST(RewriteApi, WorksInsideSubgraphs) {
  PassRun r = run_test_pass(R"(
graph g(%c: bool[], %x: f32[3]) -> (%z) {
  %z = If(%c) {
    then_branch=graph t() -> (%t) {
      %n1 = Neg(%x)
      %n2 = Neg(%n1)
      %t = Exp(%n2)
    },
    else_branch=graph e() -> (%x) {
    }
  }
})");
  EXPECT_EQ(show(r.model), canonical(R"(
graph g(%c: bool[], %x: f32[3]) -> (%z) {
  %z = If(%c) {
    then_branch=graph t() -> (%t) {
      %t = Exp(%x)
    },
    else_branch=graph e() -> (%x) {
    }
  }
})"));
}

}  // namespace
}  // namespace kiln::passes::test

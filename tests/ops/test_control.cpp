// If, Loop and Scan: values computed by hand, shape inference, and clear errors.
//
// The bodies need arithmetic, and on this branch the quantization ops are the kernels at
// hand: add_u8 builds an exact u8 add from them (DequantizeLinear with scale 1 turns a into
// f32; QuantizeLinear with scale 1 and zero point b gives round(a) + b). Values stay small.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {
namespace {

// a + b for u8 values: b one element (n == 0) or both of shape [n] (per-axis, opset 13).
Value* add_u8(Graph& g, Value* a, Value* b, const std::string& name, int64_t n = 0) {
  Value* one = g.add_initializer(g.unique_name(name + "_one"), Tensor::scalar<float>(1.0f));
  Value* ones = n == 0 ? one
                       : g.add_initializer(g.unique_name(name + "_ones"),
                                           Tensor::from_vector<float>({n}, std::vector<float>(n, 1.0f)));
  Value* af = g.add_node("DequantizeLinear", {a, one}, {g.unique_name(name + "_f")})->outputs[0];
  return g.add_node("QuantizeLinear", {af, ones, b}, {name}, {{"axis", int64_t{0}}})->outputs[0];
}

Tensor u8s(std::vector<int64_t> dims, std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(dims, v); }

std::vector<int64_t> values_of(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_int64(i));
  return v;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- If ---------------------------------------------------------------------------------

// y = cond ? x + c : x + x, both branches reading outer values x and c.
Model if_model() {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* cond = g.add_input("cond", DType::boolean, Shape{});
  Value* x = g.add_input("x", DType::u8, Shape{3});
  Value* c = g.add_input("c", DType::u8, Shape{});
  auto then_g = std::make_shared<Graph>();
  then_g->name = "then";
  auto else_g = std::make_shared<Graph>();
  else_g->name = "else";
  Node* n = g.add_node("If", {cond}, {"y"}, {{"then_branch", then_g}, {"else_branch", else_g}});
  // Branches are filled after add_node set their parent, so outer names are in scope.
  then_g->outputs.push_back(add_u8(*then_g, x, c, "then_y"));
  else_g->outputs.push_back(add_u8(*else_g, x, x, "else_y", 3));
  g.outputs.push_back(n->outputs[0]);
  return m;
}

TEST(ControlIf, SelectsBranchReadingOuterValues) {
  Model m = if_model();
  ops::verify_model(m);
  auto run = [&](bool c) {
    return run_model(m, {{"cond", Tensor::scalar<bool>(c)}, {"x", u8s({3}, {1, 2, 3})}, {"c", Tensor::scalar<uint8_t>(10)}})
        .at("y");
  };
  Tensor t = run(true);
  EXPECT_EQ(t.dtype(), DType::u8);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values_of(t), (std::vector<int64_t>{11, 12, 13}));
  EXPECT_EQ(values_of(run(false)), (std::vector<int64_t>{2, 4, 6}));
}

TEST(ControlIf, InfersBranchOutputs) {
  Model m = if_model();
  ops::infer_shapes(m);
  const Value* y = m.graph->outputs[0];
  EXPECT_EQ(y->dtype, DType::u8);
  EXPECT_EQ(y->shape, (Shape{3}));
  // Control flow costs no flops of its own; bytes are the node's inputs and outputs.
  auto cost = ops::node_cost(*m.graph->nodes().back());
  ASSERT_TRUE(cost.has_value());
  EXPECT_EQ(cost->flops, 0);
  EXPECT_EQ(cost->bytes_read, 1);     // cond
  EXPECT_EQ(cost->bytes_written, 3);  // y: 3 x u8
}

// Branches that return outer values directly: shapes [2,3] and [2,4] merge to [2,?];
// [2,3] and [3] to an unknown rank; u8 and i8 are an error.
TEST(ControlIf, MergesDifferingBranchShapes) {
  auto build = [](Shape sa, DType da, Shape sb, DType db) {
    Model m;
    m.opsets[""] = 13;
    Graph& g = *m.graph;
    Value* cond = g.add_input("cond", DType::boolean, Shape{1});
    Value* a = g.add_input("a", da, sa);
    Value* b = g.add_input("b", db, sb);
    auto t = std::make_shared<Graph>();
    auto e = std::make_shared<Graph>();
    Node* n = g.add_node("If", {cond}, {"y"}, {{"then_branch", t}, {"else_branch", e}});
    t->outputs.push_back(a);
    e->outputs.push_back(b);
    g.outputs.push_back(n->outputs[0]);
    return m;
  };
  Model m1 = build(Shape{2, 3}, DType::u8, Shape{2, 4}, DType::u8);
  ops::infer_shapes(m1);
  Shape want({Dim(2), Dim::unknown()});
  EXPECT_EQ(m1.graph->outputs[0]->shape, want);
  // A 1-element [1] cond works at run time and picks the then branch's outer value.
  auto out = run_model(m1, {{"cond", Tensor::from_vector<bool>({1}, {true})},
                            {"a", u8s({2, 3}, {1, 2, 3, 4, 5, 6})},
                            {"b", u8s({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0})}});
  EXPECT_EQ(out.at("y").dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of(out.at("y")), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));

  Model m2 = build(Shape{2, 3}, DType::u8, Shape{3}, DType::u8);
  ops::infer_shapes(m2);
  EXPECT_FALSE(m2.graph->outputs[0]->shape.rank_known);

  Model m3 = build(Shape{3}, DType::u8, Shape{3}, DType::i8);
  EXPECT_NE(error_of([&] { ops::infer_shapes(m3); }).find("dtypes u8 and i8 differ"), std::string::npos);
}

// A condition shape inference can compute (a rank test, as Silero VAD's exporter writes them)
// selects its branch: the If's outputs take that branch's shapes instead of the merge (here an
// unknown rank), and what is known of them passes on, so the Reshape after it is static too.
TEST(ControlIf, KnownConditionTakesItsBranchShapesAndValues) {
  const char* text = R"(
kiln.model ir=8 opset=13
graph main(%a: f32[2,3], %b: f32[3], %f: f32[6]) -> (%y, %z) {
  %sh = Shape(%a)
  %rank = Shape(%sh)
  %two = init i64[1] dense<2>
  %c = Equal(%rank, %two)
  %y, %s = If(%c) {
    then_branch=graph t() -> (%a, %sh) {
    },
    else_branch=graph e() -> (%b, %two) {
    }
  }
  %z = Reshape(%f, %s)
}
)";
  Model m = parse_model(text);
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->find("y")->shape, (Shape{2, 3}));
  EXPECT_EQ(m.graph->find("s")->shape, (Shape{2}));
  EXPECT_EQ(m.graph->find("z")->shape, (Shape{2, 3}));
  // With the condition a graph input nothing is known: the merge, as before.
  Model u = parse_model(R"(
kiln.model ir=8 opset=13
graph main(%c: bool[1], %a: f32[2,3], %b: f32[3]) -> (%y) {
  %y = If(%c) {
    then_branch=graph t() -> (%a) {
    },
    else_branch=graph e() -> (%b) {
    }
  }
}
)");
  ops::infer_shapes(u);
  EXPECT_FALSE(u.graph->find("y")->shape.rank_known);
}

TEST(ControlIf, RejectsNonBoolCond) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* cond = g.add_input("cond", DType::i32, Shape{});
  Value* a = g.add_input("a", DType::u8, Shape{1});
  auto t = std::make_shared<Graph>();
  auto e = std::make_shared<Graph>();
  Node* n = g.add_node("If", {cond}, {"y"}, {{"then_branch", t}, {"else_branch", e}});
  t->outputs.push_back(a);
  e->outputs.push_back(a);
  g.outputs.push_back(n->outputs[0]);
  std::string run_err = error_of([&] {
    run_model(m, {{"cond", Tensor::scalar<int32_t>(1)}, {"a", u8s({1}, {7})}});
  });
  EXPECT_NE(run_err.find("cond must be bool, got i32"), std::string::npos) << run_err;
  EXPECT_NE(error_of([&] { ops::infer_shapes(m); }).find("cond must be bool"), std::string::npos);
}

// ---- Loop -------------------------------------------------------------------------------

// Running sum: carried (sum, r1, r2), sum += x (an outer value) each iteration; the body's
// cond output is r1 and the register shifts r1 <- r2, so cond turns false after a set
// number of iterations. Scan outputs: the sum after each iteration and iteration_num.
struct LoopCase {
  std::optional<int64_t> M;    // nullopt: M omitted
  std::optional<bool> cond;    // nullopt: cond omitted
  bool r1 = true, r2 = false;  // body cond after iteration 0 and after iteration 1 on
};

Model loop_model(const LoopCase& lc, bool untyped_body_inputs = false) {
  Model m;
  m.opsets[""] = 13;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::u8, Shape{});
  Value* s0 = g.add_input("s0", DType::u8, Shape{});
  Value* r1 = g.add_initializer("r1", Tensor::scalar<bool>(lc.r1));
  Value* r2 = g.add_initializer("r2", Tensor::scalar<bool>(lc.r2));
  Value* M = lc.M ? g.add_initializer("M", Tensor::scalar<int64_t>(*lc.M)) : nullptr;
  Value* cond = lc.cond ? g.add_initializer("cond", Tensor::scalar<bool>(*lc.cond)) : nullptr;
  auto body = std::make_shared<Graph>();
  body->name = "body";
  Node* n = g.add_node("Loop", {M, cond, s0, r1, r2}, {"sum", "r1_final", "r2_final", "sums", "iters"},
                       {{"body", body}});
  auto in = [&](const char* name, DType dt) {
    return untyped_body_inputs ? body->add_input(name, DType::undefined, Shape::unknown_rank())
                               : body->add_input(name, dt, Shape{});
  };
  Value* iter = in("iter", DType::i64);
  in("cond_in", DType::boolean);
  Value* sum_in = in("sum_in", DType::u8);
  Value* r1_in = in("r1_in", DType::boolean);
  Value* r2_in = in("r2_in", DType::boolean);
  Value* sum_out = add_u8(*body, sum_in, x, "sum_out");
  body->outputs = {r1_in, sum_out, r2_in, r2_in, sum_out, iter};
  for (Value* o : n->outputs) g.outputs.push_back(o);
  return m;
}

std::map<std::string, Tensor> run_loop(const LoopCase& lc) {
  Model m = loop_model(lc);
  ops::verify_model(m);
  ops::infer_shapes(m);  // gives the body's scan outputs a known shape for zero iterations
  return run_model(m, {{"x", Tensor::scalar<uint8_t>(5)}, {"s0", Tensor::scalar<uint8_t>(1)}});
}

TEST(ControlLoop, MaxTripCountOnlyIgnoresBodyCond) {
  // cond omitted: a for loop; the body's cond output (false from iteration 0) is ignored.
  auto out = run_loop({.M = 4, .cond = std::nullopt, .r1 = false});
  EXPECT_EQ(out.at("sum").as_int64(0), 1 + 4 * 5);
  EXPECT_EQ(out.at("sums").dims(), (std::vector<int64_t>{4}));
  EXPECT_EQ(values_of(out.at("sums")), (std::vector<int64_t>{6, 11, 16, 21}));
  EXPECT_EQ(out.at("iters").dtype(), DType::i64);
  EXPECT_EQ(values_of(out.at("iters")), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(ControlLoop, CondOnlyStopsWhenBodyCondTurnsFalse) {
  // Iteration 0 returns cond = r1 (true), iteration 1 returns r2 (false): two iterations.
  auto out = run_loop({.M = std::nullopt, .cond = true, .r1 = true, .r2 = false});
  EXPECT_EQ(out.at("sum").as_int64(0), 11);
  EXPECT_EQ(values_of(out.at("sums")), (std::vector<int64_t>{6, 11}));
  EXPECT_EQ(values_of(out.at("iters")), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(out.at("r1_final").data<bool>()[0], false);
  // Initial cond false: no iteration, carried values are the initial ones, scans are empty.
  auto none = run_loop({.M = std::nullopt, .cond = false});
  EXPECT_EQ(none.at("sum").as_int64(0), 1);
  EXPECT_EQ(none.at("sums").dims(), (std::vector<int64_t>{0}));
  EXPECT_EQ(none.at("iters").dims(), (std::vector<int64_t>{0}));
  EXPECT_EQ(none.at("r1_final").data<bool>()[0], true);
}

TEST(ControlLoop, BothBoundsStopAtWhicheverComesFirst) {
  auto by_cond = run_loop({.M = 3, .cond = true, .r1 = true, .r2 = false});
  EXPECT_EQ(values_of(by_cond.at("sums")), (std::vector<int64_t>{6, 11}));
  auto by_m = run_loop({.M = 1, .cond = true, .r1 = true, .r2 = true});
  EXPECT_EQ(values_of(by_m.at("sums")), (std::vector<int64_t>{6}));
  EXPECT_EQ(by_m.at("sum").as_int64(0), 6);
  auto zero = run_loop({.M = 0, .cond = std::nullopt});
  EXPECT_EQ(zero.at("sum").as_int64(0), 1);
  EXPECT_EQ(zero.at("sums").dims(), (std::vector<int64_t>{0}));
}

TEST(ControlLoop, InfersCarriedAndScanShapes) {
  Model m = loop_model({.M = 4, .cond = std::nullopt});
  ops::infer_shapes(m);
  const auto& outs = m.graph->outputs;
  EXPECT_EQ(outs[0]->dtype, DType::u8);
  EXPECT_EQ(outs[0]->shape, Shape{});
  EXPECT_EQ(outs[3]->dtype, DType::u8);
  EXPECT_EQ(outs[3]->shape, (Shape{4}));  // exactly M iterations: nothing can stop it early
  EXPECT_EQ(outs[4]->dtype, DType::i64);
  Model mc = loop_model({.M = 4, .cond = true});
  ops::infer_shapes(mc);
  EXPECT_EQ(mc.graph->outputs[3]->shape, Shape({Dim::unknown()}));
}

TEST(ControlLoop, InferenceTypesUntypedBodyInputs) {
  Model m = loop_model({.M = 2, .cond = std::nullopt}, /*untyped_body_inputs=*/true);
  ops::infer_shapes(m);
  const Graph& body = *m.graph->nodes().back()->attrs.at("body").g();
  EXPECT_EQ(body.inputs[0]->dtype, DType::i64);
  EXPECT_EQ(body.inputs[1]->dtype, DType::boolean);
  EXPECT_EQ(body.inputs[2]->dtype, DType::u8);
  EXPECT_EQ(m.graph->outputs[4]->dtype, DType::i64);
  auto out = run_model(m, {{"x", Tensor::scalar<uint8_t>(2)}, {"s0", Tensor::scalar<uint8_t>(0)}});
  EXPECT_EQ(values_of(out.at("sums")), (std::vector<int64_t>{2, 4}));
}

TEST(ControlLoop, RejectsWrongCondDtype) {
  Model m = loop_model({.M = 2, .cond = true});
  Graph& g = *m.graph;
  Value* bad = g.add_initializer("cond_i32", Tensor::scalar<int32_t>(1));
  const_cast<Node*>(g.nodes().back().get())->inputs[1] = bad;
  std::string e = error_of([&] {
    run_model(m, {{"x", Tensor::scalar<uint8_t>(2)}, {"s0", Tensor::scalar<uint8_t>(0)}});
  });
  EXPECT_NE(e.find("cond must be bool, got i32"), std::string::npos) << e;
  EXPECT_NE(e.find("Loop node"), std::string::npos) << e;
}

TEST(ControlLoop, RejectsBodyArityMismatch) {
  Model m = loop_model({.M = 2, .cond = std::nullopt});
  Graph& body = *m.graph->nodes().back()->attrs.at("body").g();
  body.add_input("extra", DType::u8, Shape{});
  auto feeds = std::map<std::string, Tensor>{{"x", Tensor::scalar<uint8_t>(2)}, {"s0", Tensor::scalar<uint8_t>(0)}};
  std::string e = error_of([&] { run_model(m, feeds); });
  EXPECT_NE(e.find("body takes 6 inputs"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { ops::infer_shapes(m); }).find("body takes 6 inputs"), std::string::npos);
}

TEST(ControlLoop, RejectsCarriedDtypeChange) {
  // The body returns iteration_num (i64) where the loop carries a u8.
  Model m = loop_model({.M = 2, .cond = std::nullopt});
  Graph& body = *m.graph->nodes().back()->attrs.at("body").g();
  body.outputs[1] = body.inputs[0];
  auto feeds = std::map<std::string, Tensor>{{"x", Tensor::scalar<uint8_t>(2)}, {"s0", Tensor::scalar<uint8_t>(0)}};
  std::string e = error_of([&] { run_model(m, feeds); });
  EXPECT_NE(e.find("is i64, the loop carries u8"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { ops::infer_shapes(m); }).find("dtypes u8 and i64 differ"), std::string::npos);
}

TEST(ControlLoop, RejectsBodyInputDtypeMismatch) {
  Model m = loop_model({.M = 2, .cond = std::nullopt});
  Graph& body = *m.graph->nodes().back()->attrs.at("body").g();
  body.inputs[2]->dtype = DType::i8;  // declared i8, the loop passes u8
  std::string e = error_of([&] {
    run_model(m, {{"x", Tensor::scalar<uint8_t>(2)}, {"s0", Tensor::scalar<uint8_t>(0)}});
  });
  EXPECT_NE(e.find("input 2 'sum_in' is declared i8, got u8"), std::string::npos) << e;
}

// ---- Scan -------------------------------------------------------------------------------

struct ScanCase {
  std::vector<int64_t> x_dims{3, 2};
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;  // empty: attribute omitted
  int64_t opset = 13;
};

// Cumulative sum of the slices of X (each of shape [2]) with state s: s' = s + x_t, scan
// output s'.
Model scan_model(const ScanCase& sc) {
  Model m;
  m.opsets[""] = sc.opset;
  Graph& g = *m.graph;
  Value* s0 = g.add_input("s0", DType::u8, Shape{2});
  Value* X = g.add_input("X", DType::u8, Shape::of(sc.x_dims));
  auto body = std::make_shared<Graph>();
  std::map<std::string, Attribute> attrs{{"body", body}, {"num_scan_inputs", int64_t{1}}};
  if (!sc.in_axes.empty()) attrs["scan_input_axes"] = sc.in_axes;
  if (!sc.in_dirs.empty()) attrs["scan_input_directions"] = sc.in_dirs;
  if (!sc.out_axes.empty()) attrs["scan_output_axes"] = sc.out_axes;
  if (!sc.out_dirs.empty()) attrs["scan_output_directions"] = sc.out_dirs;
  Node* n = g.add_node("Scan", {s0, X}, {"s_final", "ys"}, attrs);
  Value* s_in = body->add_input("s_in", DType::u8, Shape{2});
  Value* x_in = body->add_input("x_in", DType::u8, Shape{2});
  Value* s_out = add_u8(*body, s_in, x_in, "s_out", 2);
  body->outputs = {s_out, s_out};
  g.outputs = {n->outputs[0], n->outputs[1]};
  return m;
}

std::map<std::string, Tensor> run_scan(const ScanCase& sc, std::vector<uint8_t> x) {
  Model m = scan_model(sc);
  ops::verify_model(m);
  return run_model(m, {{"s0", u8s({2}, {100, 200})}, {"X", u8s(sc.x_dims, x)}});
}

TEST(ControlScan, CumulativeSumOverAxis0) {
  auto out = run_scan({}, {1, 2, 3, 4, 5, 6});  // rows [1,2], [3,4], [5,6]
  EXPECT_EQ(values_of(out.at("s_final")), (std::vector<int64_t>{109, 212}));
  EXPECT_EQ(out.at("ys").dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values_of(out.at("ys")), (std::vector<int64_t>{101, 202, 104, 206, 109, 212}));
}

TEST(ControlScan, ReverseInputDirection) {
  // Rows are visited 2, 1, 0; outputs are written in iteration order.
  auto out = run_scan({.in_dirs = {1}}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of(out.at("ys")), (std::vector<int64_t>{105, 206, 108, 210, 109, 212}));
  // Reverse output direction as well: iteration t lands at position 2 - t.
  auto both = run_scan({.in_dirs = {1}, .out_dirs = {1}}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of(both.at("ys")), (std::vector<int64_t>{109, 212, 108, 210, 105, 206}));
}

TEST(ControlScan, InputAndOutputAxes) {
  // X [2,3] scanned along axis 1 (columns [1,4], [2,5], [3,6]); ys stacked along axis 1 -> [2,3].
  auto out = run_scan({.x_dims = {2, 3}, .in_axes = {1}, .out_axes = {-1}}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(out.at("ys").dims(), (std::vector<int64_t>{2, 3}));
  // Column t of ys is the state after t+1 steps: [101,204], [103,209], [106,215].
  EXPECT_EQ(values_of(out.at("ys")), (std::vector<int64_t>{101, 103, 106, 204, 209, 215}));
}

TEST(ControlScan, InfersShapes) {
  Model m = scan_model({.x_dims = {2, 3}, .in_axes = {1}, .out_axes = {1}});
  ops::infer_shapes(m);
  EXPECT_EQ(m.graph->outputs[0]->shape, (Shape{2}));
  EXPECT_EQ(m.graph->outputs[1]->dtype, DType::u8);
  EXPECT_EQ(m.graph->outputs[1]->shape, (Shape{2, 3}));
  Model m0 = scan_model({});
  ops::infer_shapes(m0);
  EXPECT_EQ(m0.graph->outputs[1]->shape, (Shape{3, 2}));
}

TEST(ControlScan, RejectsOpset8AndBadBodies) {
  Model m8 = scan_model({.opset = 8});
  std::string e = error_of([&] { run_model(m8, {{"s0", u8s({2}, {0, 0})}, {"X", u8s({3, 2}, {1, 2, 3, 4, 5, 6})}}); });
  EXPECT_NE(e.find("opset 8 Scan"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { ops::infer_shapes(m8); }).find("opset 8 Scan"), std::string::npos);

  Model bad = scan_model({});
  Graph& body = *bad.graph->nodes().back()->attrs.at("body").g();
  body.outputs.pop_back();  // one output short of state + scan output
  e = error_of([&] { run_model(bad, {{"s0", u8s({2}, {0, 0})}, {"X", u8s({3, 2}, {1, 2, 3, 4, 5, 6})}}); });
  EXPECT_NE(e.find("body gives 1 outputs, needs 1 states + 1 scan outputs"), std::string::npos) << e;

  Model many = scan_model({});
  const_cast<Node*>(many.graph->nodes().back().get())->attrs["num_scan_inputs"] = int64_t{3};
  EXPECT_NE(error_of([&] { ops::infer_shapes(many); }).find("num_scan_inputs is 3, must be in 1..2"),
            std::string::npos);

  Model axis = scan_model({.in_axes = {2}});
  e = error_of([&] { run_model(axis, {{"s0", u8s({2}, {0, 0})}, {"X", u8s({3, 2}, {1, 2, 3, 4, 5, 6})}}); });
  EXPECT_NE(e.find("axis 2 is out of range for rank 2"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln

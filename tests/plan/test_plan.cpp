// Memory planning on small hand-written graphs whose lifetimes, reuse, in-place writes and
// views are known by reading them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kiln/ir/text.h"
#include "kiln/plan/json.h"
#include "kiln/plan/plan.h"

namespace kiln::plan {
namespace {

const ValuePlan& get(const Plan& p, const std::string& name) {
  const ValuePlan* v = p.find(name);
  if (!v) throw Error("no value " + name);
  return *v;
}

// Five steps over 64-float (256-byte) values; %a and %b die at step 2, %c lives to the end.
const char* kChain = R"(
kiln.model ir=8 opset=17
graph main(%x: f32[64]) -> (%y) {
  %a = Relu(%x) : f32[64]
  %b = Neg(%a) : f32[64]
  %c = Add(%a, %b) : f32[64]
  %d = Exp(%c) : f32[64]
  %y = Mul(%d, %c) : f32[64]
}
)";

TEST(Plan, LiveRangesAndKinds) {
  Model m = parse_model(kChain);
  Plan p = plan_memory(*m.graph);
  ASSERT_EQ(p.steps.size(), 5u);
  EXPECT_EQ(p.steps[2].op, "Add");
  const ValuePlan& x = get(p, "x");
  EXPECT_EQ(x.kind, ValueKind::Input);
  EXPECT_EQ(x.first, -1);
  EXPECT_EQ(x.last, 0);
  EXPECT_EQ(get(p, "a").first, 0);
  EXPECT_EQ(get(p, "a").last, 2);
  EXPECT_EQ(get(p, "b").first, 1);
  EXPECT_EQ(get(p, "b").last, 2);
  EXPECT_EQ(get(p, "c").last, 4);
  EXPECT_EQ(get(p, "d").first, 3);
  EXPECT_EQ(get(p, "y").kind, ValueKind::Output);
  EXPECT_EQ(get(p, "y").last, 5);  // outlives the run
  EXPECT_EQ(get(p, "y").offset, -1);
  EXPECT_EQ(get(p, "a").bytes, 256);
}

TEST(Plan, ReuseWithoutInPlace) {
  Model m = parse_model(kChain);
  PlanOptions opt;
  opt.in_place = false;
  Plan p = plan_memory(*m.graph, opt);
  // Step 2 reads a, b and writes c: three buffers at once; d reuses a's bytes after step 2.
  EXPECT_EQ(p.lower_bound_bytes, 768);
  EXPECT_EQ(p.lower_bound_step, 2);
  EXPECT_EQ(p.arena_bytes, 768);
  EXPECT_EQ(p.intermediate_bytes, 1024);
  std::set<int64_t> at_step2 = {get(p, "a").offset, get(p, "b").offset, get(p, "c").offset};
  EXPECT_EQ(at_step2.size(), 3u);
  EXPECT_NE(get(p, "d").offset, get(p, "c").offset);
  EXPECT_TRUE(get(p, "d").offset == get(p, "a").offset || get(p, "d").offset == get(p, "b").offset);
}

TEST(Plan, InPlaceIntoDyingInput) {
  Model m = parse_model(kChain);
  Plan p = plan_memory(*m.graph);
  const ValuePlan& c = get(p, "c");
  EXPECT_TRUE(c.in_place);
  EXPECT_EQ(c.alias, "a");  // the first input that dies at the Add
  EXPECT_EQ(c.offset, get(p, "a").offset);
  // d = Exp(c) cannot overwrite c: c is read again by the last step.
  EXPECT_FALSE(get(p, "d").in_place);
  EXPECT_EQ(p.lower_bound_bytes, 512);
  EXPECT_EQ(p.arena_bytes, 512);
  EXPECT_EQ(p.intermediate_bytes, 1024);  // the sum still counts c as its own value
}

TEST(Plan, NoReuseLaysEverythingOut) {
  Model m = parse_model(kChain);
  PlanOptions opt;
  opt.reuse = false;
  opt.in_place = false;
  Plan p = plan_memory(*m.graph, opt);
  EXPECT_EQ(p.arena_bytes, p.intermediate_bytes);
  EXPECT_EQ(p.arena_bytes, 1024);
}

TEST(Plan, ViewsShareTheirRootsBytes) {
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[2,8]) -> (%y, %z) {
  %shape = init i64[1] dense<16>
  %w = init f32[2,8] dense<1.0>
  %a = Relu(%x) : f32[2,8]
  %r = Reshape(%a, %shape) : f32[16]
  %s = Sigmoid(%r) : f32[16]
  %y = Flatten(%s) {axis=0} : f32[1,16]
  %vx = Reshape(%x, %shape) : f32[16]
  %vw = Reshape(%w, %shape) : f32[16]
  %z = Add(%vx, %vw) : f32[16]
}
)");
  Plan p = plan_memory(*m.graph);
  const ValuePlan& r = get(p, "r");
  EXPECT_EQ(r.kind, ValueKind::View);
  EXPECT_EQ(r.alias, "a");
  EXPECT_EQ(r.offset, get(p, "a").offset);
  // The view keeps a's bytes alive until it is read at step 2, where s overwrites them in place.
  EXPECT_EQ(get(p, "a").last, 1);
  EXPECT_EQ(r.last, 2);
  EXPECT_TRUE(get(p, "s").in_place);
  EXPECT_EQ(get(p, "s").alias, "r");
  EXPECT_EQ(get(p, "s").offset, get(p, "a").offset);
  // A graph output is never a view: it gets its own buffer.
  EXPECT_EQ(get(p, "y").kind, ValueKind::Output);
  // Views of a graph input and of a weight take no arena bytes.
  EXPECT_EQ(get(p, "vx").kind, ValueKind::View);
  EXPECT_EQ(get(p, "vx").offset, -1);
  EXPECT_EQ(get(p, "vw").kind, ValueKind::View);
  EXPECT_EQ(get(p, "vw").alias, "w");
  EXPECT_EQ(get(p, "w").kind, ValueKind::Weight);
  EXPECT_EQ(p.arena_bytes, 64);  // only a (and everything that shares its bytes)

  PlanOptions no_views;
  no_views.views = false;
  Plan q = plan_memory(*m.graph, no_views);
  EXPECT_EQ(get(q, "r").kind, ValueKind::Arena);
  EXPECT_EQ(get(q, "vx").kind, ValueKind::Arena);
}

TEST(Plan, InPlaceNeedsSameDimsAndNoOtherReader) {
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[4,8], %v: f32[8]) -> (%y, %z) {
  %a = Relu(%v) : f32[8]
  %b = Relu(%x) : f32[4,8]
  %c = Add(%a, %b) : f32[4,8]
  %y = Relu(%c) : f32[4,8]
  %d = Relu(%x) : f32[4,8]
  %e = Neg(%d) : f32[4,8]
  %z = Add(%d, %e) : f32[4,8]
}
)");
  Plan p = plan_memory(*m.graph);
  // a is broadcast into c (other dims): c may only overwrite b.
  EXPECT_TRUE(get(p, "c").in_place);
  EXPECT_EQ(get(p, "c").alias, "b");
  // d is read again after e is made: e cannot overwrite it.
  EXPECT_FALSE(get(p, "e").in_place);
}

// A node's own in_place attribute (the lowering's mark for kernels that may write over their
// input: lower/in_place_convs.cpp) makes an op the table does not know InPlace; without it the
// same op gets bytes of its own.
TEST(Plan, NodeMarkedInPlaceOverwritesItsDyingInput) {
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[64]) -> (%y) {
  %a = Relu(%x) : f32[64]
  %b = kiln.Widget(%a) {in_place=1} : f32[64]
  %c = kiln.Widget(%b) : f32[64]
  %y = Neg(%c) : f32[64]
}
)");
  Plan p = plan_memory(*m.graph);
  EXPECT_TRUE(get(p, "b").in_place);
  EXPECT_EQ(get(p, "b").alias, "a");
  EXPECT_EQ(get(p, "b").offset, get(p, "a").offset);
  EXPECT_FALSE(get(p, "c").in_place);
  EXPECT_NE(get(p, "c").offset, get(p, "b").offset);
}

// `in_place_input` names the one input the kernel may write over (a direct convolution's
// residual, not its input): the others are never taken, though they die there too, and the named
// one is not taken when it is also another input (the kernel reads that one everywhere).
TEST(Plan, InPlaceInputNamesTheOnlyInputToOverwrite) {
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[64]) -> (%y) {
  %a = Relu(%x) : f32[64]
  %z = Neg(%x) : f32[64]
  %b = kiln.Widget(%a, %z) {in_place=1, in_place_input=1} : f32[64]
  %c = Relu(%b) : f32[64]
  %d = kiln.Widget(%c, %c) {in_place=1, in_place_input=1} : f32[64]
  %y = Neg(%d) : f32[64]
}
)");
  Plan p = plan_memory(*m.graph);
  EXPECT_TRUE(get(p, "b").in_place);
  EXPECT_EQ(get(p, "b").alias, "z");
  EXPECT_EQ(get(p, "b").offset, get(p, "z").offset);
  EXPECT_TRUE(get(p, "c").in_place);  // Relu: the table's own InPlace
  EXPECT_FALSE(get(p, "d").in_place);
  EXPECT_NE(get(p, "d").offset, get(p, "c").offset);
}

TEST(Plan, DynamicValuesAreNotPlaced) {
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[6]) -> (%y) {
  %n = NonZero(%x) : i64[1,?]
  %y = Cast(%n) {to=1} : f32[1,?]
}
)");
  Plan p = plan_memory(*m.graph);
  EXPECT_EQ(get(p, "n").kind, ValueKind::Dynamic);
  EXPECT_EQ(get(p, "n").offset, -1);
  EXPECT_EQ(get(p, "y").kind, ValueKind::Dynamic);
  EXPECT_EQ(p.arena_bytes, 0);
}

TEST(Plan, ScratchLivesForItsStepOnly) {
  Model m = parse_model(kChain);
  PlanOptions opt;
  opt.in_place = false;
  opt.scratch_bytes = [](const Node& n) -> int64_t { return n.op == "Add" ? 100 : 0; };
  Plan p = plan_memory(*m.graph, opt);
  const StepPlan& add = p.steps[2];
  EXPECT_EQ(add.scratch_bytes, 100);
  ASSERT_GE(add.scratch_offset, 0);
  EXPECT_EQ(add.scratch_offset % 64, 0);
  for (const char* live : {"a", "b", "c"}) {
    const ValuePlan& v = get(p, live);
    EXPECT_TRUE(add.scratch_offset + 128 <= v.offset || v.offset + v.bytes <= add.scratch_offset) << live;
  }
  EXPECT_EQ(p.lower_bound_bytes, 768 + 128);
  EXPECT_EQ(p.intermediate_bytes, 1024 + 128);
}

// A value that takes more bytes than its dims say (a convolution's output in padded planes:
// PlanOptions::stored_bytes) gets them all, its dims unchanged, and no live value overlaps them;
// a smaller figure than the dims' never shrinks a value.
TEST(Plan, StoredBytesCanExceedTheDims) {
  Model m = parse_model(kChain);
  PlanOptions opt;
  opt.in_place = false;
  opt.stored_bytes = [](const Value* v) -> int64_t { return v->name == "b" ? 1000 : v->name == "c" ? 8 : 0; };
  Plan p = plan_memory(*m.graph, opt);
  const ValuePlan& b = get(p, "b");
  EXPECT_EQ(b.bytes, 1000);
  EXPECT_EQ(b.dims, std::vector<int64_t>{64});
  EXPECT_EQ(get(p, "c").bytes, 256);
  for (const char* live : {"a", "c"}) {
    const ValuePlan& v = get(p, live);
    EXPECT_TRUE(b.offset + 1000 <= v.offset || v.offset + v.bytes <= b.offset) << live;
  }
  EXPECT_EQ(p.lower_bound_bytes, 256 + 1024 + 256);  // step 2: a, b (1000 -> 1024 aligned), c
}

TEST(Plan, MemoryAwareOrderRunsEachBranchToItsEnd) {
  // Two branches that each make a 4 KiB temporary and shrink it; the graph order makes both
  // temporaries first, the memory-aware order finishes one branch before starting the other.
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[1024]) -> (%y) {
  %a1 = Relu(%x) : f32[1024]
  %b1 = Neg(%x) : f32[1024]
  %a2 = ReduceSum(%a1) {keepdims=0} : f32[]
  %b2 = ReduceSum(%b1) {keepdims=0} : f32[]
  %y = Add(%a2, %b2) : f32[]
}
)");
  Plan graph_order = plan_memory(*m.graph);
  PlanOptions opt;
  opt.order = Order::MemoryAware;
  Plan aware = plan_memory(*m.graph, opt);
  // Graph order, step 2: a1, b1 and a2 live. Memory-aware, step 3: b1, a2 and b2.
  EXPECT_EQ(graph_order.lower_bound_bytes, 2 * 4096 + 64);
  EXPECT_EQ(aware.lower_bound_bytes, 4096 + 2 * 64);
  std::vector<std::string> names;
  for (const StepPlan& s : aware.steps) names.push_back(s.node->outputs[0]->name);
  EXPECT_EQ(names, (std::vector<std::string>{"a1", "a2", "b1", "b2", "y"}));
}

TEST(Plan, ToJsonAndReport) {
  Model m = parse_model(kChain);
  Plan p = plan_memory(*m.graph);
  json::Value j = json::parse(p.to_json());
  EXPECT_EQ(j.at("arena_bytes", "plan").as_int("arena_bytes"), p.arena_bytes);
  EXPECT_EQ(j.at("lower_bound_bytes", "plan").as_int("lb"), 512);
  EXPECT_EQ(j.at("intermediate_bytes", "plan").as_int("sum"), 1024);
  const json::Array& values = j.at("values", "plan").as_array("values");
  ASSERT_EQ(values.size(), p.values.size());
  const json::Value& c = values[3];
  EXPECT_EQ(c.at("name", "c").as_string("name"), "c");
  EXPECT_EQ(c.at("kind", "c").as_string("kind"), "arena");
  EXPECT_EQ(c.at("alias", "c").as_string("alias"), "a");
  EXPECT_TRUE(c.at("in_place", "c").as_bool("in_place"));
  EXPECT_EQ(c.at("first", "c").as_int("first"), 2);
  std::string report = p.report();
  EXPECT_NE(report.find("arena (peak)"), std::string::npos) << report;
  EXPECT_NE(report.find("lower bound"), std::string::npos) << report;
  EXPECT_NE(report.find("in place of a"), std::string::npos) << report;
}

TEST(Plan, LoweringCanDeclareItsOwnOps) {
  Model m = parse_model(R"(
kiln.model ir=8 opset=17
graph main(%x: f32[64]) -> (%y) {
  %a = Relu(%x) : f32[64]
  %b = test::Scale(%a) : f32[64]
  %y = Relu(%b) : f32[64]
}
)");
  EXPECT_FALSE(get(plan_memory(*m.graph), "b").in_place);
  set_memory_effect("test", "Scale", MemoryEffect::InPlace);
  EXPECT_TRUE(get(plan_memory(*m.graph), "b").in_place);
  set_memory_effect("test", "Scale", MemoryEffect::None);
}

TEST(Plan, ReadingAnUndefinedValueIsAnError) {
  Model m = parse_model(kChain);
  Graph& g = *m.graph;
  // Put the last node first: it now reads values made after it.
  auto& nodes = g.mutable_nodes();
  std::rotate(nodes.begin(), nodes.end() - 1, nodes.end());
  try {
    plan_memory(g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("before it is computed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::plan

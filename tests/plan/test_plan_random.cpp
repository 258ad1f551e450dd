// Property test: on random DAGs, no two values whose bytes overlap in the arena are live at a
// common step, unless they share bytes on purpose (a view and its root, an in-place write over
// a dying input); workspace never overlaps anything live at its step.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <random>

#include "kiln/plan/plan.h"

namespace kiln::plan {
namespace {

// Random graph: each node reads 1-3 earlier values and writes 1-2 values. Ops are chosen so
// that all three memory effects occur: Add (in place), Reshape (view), test.Opaque (none).
Model random_model(std::mt19937& rng, int nodes) {
  Model m;
  Graph& g = *m.graph;
  g.name = "random";
  std::vector<Value*> pool;
  std::uniform_int_distribution<int> len(1, 300);
  for (int i = 0; i < 3; ++i) pool.push_back(g.add_input("in" + std::to_string(i), DType::f32, Shape{len(rng)}));
  pool.push_back(g.add_initializer("w", Tensor(DType::f32, {16})));
  for (int n = 0; n < nodes; ++n) {
    std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
    std::vector<Value*> ins;
    int arity = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int k = 0; k < arity; ++k) ins.push_back(pool[pick(rng)]);
    int kind = std::uniform_int_distribution<int>(0, 2)(rng);
    const std::string name = "v" + std::to_string(n);
    if (kind == 0) {  // elementwise: output shaped like its first input
      Node* node = g.add_node("Add", ins, {name});
      node->outputs[0]->dtype = DType::f32;
      node->outputs[0]->shape = ins[0]->shape;
      pool.push_back(node->outputs[0]);
    } else if (kind == 1) {  // view: same bytes, other dims
      Node* node = g.add_node("Reshape", {ins[0]}, {name});
      node->outputs[0]->dtype = DType::f32;
      node->outputs[0]->shape = Shape{1, ins[0]->shape.dims[0].value * (ins[0]->shape.rank() == 2 ? ins[0]->shape.dims[1].value : 1)};
      pool.push_back(node->outputs[0]);
    } else {
      int outs = std::uniform_int_distribution<int>(1, 2)(rng);
      std::vector<std::string> names;
      for (int k = 0; k < outs; ++k) names.push_back(name + "_" + std::to_string(k));
      Node* node = g.add_node("Opaque", ins, names, {}, "", "test");
      for (Value* o : node->outputs) {
        o->dtype = DType::f32;
        o->shape = Shape{len(rng)};
        pool.push_back(o);
      }
    }
  }
  // A few graph outputs, always including the last value.
  g.outputs.push_back(pool.back());
  for (int k = 0; k < 2; ++k) {
    Value* v = pool[std::uniform_int_distribution<size_t>(4, pool.size() - 1)(rng)];
    if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) g.outputs.push_back(v);
  }
  return m;
}

int root(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

void check_plan(const Plan& p, const std::string& what) {
  // Values that share bytes on purpose: joined through their alias.
  std::vector<int> parent(p.values.size());
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t i = 0; i < p.values.size(); ++i)
    if (!p.values[i].alias.empty()) {
      const ValuePlan* a = p.find(p.values[i].alias);
      ASSERT_NE(a, nullptr) << what;
      parent[root(parent, static_cast<int>(i))] = root(parent, static_cast<int>(a - p.values.data()));
    }
  std::vector<int> placed;
  for (size_t i = 0; i < p.values.size(); ++i) {
    const ValuePlan& v = p.values[i];
    if (v.offset < 0) continue;
    placed.push_back(static_cast<int>(i));
    EXPECT_EQ(v.offset % p.alignment, 0) << what << " " << v.name;
    EXPECT_LE(v.offset + v.bytes, p.arena_bytes) << what << " " << v.name;
    EXPECT_TRUE(v.kind == ValueKind::Arena || v.kind == ValueKind::View) << what << " " << v.name;
  }
  for (size_t x = 0; x < placed.size(); ++x)
    for (size_t y = x + 1; y < placed.size(); ++y) {
      const ValuePlan& a = p.values[placed[x]];
      const ValuePlan& b = p.values[placed[y]];
      bool time = a.first <= b.last && b.first <= a.last;
      bool bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (time && bytes) {
        EXPECT_EQ(root(parent, placed[x]), root(parent, placed[y]))
            << what << ": " << a.name << " [" << a.first << "," << a.last << "] @" << a.offset << "+" << a.bytes
            << " overlaps " << b.name << " [" << b.first << "," << b.last << "] @" << b.offset << "+" << b.bytes;
      }
    }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const StepPlan& st = p.steps[s];
    if (st.scratch_bytes == 0) continue;
    for (int i : placed) {
      const ValuePlan& v = p.values[i];
      if (v.first <= static_cast<int>(s) && static_cast<int>(s) <= v.last) {
        EXPECT_TRUE(st.scratch_offset + st.scratch_bytes <= v.offset || v.offset + v.bytes <= st.scratch_offset)
            << what << ": workspace of step " << s << " overlaps " << v.name;
      }
    }
  }
  EXPECT_GE(p.arena_bytes, p.lower_bound_bytes) << what;
  EXPECT_LE(p.lower_bound_bytes, p.intermediate_bytes) << what;
}

TEST(PlanProperty, LiveBuffersNeverOverlapOnRandomGraphs) {
  std::mt19937 rng(1234);
  int in_place = 0, views = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Model m = random_model(rng, 5 + trial % 60);
    for (Order order : {Order::Graph, Order::MemoryAware}) {
      PlanOptions opt;
      opt.order = order;
      opt.scratch_bytes = [](const Node& n) -> int64_t { return n.op == "Opaque" ? 8 * (1 + n.inputs.size()) : 0; };
      Plan p = plan_memory(*m.graph, opt);
      check_plan(p, "trial " + std::to_string(trial));
      for (const ValuePlan& v : p.values) {
        in_place += v.in_place;
        views += v.kind == ValueKind::View;
      }
      // The memory-aware order is a topological order too.
      std::set<const Value*> made(m.graph->inputs.begin(), m.graph->inputs.end());
      made.insert(m.graph->initializers.begin(), m.graph->initializers.end());
      for (const StepPlan& s : p.steps) {
        for (const Value* v : s.node->inputs) EXPECT_TRUE(made.count(v)) << "trial " << trial;
        for (const Value* o : s.node->outputs) made.insert(o);
      }
    }
  }
  // The generator must exercise both kinds of sharing, or the test proves little.
  EXPECT_GT(in_place, 100);
  EXPECT_GT(views, 100);
}

}  // namespace
}  // namespace kiln::plan

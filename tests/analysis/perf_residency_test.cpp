// Cache residency by reuse distance over a memory plan (analysis/perf_residency.h), by hand.
#include <gtest/gtest.h>

#include "analysis/perf_residency.h"

namespace kiln::analysis {
namespace {

constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;

// x (input, 1 MiB) and w (weight, 64 KiB) -> A -> t1 (arena 0) -> B -> t2 (arena 1 MiB) -> C ->
// t3 (arena 0: t1's bytes again) -> D (with w again) -> out (output, 1 MiB).
struct Chain {
  Graph g;
  plan::Plan p;
  Node *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  Chain() {
    Value* x = g.add_input("x", DType::f32, Shape({Dim(256 * kKiB)}));
    Value* w = g.add_input("w", DType::f32, Shape({Dim(16 * kKiB)}));
    a = g.add_node("Add", {x, w}, {"t1"}, {}, "A");
    b = g.add_node("Relu", {a->outputs[0]}, {"t2"}, {}, "B");
    c = g.add_node("Relu", {b->outputs[0]}, {"t3"}, {}, "C");
    d = g.add_node("Add", {c->outputs[0], w}, {"out"}, {}, "D");
    auto value = [&](const Value* v, plan::ValueKind kind, int64_t bytes, int64_t offset) {
      plan::ValuePlan vp;
      vp.name = v->name, vp.value = v, vp.kind = kind, vp.bytes = bytes, vp.offset = offset;
      p.index[v] = static_cast<int>(p.values.size());
      p.values.push_back(vp);
    };
    value(x, plan::ValueKind::Input, kMiB, -1);
    value(w, plan::ValueKind::Weight, 64 * kKiB, -1);
    value(a->outputs[0], plan::ValueKind::Arena, kMiB, 0);
    value(b->outputs[0], plan::ValueKind::Arena, kMiB, kMiB);
    value(c->outputs[0], plan::ValueKind::Arena, kMiB, 0);
    value(d->outputs[0], plan::ValueKind::Output, kMiB, -1);
    p.arena_bytes = 2 * kMiB;
    for (Node* n : {a, b, c, d}) p.steps.push_back({n, n->name, n->op, -1, 0});
  }
};

TEST(PerfResidency, ReuseDistanceOverThePlanByHand) {
  Chain ch;
  // L1 64 KiB, L2 2.5 MiB, L3 8 MiB. Working sets (MiB): A 2.0625, B 2, C 2, D 2.0625; a run
  // touches 8.125. Second run, clock in MiB at each step's start: 8.125, 10.1875, 12.1875, 14.1875.
  auto r = plan_residency(ch.p, {64 * kKiB, 5 * kMiB / 2, 8 * kMiB});
  ASSERT_EQ(r.size(), 4u);
  const double mib = static_cast<double>(kMiB), w = 64.0 * kKiB;
  // A: x last touched a run ago (8.125 - 2.0625 + 2.0625 = 8.125 > 8: DRAM); w by D just before
  // (0 + 2.0625: L2); t1's bytes last touched when D read t3 there (0 + 2.0625: L2).
  const KernelResidency& ra = r[ch.a];
  EXPECT_DOUBLE_EQ(ra.read[3], mib);
  EXPECT_DOUBLE_EQ(ra.weights[1], w);
  EXPECT_DOUBLE_EQ(ra.written[1], mib);
  // B: t1 just written (0 + 2: L2); t2's bytes last touched when C read them in the first run
  // (10.1875 - 6.0625 + 2 = 6.125: L3).
  EXPECT_DOUBLE_EQ(r[ch.b].read[1], mib);
  EXPECT_DOUBLE_EQ(r[ch.b].written[2], mib);
  // C: t2 just written (L2); t3 over t1's bytes, which B read just before (0 + 2: L2).
  EXPECT_DOUBLE_EQ(r[ch.c].read[1], mib);
  EXPECT_DOUBLE_EQ(r[ch.c].written[1], mib);
  // D: t3 (L2); w last read by A (14.1875 - 10.1875 + 2.0625 = 6.0625: L3); out last written a
  // run ago (14.1875 - 8.125 + 2.0625 = 8.125: DRAM).
  EXPECT_DOUBLE_EQ(r[ch.d].read[1], mib);
  EXPECT_DOUBLE_EQ(r[ch.d].weights[2], w);
  EXPECT_DOUBLE_EQ(r[ch.d].written[3], mib);
  // Nothing else anywhere: every byte is classified once.
  double total = 0;
  for (const auto& [n, k] : r)
    for (int l = 0; l < kMaxLevels; ++l) total += k.read[l] + k.weights[l] + k.written[l];
  EXPECT_DOUBLE_EQ(total, 8 * mib + 2 * w);
  // A larger L3 (9 MiB) holds x and out between runs.
  r = plan_residency(ch.p, {64 * kKiB, 5 * kMiB / 2, 9 * kMiB});
  EXPECT_DOUBLE_EQ(r[ch.a].read[2], mib);
  EXPECT_DOUBLE_EQ(r[ch.d].written[2], mib);
}

}  // namespace
}  // namespace kiln::analysis

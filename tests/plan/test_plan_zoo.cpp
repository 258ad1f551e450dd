// Memory plans of real models at their zoo input shapes: the arena against the sum of all
// intermediates (no reuse) and the lower bound (the most bytes live at one step). Printed for
// docs/runtime.md; skipped when the zoo has not been prepared.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/ops/op.h"
#include "kiln/ops/specialize.h"
#include "kiln/plan/plan.h"

namespace kiln::plan {
namespace {

namespace fs = std::filesystem;

class ZooPlan : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooPlan, ArenaIsNearTheLowerBound) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "zoo" / GetParam();
  if (!fs::exists(dir / "model.onnx")) GTEST_SKIP() << dir << " not prepared (ctest -L zoo prepares it)";
  Model m = import_onnx((dir / "model.onnx").string());
  ops::InputSpec spec;
  for (const auto& e : fs::directory_iterator(dir / "inputs"))
    if (e.path().extension() == ".npy") spec.shapes[e.path().stem().string()] = read_npy(e.path().string()).dims();
  ops::specialize_inputs(m, spec);
  auto mib = [](int64_t b) { return static_cast<double>(b) / 1048576.0; };
  for (Order order : {Order::Graph, Order::MemoryAware}) {
    PlanOptions opt;
    opt.order = order;
    Plan p = plan_memory(*m.graph, opt);
    std::printf("%-12s %-12s arena %8.2f MiB  sum of intermediates %8.2f MiB  lower bound %8.2f MiB  (%zu steps)\n",
                GetParam().c_str(), order == Order::Graph ? "graph order" : "memory-aware", mib(p.arena_bytes),
                mib(p.intermediate_bytes), mib(p.lower_bound_bytes), p.steps.size());
    EXPECT_GE(p.arena_bytes, p.lower_bound_bytes);
    EXPECT_LE(p.arena_bytes, p.lower_bound_bytes + p.lower_bound_bytes / 4) << "greedy by size is far from the bound";
    EXPECT_LT(p.arena_bytes * 4, p.intermediate_bytes) << "reuse should save most of the intermediates";
  }
  PlanOptions plain;
  plain.in_place = false;
  plain.views = false;
  Plan p = plan_memory(*m.graph, plain);
  std::printf("%-12s %-12s arena %8.2f MiB  sum of intermediates %8.2f MiB  lower bound %8.2f MiB\n",
              GetParam().c_str(), "no in-place", mib(p.arena_bytes), mib(p.intermediate_bytes),
              mib(p.lower_bound_bytes));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooPlan, ::testing::Values("resnet50", "bert_base", "mobilenet_v2", "gpt2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln::plan

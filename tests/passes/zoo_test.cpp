// Numeric checks of the -O1 passes on real models: each pass in turn, and after each one the
// reference interpreter must give the outputs of the unoptimised model. These passes only
// move, share or precompute values with the same kernels, so the tolerance is tight:
// max|Δ| <= 1e-5 * max|ref|. Prints the nodes each pass removes.
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

class ZooO1 : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooO1, EveryCleanupPassKeepsTheOutputs) {
  auto dir = zoo_dir(GetParam());
  if (!std::filesystem::exists(dir / "model.onnx")) GTEST_SKIP() << dir << " is missing (ctest -R zoo.prepare)";
  auto in = zoo_inputs(dir);
  DimBindings bound;
  Model m = load_specialized(dir / "model.onnx", in, &bound);
  auto ref = run_model(m, in);
  PassContext ctx;
  ctx.bindings = bound;
  std::string summary;
  for (const auto& name : pipeline_for_level(1)) {
    PassManager pm;
    pm.add(name);
    auto rec = pm.run(m, ctx);
    summary += str_cat(" ", name, " -", rec[0].nodes_before - rec[0].nodes_after);
    if (rec[0].changed) expect_same_outputs(ref, run_model(m, in), 1e-5, GetParam() + " after " + name);
  }
  std::printf("[-O1 %s] nodes removed:%s; %zu nodes left\n", GetParam().c_str(), summary.c_str(),
              count_nodes(*m.graph));
}

INSTANTIATE_TEST_SUITE_P(Models, ZooO1, ::testing::Values("resnet50", "bert_base", "gpt2_decode", "efficientnet_b0"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln::passes::test

// The compiled runtime's pooling kernels (fast_pool.cpp) against the reference interpreter:
// MaxPool exact, AveragePool / GlobalAveragePool within 1e-6 relative; pads, strides,
// dilations, ceil_mode, auto_pad and count_include_pad; the Indices output and 3-D windows stay
// on the reference kernel. And Executable::profile_run: one timing per step, named and typed.
#include <cmath>

#include "kiln/runtime/executable.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

using testing::ScratchDir;

std::unique_ptr<Executable> load(const ScratchDir& dir, const Model& m) {
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m);
  return Executable::load(dir.file("m.kiln"));
}

Tensor ramp(const std::vector<int64_t>& dims) {
  Tensor x(DType::f32, dims);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i)) * 3.f;
  return x;
}

// Runs `node_line` (reading %x, writing %y) compiled and interpreted; returns the worst
// relative difference. `fast`: whether the compiled step must be a fast kernel.
double worst_diff(const std::string& node_line, const std::string& x_shape, const std::vector<int64_t>& dims,
                  bool fast = true) {
  const std::string text = "kiln.model ir=8 opset=17\ngraph main(%x: f32" + x_shape + ") -> (%y) {\n  " + node_line + "\n}\n";
  Model m = testing::model_from_text(text);
  ScratchDir dir("fast_pool");
  auto exe = load(dir, m);
  const Tensor x = ramp(dims);
  std::vector<Tensor> outs;
  EXPECT_EQ(exe->profile_run({x}, outs).at(0).fast, fast) << node_line;
  double worst = 0;
  for (int threads : {1, 2}) {
    RunOptions opt;
    opt.threads = threads;
    Tensor want = run_model(testing::model_from_text(text), {{"x", x}}, opt).at("y");
    Tensor got = exe->run({{"x", x}}, opt).at("y");
    EXPECT_EQ(got.dims(), want.dims()) << node_line;
    if (got.dims() != want.dims()) return INFINITY;
    for (int64_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, std::fabs(got.as_double(i) - want.as_double(i)) / std::max(1.0, std::fabs(want.as_double(i))));
  }
  return worst;
}

TEST(FastPool, MaxPoolIsExact) {
  const std::vector<int64_t> d = {1, 4, 23, 29};
  const std::string s = "[1,4,23,29]";
  EXPECT_EQ(worst_diff("%y = MaxPool(%x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}", s, d), 0.0);
  EXPECT_EQ(worst_diff("%y = MaxPool(%x) {kernel_shape=[2,3], strides=[2,1]}", s, d), 0.0);
  EXPECT_EQ(worst_diff("%y = MaxPool(%x) {kernel_shape=[3,3], strides=[2,2], ceil_mode=1}", s, d), 0.0);
  EXPECT_EQ(worst_diff("%y = MaxPool(%x) {kernel_shape=[3,3], dilations=[2,2], pads=[2,1,2,1]}", s, d), 0.0);
  EXPECT_EQ(worst_diff("%y = MaxPool(%x) {kernel_shape=[3,3], strides=[2,2], auto_pad=\"SAME_UPPER\"}", s, d), 0.0);
}

TEST(FastPool, AveragePoolWithinOneMillionth) {
  const std::vector<int64_t> d = {2, 3, 17, 20};
  const std::string s = "[2,3,17,20]";
  EXPECT_LE(worst_diff("%y = AveragePool(%x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}", s, d), 1e-6);
  EXPECT_LE(worst_diff("%y = AveragePool(%x) {kernel_shape=[3,3], pads=[1,1,1,1], count_include_pad=1}", s, d), 1e-6);
  EXPECT_LE(worst_diff("%y = AveragePool(%x) {kernel_shape=[2,2], strides=[2,2], ceil_mode=1}", s, d), 1e-6);
  EXPECT_LE(worst_diff("%y = GlobalAveragePool(%x)", s, d), 1e-6);
}

TEST(FastPool, IndicesAndThreeDimensionalWindowsUseTheReference) {
  EXPECT_EQ(worst_diff("%y, %i = MaxPool(%x) {kernel_shape=[2,2], strides=[2,2]}", "[1,2,6,6]", {1, 2, 6, 6}, false), 0.0);
  EXPECT_EQ(worst_diff("%y = MaxPool(%x) {kernel_shape=[2,2,2]}", "[1,2,4,4,4]", {1, 2, 4, 4, 4}, false), 0.0);
}

TEST(ProfileRun, TimesEveryStepWithItsNodeAndKernel) {
  const char* text = R"(kiln.model ir=8 opset=17
graph main(%x: f32[1,3,16,16]) -> (%y) {
  %p = MaxPool(%x) {kernel_shape=[2,2], strides=[2,2]}
  %r = Relu(%p)
  %y = GlobalAveragePool(%r)
}
)";
  Model m = testing::model_from_text(text);
  ScratchDir dir("profile_run");
  auto exe = load(dir, m);
  std::vector<Tensor> in = {ramp({1, 3, 16, 16})}, out;
  std::vector<StepTiming> t = exe->profile_run(in, out, {});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].op, "MaxPool");
  EXPECT_TRUE(t[0].fast);
  EXPECT_EQ(t[1].op, "Relu");
  EXPECT_FALSE(t[1].fast);
  EXPECT_EQ(t[2].op, "GlobalAveragePool");
  double end = 0;
  for (const StepTiming& s : t) {
    EXPECT_FALSE(s.node.empty());
    EXPECT_GE(s.ms, 0.0);
    EXPECT_GE(s.start_ms, end - 1e-9);  // steps follow one another
    end = s.start_ms + s.ms;
  }
  // The outputs are those of a plain run.
  std::vector<Tensor> plain;
  exe->run(in, plain);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(testing::bit_equal(out[0], plain[0]));
}

}  // namespace
}  // namespace kiln

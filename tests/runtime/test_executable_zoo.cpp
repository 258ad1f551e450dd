// Zoo models written to an artifact exactly as imported (no passes, nothing packed, no kernel
// library) run through the Executable bit-for-bit like the reference interpreter: the same
// kernels on the same threads, so any difference would come from the plan, a view, an in-place
// write or the fallback's arena outputs. Skipped when the zoo has not been prepared.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/runtime/executable.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::bit_equal;

fs::path zoo_dir(const std::string& model) { return fs::path(KILN_BINARY_DIR) / "zoo" / model; }

std::map<std::string, Tensor> read_inputs(const fs::path& dir) {
  std::map<std::string, Tensor> in;
  for (const auto& e : fs::directory_iterator(dir / "inputs"))
    if (e.path().extension() == ".npy") in[e.path().stem().string()] = read_npy(e.path().string());
  return in;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `inputs` through both and expects identical outputs; prints the plan's numbers.
void expect_identical(const Model& m, Executable& exe, const std::map<std::string, Tensor>& inputs,
                      const std::string& what) {
  RunOptions opt;
  opt.threads = 2;
  auto t0 = std::chrono::steady_clock::now();
  auto want = run_model(m, inputs, opt);
  double interp_ms = ms_since(t0);
  exe.run(inputs, opt);  // first run of this shape plans it
  t0 = std::chrono::steady_clock::now();
  auto got = exe.run(inputs, opt);
  double exe_ms = ms_since(t0);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, t] : want) EXPECT_TRUE(bit_equal(got.at(name), t)) << what << ": output " << name;
  const plan::Plan& p = *exe.last_plan();
  int views = 0, in_place = 0;
  for (const auto& v : p.values) {
    views += v.kind == plan::ValueKind::View;
    in_place += v.in_place;
  }
  std::printf("%-28s arena %8.2f MiB | sum of intermediates %8.2f MiB | lower bound %8.2f MiB | %d views, %d in place"
              " | interpreter %.1f ms, executable %.1f ms\n",
              what.c_str(), p.arena_bytes / 1048576.0, p.intermediate_bytes / 1048576.0,
              p.lower_bound_bytes / 1048576.0, views, in_place, interp_ms, exe_ms);
  EXPECT_GE(p.arena_bytes, p.lower_bound_bytes);
  EXPECT_LT(p.arena_bytes, p.intermediate_bytes) << what << ": the arena reuses nothing";
}

class ZooExecutable : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooExecutable, MatchesTheInterpreterBitForBit) {
  const std::string name = GetParam();
  fs::path dir = zoo_dir(name);
  if (!fs::exists(dir / "model.onnx")) GTEST_SKIP() << dir << " not prepared (ctest -L zoo prepares it)";
  testing::ScratchDir scratch("zoo_exe_" + name);
  Model m = import_onnx((dir / "model.onnx").string());
  ArtifactManifest man = testing::test_manifest();
  man.source_model = (dir / "model.onnx").string();
  write_artifact(scratch.file("model.kiln"), man, m);
  auto exe = Executable::load(scratch.file("model.kiln"));
  auto inputs = read_inputs(dir);
  expect_identical(m, *exe, inputs, name);
  if (name == "gpt2_decode") {
    // A second past length: the first 100 positions of every KV-cache input.
    for (auto& [in_name, t] : inputs) {
      if (in_name.rfind("past_", 0) != 0) continue;
      std::vector<int64_t> dims = t.dims();
      const int64_t old_len = dims[2];
      dims[2] = 100;
      Tensor cut(t.dtype(), dims);
      const int64_t rows = dims[0] * dims[1], row = dims[3];
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(cut.data<float>() + r * 100 * row, t.data<float>() + r * old_len * row, 100 * row * sizeof(float));
      t = cut;
    }
    expect_identical(m, *exe, inputs, name + " (past 100)");
    EXPECT_EQ(exe->cached_plans(), 2u);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooExecutable, ::testing::Values("digits_cnn", "resnet18", "bert_base", "gpt2_decode"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln

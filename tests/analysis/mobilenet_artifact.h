// A test fixture with mobilenet_v2 from the zoo compiled (batch 1) into a temporary directory,
// loaded, and one random input image: the profiler tests that need a real model's kernels
// (--rerun, --balance). Skips when the zoo is not prepared.
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/compiler/compile.h"
#include "kiln/runtime/artifact.h"

namespace kiln::analysis {

class MobilenetArtifact : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    const std::string onnx = std::string(KILN_SOURCE_DIR) + "/build/zoo/mobilenet_v2/model.onnx";
    if (!fs::exists(onnx)) GTEST_SKIP() << "zoo not prepared";
    dir_ = fs::temp_directory_path() /
           ("kiln_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) + "_" +
            std::to_string(getpid()));
    fs::create_directories(dir_);
    compiler::CompileOptions copt;
    copt.cache_dir = (dir_ / "cache").string();
    copt.inputs.dims["N"] = 1;
    const std::string art = (dir_ / "mb.kiln").string();
    compiler::compile_file(onnx, art, copt);
    exe_ = Executable::load(art);
    Tensor x(DType::f32, {1, 3, 224, 224});
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
    inputs_ = {x};
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
  std::unique_ptr<Executable> exe_;
  std::vector<Tensor> inputs_;
};

}  // namespace kiln::analysis

// A compiled model's outputs do not depend on how the runtime splits its work. The runtime picks
// some schedules by a measurement it repeats every 50 ms (the cores' round trip: kernels::
// refresh_core_distance): banded expand + depthwise and depthwise + projection pairs (and the stem
// with the first of those), claimed and prefetched output lines. The same input must give the
// same bits whatever that measurement says, and at one thread as at two, or a validation that
// compares outputs (kiln profile --rerun's check, a user's golden files) fails by chance. Each
// mode is pinned here rather than left to the measurement, so the test is the same on every host.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kiln/compiler/compile.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/runtime/executable.h"
#include "runtime/runtime_test_util.h"
#include "zoo/zoo_parity.h"

namespace kiln::zoo {
namespace {

namespace fs = std::filesystem;
using kernels::ClaimOutput;
using kernels::ExpandBands;
using kernels::WritePrefetch;

struct Modes {
  ExpandBands bands;
  ClaimOutput claim;
  WritePrefetch prefetch;
  int threads;
  const char* what;
};

// Restores the Auto modes however the test ends.
struct AutoModes {
  ~AutoModes() {
    kernels::set_expand_bands(ExpandBands::Auto);
    kernels::set_claim_output(ClaimOutput::Auto);
    kernels::set_write_prefetch(WritePrefetch::Auto);
  }
};

void expect_same_bits_in_every_mode(const std::string& model) {
  const fs::path out_dir = fs::path(KILN_BINARY_DIR) / "zoo_compiled";
  fs::create_directories(out_dir);
  const fs::path artifact = out_dir / (model + ".determinism.kiln");
  compiler::CompileOptions opt;
  opt.cache_dir = (out_dir / "cache").string();
  compiler::compile_file((model_dir(model) / "model.onnx").string(), artifact.string(), opt);
  auto exe = Executable::load(artifact.string());
  const std::map<std::string, Tensor> inputs = read_inputs(model_dir(model));
  AutoModes restore;
  const Modes modes[] = {
      {ExpandBands::Off, ClaimOutput::Off, WritePrefetch::Off, 2, "two calls a pair (cores close)"},
      {ExpandBands::On, ClaimOutput::On, WritePrefetch::On, 2, "bands, claimed and prefetched lines (cores far)"},
      {ExpandBands::On, ClaimOutput::Off, WritePrefetch::Off, 3, "bands on three threads"},
      {ExpandBands::Off, ClaimOutput::Off, WritePrefetch::Off, 1, "one thread"},
      {ExpandBands::On, ClaimOutput::Off, WritePrefetch::Off, 1, "one thread, bands"},
  };
  std::map<std::string, Tensor> first;
  for (const Modes& m : modes) {
    kernels::set_expand_bands(m.bands);
    kernels::set_claim_output(m.claim);
    kernels::set_write_prefetch(m.prefetch);
    RunOptions ro;
    ro.threads = m.threads;
    std::map<std::string, Tensor> got = exe->run(inputs, ro);
    if (first.empty()) {
      first = std::move(got);
      continue;
    }
    ASSERT_EQ(got.size(), first.size()) << model << ", " << m.what;
    for (const auto& [name, t] : first)
      EXPECT_TRUE(testing::bit_equal(got.at(name), t)) << model << ", " << m.what << ": output " << name;
  }
}

// The two models whose compiled graphs hold the banded pairs (kiln.ExpandDepthwise,
// kiln.DepthwiseProject; efficientnet_b0's with its squeeze-excitation means; mobilenet_v2's
// stem with its first pair, kiln.StemDepthwiseProject, banded on two and three threads), and
// resnet18, whose stem runs in bands on more than one thread (conv_direct_bands).
TEST(ZooDeterminism, MobileNetV2) { expect_same_bits_in_every_mode("mobilenet_v2"); }
TEST(ZooDeterminism, EfficientNetB0) { expect_same_bits_in_every_mode("efficientnet_b0"); }
TEST(ZooDeterminism, ResNet18) { expect_same_bits_in_every_mode("resnet18"); }

}  // namespace
}  // namespace kiln::zoo

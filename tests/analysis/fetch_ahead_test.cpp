// Fetching ahead on mobilenet_v2 at two threads: the last 1x1 (320 -> 1280 at 7x7, the direct
// tactic's general schedule) fetches the classifier's packed weights as it computes, two steps
// before the classifier reads them; nothing else fetches ahead; the outputs are the same bit for
// bit with it on and off; and kiln profile says which kernel fetched what.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kiln/analysis/profile.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/runtime/step.h"
#include "mobilenet_artifact.h"

namespace kiln::analysis {
namespace {

using FetchAhead = MobilenetArtifact;

constexpr const char* kLastConv = "/features/features.18/features.18.0/Conv";
constexpr const char* kClassifier = "/classifier/classifier.1/Gemm";

struct RestoreFetchAhead {
  const bool was = runtime::fetch_ahead_on();
  ~RestoreFetchAhead() { runtime::set_fetch_ahead(was); }
};

TEST_F(FetchAhead, TheLastConvolutionFetchesTheClassifiersWeights) {
  RestoreFetchAhead restore;
  RunOptions ro;
  ro.threads = 2;
  std::vector<Tensor> out;
  runtime::set_fetch_ahead(true);
  const std::vector<StepTiming> steps = exe_->profile_run(inputs_, out, ro);
  const Tensor with = out.at(0).clone();
  size_t fetching = 0, last_conv = steps.size(), classifier = steps.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].node == kLastConv) last_conv = i;
    if (steps[i].node == kClassifier) classifier = i;
    if (steps[i].fetch_ahead_bytes == 0) continue;
    ++fetching;
    EXPECT_EQ(steps[i].node, kLastConv);
    EXPECT_EQ(steps[i].fetch_ahead_for, kClassifier);
    // 1280 x 1000 floats, the columns padded to whole 16- or 32-column panels.
    EXPECT_GE(steps[i].fetch_ahead_bytes, 1280 * 1000 * 4);
    EXPECT_LE(steps[i].fetch_ahead_bytes, 1280 * 1024 * 4);
  }
  EXPECT_EQ(fetching, 1u);
  ASSERT_LT(classifier, steps.size());
  ASSERT_LT(last_conv, classifier);
  EXPECT_EQ(classifier - last_conv, 2u);  // the average pool between them (Flatten is a view)

  runtime::set_fetch_ahead(false);
  for (const StepTiming& s : exe_->profile_run(inputs_, out, ro)) EXPECT_EQ(s.fetch_ahead_bytes, 0) << s.node;
  ASSERT_EQ(out.at(0).nbytes(), with.nbytes());
  EXPECT_EQ(std::memcmp(out.at(0).raw(), with.raw(), with.nbytes()), 0) << "prefetches changed the outputs";
}

TEST_F(FetchAhead, ProfileNamesTheFetchInTextAndJson) {
  RestoreFetchAhead restore;
  runtime::set_fetch_ahead(true);
  RunOptions ro;
  ro.threads = 2;
  std::vector<Tensor> out;
  Profile p;
  p.threads = 2;
  p.roof.peak_gflops = 200, p.roof.bandwidth_gbs = 40;  // any roof: the test reads the fetch lines
  for (const StepTiming& s : exe_->profile_run(inputs_, out, ro)) {
    KernelProfile k;
    k.name = s.node, k.op = s.op, k.tactic = s.tactic, k.ms = s.ms;
    k.fetch_ahead_bytes = s.fetch_ahead_bytes, k.fetch_ahead_for = s.fetch_ahead_for;
    p.kernels.push_back(k);
  }
  summarize(p, {});
  const std::string text = profile_to_text(p, 5);
  EXPECT_NE(text.find(std::string("fetched ahead: ") + kLastConv + " fetched 5.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string(" of ") + kClassifier + "'s weights"), std::string::npos) << text;
  const std::string json = profile_to_json(p);
  EXPECT_NE(json.find(std::string("\"fetch_ahead_for\":\"") + kClassifier), std::string::npos) << json;
}

// Off by default on Zen 5 only (AMD family 1Ah, where it measured slower), unless the
// environment chose.
TEST(FetchAheadDefault, OffOnlyWhereItMeasuredSlower) {
  EXPECT_EQ(runtime::fetch_ahead_default(), kernels::cpu_amd_family() != 0x1a);
  const char* env = std::getenv("KILN_FETCH_AHEAD");
  if (!env) EXPECT_EQ(runtime::fetch_ahead_on(), runtime::fetch_ahead_default());
}

}  // namespace
}  // namespace kiln::analysis

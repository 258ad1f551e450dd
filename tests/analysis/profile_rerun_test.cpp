// kiln profile --rerun on mobilenet_v2: every kernel that writes nothing it reads runs a second
// time inside the profiled run without changing the outputs, the layers planned in place (the
// projections that add their residual into it) are left out, and the sums, the text and the
// JSON agree with the kernels'.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "kiln/analysis/profile.h"
#include "kiln/analysis/profile_rerun.h"
#include "mobilenet_artifact.h"

namespace kiln::analysis {
namespace {

using ProfileRerun = MobilenetArtifact;

TEST_F(ProfileRerun, SecondCallsLeaveTheOutputsAsTheyWere) {
  std::vector<Tensor> plain, profiled;
  exe_->run(inputs_, plain, {});
  const Tensor expect = plain.at(0).clone();
  const std::vector<StepTiming> steps = exe_->profile_run(inputs_, profiled, {}, true);
  ASSERT_EQ(profiled.at(0).nbytes(), expect.nbytes());
  // Bit for bit: a residual added into its own output a second time would change them.
  EXPECT_EQ(std::memcmp(profiled.at(0).raw(), expect.raw(), expect.nbytes()), 0);
  size_t again = 0, in_place = 0, stem = 0;
  for (const StepTiming& s : steps) {
    if (s.again_ms >= 0) ++again;
    else if (s.fast) ++in_place;
  }
  // Most of the 36 kernels run again; the ten projections with a residual (each run with its
  // depthwise layer, kiln.DepthwiseProject), planned in place, do not.
  EXPECT_GT(again, 25u);
  EXPECT_GE(in_place, 1u);
  for (const StepTiming& s : steps) {
    if (s.node == "/features/features.3/conv/conv.2/Conv") {
      EXPECT_LT(s.again_ms, 0) << "it adds into its residual";
    } else if (s.node == "/features/features.1/conv/conv.1/Conv") {
      EXPECT_GE(s.again_ms, 0) << "the stem with the first pair (kiln.StemDepthwiseProject) reads the input";
      ++stem;
    }
  }
  EXPECT_EQ(stem, 1u);
  // Without rerun no step runs again.
  for (const StepTiming& s : exe_->profile_run(inputs_, profiled, {})) EXPECT_LT(s.again_ms, 0) << s.node;
}

TEST_F(ProfileRerun, SumsTextAndJsonFollowTheKernels) {
  ProfileOptions opt;
  opt.runs = 3;
  opt.warmup = 1;
  const Rerun r = profile_rerun(*exe_, inputs_, opt);
  ASSERT_FALSE(r.kernels.empty());
  double ms = 0, again = 0, skipped = 0;
  size_t not_rerun = 0, rerun = 0;
  for (const KernelRerun& k : r.kernels) {
    EXPECT_GT(k.ms, 0) << k.name;
    if (k.again_ms < 0) {
      ++not_rerun, skipped += k.ms;
      EXPECT_EQ(k.cold_ms, 0) << k.name;
      continue;
    }
    ++rerun, ms += k.ms, again += k.again_ms;
    EXPECT_GT(k.again_ms, 0) << k.name;
    EXPECT_DOUBLE_EQ(k.cold_ms, k.ms - k.again_ms) << k.name;
  }
  EXPECT_EQ(r.not_rerun, not_rerun);
  EXPECT_NEAR(r.ms, ms, 1e-9);
  EXPECT_NEAR(r.again_ms, again, 1e-9);
  EXPECT_NEAR(r.cold_ms, ms - again, 1e-9);
  EXPECT_NEAR(r.not_rerun_ms, skipped, 1e-9);
  const std::string text = rerun_to_text(r, 5);
  EXPECT_NE(text.find("data movement (--rerun, 1 threads, median of 3 runs)"), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(rerun) + " kernels run again"), std::string::npos) << text;
  EXPECT_NE(text.find("reference kernel): " + std::to_string(not_rerun) + " kernels"),
            std::string::npos)
      << text;
  const json::Value j = rerun_json(r);
  EXPECT_EQ(j.find("kernels")->as_array("kernels").size(), rerun);
  EXPECT_EQ(j.find("not_rerun")->as_array("not_rerun").size(), not_rerun);
  EXPECT_NEAR(j.find("cold_ms")->as_double("cold_ms"), r.cold_ms, 1e-9);
}

}  // namespace
}  // namespace kiln::analysis

// kiln profile --balance: each kernel's wall time split into the threads' work inside its pieces,
// the wait for the slowest thread and the time outside the pieces (profile_balance.h). The
// arithmetic on runs of known steps, and on mobilenet_v2 at two threads: every kernel's threads
// worked no longer than it ran, its convolutions split into pieces, and the text and JSON
// follow the kernels.
#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/analysis/profile.h"
#include "kiln/analysis/profile_balance.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"
#include "mobilenet_artifact.h"

namespace kiln::analysis {
namespace {

// A step whose one region ran `region_ms` (the rest of ms: serial code).
StepTiming step(const std::string& name, double ms, std::vector<double> busy, int64_t pieces = 8,
                int64_t stolen = 0, double region_ms = -1) {
  StepTiming s;
  s.node = name, s.op = "kiln.FusedConv", s.tactic = "direct", s.fast = true, s.ms = ms;
  s.busy_ms = std::move(busy);
  s.regions = 1, s.pieces = pieces, s.stolen = stolen;
  s.region_threads = pieces > 1 ? 2 : 1;
  s.region_ms = region_ms >= 0 ? region_ms : ms;
  return s;
}

TEST(ProfileBalance, SplitsEachKernelsThreadTimeIntoWorkWaitAndOutside) {
  const std::vector<std::vector<StepTiming>> runs = {
      {step("a", 1.0, {0.9, 0.6}, 8, 1, 0.97), step("b", 0.5, {0.4, 0.0}, 1, 0, 0.45)},
      {step("a", 1.2, {1.1, 0.8}, 8, 0, 1.15), step("b", 0.6, {0.5, 0.0}, 1, 0, 0.52)},
      {step("a", 1.1, {1.0, 0.7}, 8, 2, 1.06), step("b", 0.55, {0.45, 0.0}, 1, 0, 0.46)},
  };
  const Balance b = balance_from_runs(runs, 2);
  ASSERT_EQ(b.kernels.size(), 2u);
  const KernelBalance& a = b.kernels[0];
  // Medians: ms 1.1, busy 1.0 and 0.7.
  EXPECT_DOUBLE_EQ(a.ms, 1.1);
  ASSERT_EQ(a.busy_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(a.busy_ms[0], 1.0);
  EXPECT_DOUBLE_EQ(a.busy_ms[1], 0.7);
  EXPECT_NEAR(a.work_ms, 1.7, 1e-12);
  EXPECT_NEAR(a.imbalance_ms, 0.3, 1e-12);  // thread 1 waited 0.3 for thread 0
  EXPECT_NEAR(a.overhead_ms, 0.2, 1e-12);   // 2 x (1.1 - 1.0)
  EXPECT_NEAR(a.work_ms + a.imbalance_ms + a.overhead_ms, 2 * a.ms, 1e-12);
  // Serial code: the median of ms - region_ms (0.03, 0.05, 0.04); the rest of outside is the
  // region's synchronisation.
  EXPECT_NEAR(a.serial_ms, 0.04, 1e-12);
  EXPECT_NEAR(a.serial_thread_ms(2), 0.08, 1e-12);
  EXPECT_DOUBLE_EQ(a.pieces, 8);
  EXPECT_DOUBLE_EQ(a.stolen, 1);  // (1 + 0 + 2) / 3
  EXPECT_EQ(a.region_threads, 2);
  EXPECT_FALSE(a.caller_alone());
  // b ran on one thread: the other idled for its whole time.
  const KernelBalance& k = b.kernels[1];
  EXPECT_EQ(k.region_threads, 1);
  EXPECT_NEAR(k.imbalance_ms, 0.45, 1e-12);
  EXPECT_NEAR(k.overhead_ms, 0.2, 1e-12);
  EXPECT_EQ(b.one_thread, 1u);
  EXPECT_DOUBLE_EQ(b.one_thread_ms, 0.55);
  EXPECT_NEAR(b.ms, 1.65, 1e-12);
  EXPECT_NEAR(b.work_ms, 2.15, 1e-12);
  EXPECT_NEAR(b.lost_ms(), 0.3 + 0.2 + 0.45 + 0.2, 1e-12);
  // b's serial code: 0.05, 0.08, 0.09 -> 0.08 ms, 0.16 thread-ms of its 0.2 outside.
  EXPECT_NEAR(k.serial_ms, 0.08, 1e-12);
  EXPECT_NEAR(b.serial_ms, 0.12, 1e-12);
  EXPECT_NEAR(b.serial_thread_ms, 0.24, 1e-12);
  EXPECT_NEAR(b.sync_ms, 0.4 - 0.24, 1e-12);

  const std::string text = balance_to_text(b, 10);
  EXPECT_NE(text.find("threads (--balance, 2 threads, median of 3 runs)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 kernels ran on one thread"), std::string::npos) << text;
  // Sorted by lost thread-ms: b (0.65) before a (0.5).
  EXPECT_LT(text.find("\n  b "), text.find("\n  a ")) << text;
  const json::Value j = balance_json(b);
  EXPECT_DOUBLE_EQ(j.find("work_ms")->as_double("work_ms"), b.work_ms);
  EXPECT_DOUBLE_EQ(j.find("sync_ms")->as_double("sync_ms"), b.sync_ms);
  EXPECT_NE(text.find("the regions' synchronisation"), std::string::npos) << text;
  const auto& ks = j.find("kernels")->as_array("kernels");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].find("busy_ms")->as_array("busy_ms").size(), 2u);
  EXPECT_NEAR(ks[0].find("imbalance_ms")->as_double("imbalance_ms"), 0.3, 1e-12);
  // No speeds measured (balance_from_runs alone): no line, an empty list.
  EXPECT_EQ(text.find("measured speed"), std::string::npos) << text;
  EXPECT_TRUE(j.find("thread_speeds")->as_array("thread_speeds").empty());
}

// The threads' measured speeds (kernels::thread_speed, what one-share-a-thread regions follow)
// are printed for the workers and listed for all threads in --json.
TEST(ProfileBalance, ShowsTheThreadsMeasuredSpeeds) {
  Balance b = balance_from_runs({{step("a", 1.0, {0.9, 0.6}, 2)}}, 2);
  b.thread_speeds = {1.0, 0.62};
  const std::string text = balance_to_text(b, 5);
  EXPECT_NE(text.find("measured speed against the calling thread's (the regions cut one share a thread, sized by "
                      "it): thread 1 0.62\n"),
            std::string::npos)
      << text;
  const auto& speeds = balance_json(b).find("thread_speeds")->as_array("thread_speeds");
  ASSERT_EQ(speeds.size(), 2u);
  EXPECT_DOUBLE_EQ(speeds[1].as_double("thread_speeds"), 0.62);
}

// A kernel cut for two threads whose pieces the caller ran alone (the other core busy) is told
// apart from one that never split.
TEST(ProfileBalance, KernelsTheCallerRanAloneAreCountedApart) {
  const Balance b = balance_from_runs({{step("c", 1.0, {0.95, 0.0}, 8, 4), step("d", 0.5, {0.3, 0.15}, 8)}}, 2);
  EXPECT_TRUE(b.kernels[0].caller_alone());
  EXPECT_FALSE(b.kernels[1].caller_alone());
  EXPECT_EQ(b.caller_alone, 1u);
  EXPECT_DOUBLE_EQ(b.caller_alone_ms, 1.0);
  EXPECT_EQ(b.one_thread, 0u);
  EXPECT_NE(balance_to_text(b, 5).find("1 kernels were cut for 2 threads but the calling thread ran all their pieces"),
            std::string::npos);
}

TEST(ProfileBalance, RunsWithoutStatsOrWithDifferentStepsAreErrors) {
  StepTiming bare = step("a", 1.0, {});
  EXPECT_THROW(balance_from_runs({{bare}}, 2), Error);
  EXPECT_THROW(balance_from_runs({{step("a", 1, {1, 1})}, {step("b", 1, {1, 1})}}, 2), Error);
  EXPECT_THROW(balance_from_runs({}, 2), Error);
}

using ProfileBalanceModel = MobilenetArtifact;

TEST_F(ProfileBalanceModel, ThreadsWorkNoLongerThanTheirKernelsRun) {
  ProfileOptions opt;
  opt.runs = 3, opt.warmup = 1, opt.threads = 2;
  const Balance b = profile_balance(*exe_, inputs_, opt);
  EXPECT_FALSE(kernels::pool_stats_on()) << "collection is turned off after the runs";
  // mobilenet_v2's 36 kernels: 14 of its 52 convolutions run in pairs (kiln.DepthwiseProject),
  // the first pair with the stem (kiln.StemDepthwiseProject), 3 more in the expand + depthwise
  // ones.
  ASSERT_GT(b.kernels.size(), 35u);
  size_t convs = 0;
  for (const KernelBalance& k : b.kernels) {
    ASSERT_EQ(k.busy_ms.size(), 2u) << k.name;
    // Each thread's pieces run inside the kernel's call (a little slack: two clocks' medians).
    for (double busy : k.busy_ms) EXPECT_LE(busy, k.ms * 1.02 + 1e-3) << k.name;
    EXPECT_NEAR(k.work_ms + k.imbalance_ms + k.overhead_ms, 2 * k.ms, 2 * k.ms * 0.02 + 2e-3) << k.name;
    EXPECT_GE(k.serial_ms, 0) << k.name;
    EXPECT_LE(k.serial_ms, k.ms) << k.name;
    if (k.op == "kiln.FusedConv" || k.op == "kiln.DepthwiseProject" || k.op == "kiln.StemDepthwiseProject") {
      ++convs;
      EXPECT_GE(k.regions, 1) << k.name;
      EXPECT_GE(k.pieces, k.regions) << k.name;
      EXPECT_GT(k.work_ms, 0) << k.name;
    }
  }
  EXPECT_GT(convs, 30u);
  // mobilenet_v2's small-plane pairs run one share a thread: both threads' speeds are reported.
  ASSERT_EQ(b.thread_speeds.size(), 2u);
  EXPECT_EQ(b.thread_speeds[0], 1.0);
  EXPECT_GT(b.thread_speeds[1], 0.2);
  EXPECT_LT(b.thread_speeds[1], 5.0);
  // The serial code and the synchronisation split the time outside the pieces.
  EXPECT_NEAR(b.serial_thread_ms + b.sync_ms, b.overhead_ms, 1e-9);
  EXPECT_GE(b.sync_ms, -1e-12);
  // Plain runs count nothing.
  std::vector<Tensor> out;
  for (const StepTiming& s : exe_->profile_run(inputs_, out, {})) EXPECT_TRUE(s.busy_ms.empty()) << s.node;
}

}  // namespace
}  // namespace kiln::analysis

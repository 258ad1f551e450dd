// The spinning thread pool: many back-to-back regions cover every index exactly once (the
// generation/pending protocol loses no wake-up), exceptions from any chunk reach the caller,
// and nested regions run inline.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

TEST(Parallel, ManyRegionsCoverEveryIndexOnce) {
  // No idle spin: a model run elsewhere in this binary would otherwise keep the worker
  // spinning through the pauses below, and the sleep / wake-up path would go untested.
  set_idle_spin(std::chrono::microseconds(0));
  std::vector<std::atomic<int>> hits(97);
  for (int region = 0; region < 20000; ++region) {
    // Every few hundred regions, pause long enough for the worker to stop spinning and sleep.
    if (region % 500 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    parallel_for(97, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 20000);
  set_idle_spin(std::chrono::microseconds(kDefaultIdleSpinUs));
}

TEST(Parallel, IdleSpinIsCheckedAndCountsDownAfterTheLastScope) {
  EXPECT_THROW(set_idle_spin(std::chrono::microseconds(-1)), kiln::Error);
  EXPECT_THROW(set_idle_spin(kMaxIdleSpin + std::chrono::microseconds(1)), kiln::Error);
  set_idle_spin(std::chrono::microseconds(0));  // ends an idle spin an earlier run left behind
  set_idle_spin(std::chrono::milliseconds(500));
  EXPECT_EQ(idle_spin(), std::chrono::milliseconds(500));
  {
    const SpinningScope one_thread_run;  // no parallel region: no worker to keep awake
  }
  EXPECT_EQ(idle_spin_left().count(), 0);
  {
    const SpinningScope run;
    parallel_for(8, 2, [](int64_t, int64_t) {});
    EXPECT_EQ(idle_spin_left().count(), 0);  // a run is in progress
  }
  const auto left = idle_spin_left();
  EXPECT_GT(left, std::chrono::milliseconds(400));
  EXPECT_LE(left, std::chrono::milliseconds(501));
  // A shorter idle spin also shortens the one in progress.
  set_idle_spin(std::chrono::microseconds(0));
  EXPECT_LE(idle_spin_left(), std::chrono::microseconds(100));
  set_idle_spin(std::chrono::microseconds(kDefaultIdleSpinUs));
}

// KILN_IDLE_SPIN_MS (read at start-up; the CLI test checks that it takes effect): whole
// milliseconds in range, anything else an error that names the variable.
TEST(Parallel, IdleSpinFromEnvironment) {
  const char* before = std::getenv(kIdleSpinEnv);
  const std::string saved = before ? before : "";
  ::unsetenv(kIdleSpinEnv);
  EXPECT_FALSE(idle_spin_from_env().has_value());
  for (const auto& [text, ms] : {std::pair{"0", 0}, {"25", 25}, {"10000", 10000}}) {
    ::setenv(kIdleSpinEnv, text, 1);
    ASSERT_TRUE(idle_spin_from_env().has_value()) << text;
    EXPECT_EQ(*idle_spin_from_env(), std::chrono::milliseconds(ms)) << text;
  }
  for (const char* bad : {"", "-1", "10001", "2.5", "5ms", " 5", "abc", "99999999999999999999"}) {
    ::setenv(kIdleSpinEnv, bad, 1);
    try {
      idle_spin_from_env();
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("KILN_IDLE_SPIN_MS must be 0 to 10000"), std::string::npos) << e.what();
    }
  }
  if (before) ::setenv(kIdleSpinEnv, saved.c_str(), 1);
  else ::unsetenv(kIdleSpinEnv);
}

// The point of the idle spin: a worker that took part in a run is still awake (spinning, not
// asleep on the condition variable) when the next run starts a few milliseconds later; without
// it the worker sleeps between the two. A worker whose core the host takes away still goes to
// sleep, so the spinning case gets a few tries on a loaded machine.
TEST(Parallel, WorkersStayAwakeBetweenRunsWithinTheIdleSpin) {
  if (hardware_threads() < 2) GTEST_SKIP() << "one hardware thread";
  // Sleeps counted from before the run (a worker woken for it does not count again), so that
  // this thread being descheduled right after the run cannot hide the sleep that follows.
  auto run_then_pause = [](std::chrono::milliseconds pause) {
    const int64_t before = worker_sleeps();
    {
      const SpinningScope run;
      parallel_for(64, 2, [](int64_t, int64_t) {});
    }
    std::this_thread::sleep_for(pause);
    return worker_sleeps() - before;
  };
  set_idle_spin(std::chrono::microseconds(0));
  EXPECT_GT(run_then_pause(std::chrono::milliseconds(5)), 0);
  set_idle_spin(std::chrono::seconds(2));
  bool stayed_awake = false;
  for (int attempt = 0; attempt < 5 && !stayed_awake; ++attempt)
    stayed_awake = run_then_pause(std::chrono::milliseconds(5)) == 0;
  set_idle_spin(std::chrono::microseconds(kDefaultIdleSpinUs));
  EXPECT_TRUE(stayed_awake);
}

TEST(Parallel, ChunksAreDisjointAndCoverEveryIndexForAnySizeAndThreads) {
  for (int threads : {2, 3, 5})
    for (int64_t n : {1, 2, 3, 4, 7, 16, 21, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int64_t> calls{0};
      parallel_for(n, threads, [&](int64_t b, int64_t e) {
        ASSERT_LT(b, e);
        calls.fetch_add(1);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << n << " indices on " << threads << " threads";
      // One index per chunk up to `threads`; beyond, at least one chunk per thread and at most four.
      if (n <= threads) EXPECT_EQ(calls.load(), n);
      else EXPECT_TRUE(calls.load() >= threads && calls.load() <= 4 * threads) << calls.load() << " chunks: " << n << " on " << threads;
    }
}

// parallel_owner names the thread whose share an index lies in: shares are contiguous runs of
// whole chunks in thread order (chunks never straddle two owners), the first index is the
// caller's and the last the last thread's, one thread or an index out of range is thread 0. 10
// indices on 2 threads: 5 each (4 chunks of 1 or 2 a thread).
TEST(Parallel, OwnersAreContiguousRunsOfWholeChunks) {
  for (int threads : {1, 2, 3, 5})
    for (int64_t n : {1, 2, 3, 4, 7, 10, 16, 21, 1000}) {
      std::vector<std::pair<int64_t, int64_t>> chunks;
      std::mutex mu;
      parallel_for(n, threads, [&](int64_t b, int64_t e) {
        std::lock_guard<std::mutex> lock(mu);
        chunks.emplace_back(b, e);
      });
      for (const auto& [b, e] : chunks)
        EXPECT_EQ(parallel_owner(n, threads, b), parallel_owner(n, threads, e - 1)) << n << " on " << threads;
      EXPECT_EQ(parallel_owner(n, threads, 0), 0);
      EXPECT_EQ(parallel_owner(n, threads, n - 1), std::min<int64_t>(threads, n) - 1) << n << " on " << threads;
      for (int64_t i = 1; i < n; ++i) {
        const int step = parallel_owner(n, threads, i) - parallel_owner(n, threads, i - 1);
        EXPECT_TRUE(step == 0 || step == 1) << n << " on " << threads << " at " << i;
      }
    }
  EXPECT_EQ(parallel_owner(10, 2, 4), 0);
  EXPECT_EQ(parallel_owner(10, 2, 5), 1);
  EXPECT_EQ(parallel_owner(10, 2, 10), 0);
  EXPECT_EQ(parallel_owner(10, 1, 9), 0);
}

// Threads own shares that differ by at most one index, whatever n: with chunks of one size for
// all, 14 indices on 2 threads were 7 chunks of 2, one thread owning 6 and the other 8. Up to
// kPiecesPerThread indices a thread every index is a chunk of its own (kernels that cut their
// work in parts rely on that, parallel.h).
TEST(Parallel, SharesDifferByAtMostOneIndex) {
  for (int threads : {2, 3, 5})
    for (int64_t n : {2, 7, 9, 10, 14, 22, 26, 100, 1001}) {
      if (n < threads) continue;
      std::vector<int64_t> owned(static_cast<size_t>(threads), 0);
      for (int64_t i = 0; i < n; ++i) ++owned[static_cast<size_t>(parallel_owner(n, threads, i))];
      const auto [lo, hi] = std::minmax_element(owned.begin(), owned.end());
      EXPECT_LE(*hi - *lo, 1) << n << " on " << threads;
      std::mutex mu;
      int64_t chunks = 0, widest = 0;
      parallel_for(n, threads, [&](int64_t b, int64_t e) {
        std::lock_guard<std::mutex> lock(mu);
        ++chunks, widest = std::max(widest, e - b);
        EXPECT_EQ(parallel_owner(n, threads, b), parallel_owner(n, threads, e - 1));
      });
      if (n <= threads * kPiecesPerThread) {
        EXPECT_EQ(chunks, n) << n << " on " << threads;
        EXPECT_EQ(widest, 1);
      } else {
        EXPECT_EQ(chunks, threads * kPiecesPerThread) << n << " on " << threads;
      }
    }
  EXPECT_EQ(parallel_owner(14, 2, 6), 0);
  EXPECT_EQ(parallel_owner(14, 2, 7), 1);
}

// tapered_start keeps each thread's share of [0, n) where an even cut puts it, and cuts it into
// parts that shrink toward its end (m : m-1 : .. : 1); off, or on one thread, the even cut.
TEST(Parallel, TaperedPartsKeepEachThreadsShareAndShrinkTowardItsEnd) {
  ASSERT_TRUE(tapered_parts_on());
  for (int threads : {1, 2, 3})
    for (int64_t parts : {1, 2, 6, 8, 12})
      for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{28}, int64_t{100}, int64_t{1000}}) {
        const std::string at = std::to_string(n) + " in " + std::to_string(parts) + " on " + std::to_string(threads);
        EXPECT_EQ(tapered_start(n, parts, threads, 0), 0) << at;
        EXPECT_EQ(tapered_start(n, parts, threads, parts), n) << at;
        for (int64_t p = 0; p < parts; ++p)
          EXPECT_LE(tapered_start(n, parts, threads, p), tapered_start(n, parts, threads, p + 1)) << at;
        const int64_t t_count = std::min<int64_t>(threads, parts);
        if (t_count <= 1) {
          for (int64_t p = 0; p <= parts; ++p) EXPECT_EQ(tapered_start(n, parts, threads, p), n * p / parts) << at;
          continue;
        }
        for (int64_t p = 0; p < parts; ++p) {
          // A part that starts a thread's share starts where the even cut starts it.
          const bool first = p == 0 || parallel_owner(parts, threads, p) != parallel_owner(parts, threads, p - 1);
          if (first) {
            EXPECT_EQ(tapered_start(n, parts, threads, p), n * p / parts) << at << " part " << p;
          }
          // Within a share each part is no smaller than the next but for rounding.
          const bool next_same =
              p + 1 < parts && parallel_owner(parts, threads, p + 1) == parallel_owner(parts, threads, p);
          if (next_same && p + 2 <= parts) {
            const int64_t here = tapered_start(n, parts, threads, p + 1) - tapered_start(n, parts, threads, p);
            const int64_t next = tapered_start(n, parts, threads, p + 2) - tapered_start(n, parts, threads, p + 1);
            EXPECT_GE(here + 1, next) << at << " part " << p;
          }
        }
      }
  // 1000 on 2 threads in 8 parts: shares of 500, each 200, 150, 100, 50.
  const std::vector<int64_t> want = {0, 200, 350, 450, 500, 700, 850, 950, 1000};
  for (int64_t p = 0; p <= 8; ++p) EXPECT_EQ(tapered_start(1000, 8, 2, p), want[static_cast<size_t>(p)]) << p;
  set_tapered_parts(false);
  for (int64_t p = 0; p <= 8; ++p) EXPECT_EQ(tapered_start(1000, 8, 2, p), 125 * p) << p;
  set_tapered_parts(true);
}

TEST(Parallel, ExceptionsFromAnyChunkReachTheCaller) {
  for (int64_t bad : {0, 60}) {
    EXPECT_THROW(parallel_for(64, 2,
                              [&](int64_t b, int64_t e) {
                                if (bad >= b && bad < e) throw std::runtime_error("chunk failed");
                              }),
                 std::runtime_error);
  }
  std::atomic<int64_t> sum{0};  // the pool still works afterwards
  parallel_for(100, 2, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100);
}

TEST(Parallel, NestedRegionsRunInline) {
  std::atomic<int64_t> inner{0};
  parallel_for(4, 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) parallel_for(10, 2, [&](int64_t ib, int64_t ie) { inner += ie - ib; });
  });
  EXPECT_EQ(inner.load(), 40);
}

// Busy-waits `us` microseconds (a piece of known length; sleeping would leave the core idle
// but still count as inside the piece, which is what the stats measure too).
void spin_for_us(int64_t us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// set_pool_stats / take_pool_stats (kiln profile --balance): with collection on, a region's
// pieces are counted with the time each thread spent in them; an inline region is one piece on
// thread 0; a nested region is part of its piece, not a region of its own; taking the stats
// starts them again; with collection off nothing is counted.
TEST(Parallel, StatsCountEachThreadsPiecesWhileOn) {
  set_pool_stats(true);
  ASSERT_TRUE(pool_stats_on());
  (void)take_pool_stats();
  const auto start = std::chrono::steady_clock::now();
  parallel_for(8, 2, [&](int64_t b, int64_t e) { spin_for_us(300 * (e - b)); });
  const double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  PoolStats s = take_pool_stats();
  EXPECT_EQ(s.regions, 1);
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.pieces, 8);  // 8 indices on 2 threads: 4 pieces a thread, one index each
  EXPECT_LE(s.stolen, 8);
  const int64_t busy = s.busy_ns[0] + s.busy_ns[1];
  EXPECT_GE(busy, 8 * 300'000);  // every piece spun 300 µs inside fn
  // No thread is busy longer than the region ran (the worker's time is its own, not the caller's).
  EXPECT_LE(s.busy_ns[0], wall_ns);
  EXPECT_LE(s.busy_ns[1], wall_ns);
  // The region's wall time holds every thread's pieces and fits in the call.
  EXPECT_GE(s.region_ns, std::max(s.busy_ns[0], s.busy_ns[1]));
  EXPECT_LE(s.region_ns, wall_ns);
  for (int t = 2; t < PoolStats::kThreads; ++t) EXPECT_EQ(s.busy_ns[t], 0) << t;

  // Taken: nothing left.
  s = take_pool_stats();
  EXPECT_EQ(s.regions, 0);
  EXPECT_EQ(s.pieces, 0);
  EXPECT_EQ(s.busy_ns[0] + s.busy_ns[1], 0);

  // Inline on one thread: one region, one piece on the caller.
  parallel_for(5, 1, [&](int64_t b, int64_t e) { spin_for_us(100 * (e - b)); });
  s = take_pool_stats();
  EXPECT_EQ(s.regions, 1);
  EXPECT_EQ(s.pieces, 1);
  EXPECT_EQ(s.threads, 1);
  EXPECT_GE(s.busy_ns[0], 500'000);
  EXPECT_GE(s.region_ns, s.busy_ns[0]);
  EXPECT_EQ(s.busy_ns[1], 0);

  // Nested regions run inside their piece: two regions' worth of pieces, not more.
  parallel_for(2, 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) parallel_for(4, 2, [&](int64_t, int64_t) { spin_for_us(50); });
  });
  s = take_pool_stats();
  EXPECT_EQ(s.regions, 1);
  EXPECT_EQ(s.pieces, 2);

  set_pool_stats(false);
  EXPECT_FALSE(pool_stats_on());
  parallel_for(8, 2, [&](int64_t b, int64_t e) { spin_for_us(10 * (e - b)); });
  s = take_pool_stats();
  EXPECT_EQ(s.regions, 0);
  EXPECT_EQ(s.pieces, 0);
  EXPECT_EQ(s.region_ns, 0);
  EXPECT_EQ(s.busy_ns[0] + s.busy_ns[1], 0);
}

// parallel_shares: one call a thread (min(threads, n, 16)), each on a non-empty contiguous
// share, together every index once; with the speeds equal (or speed shares off) the cut is even,
// the caller's share first.
TEST(Parallel, SharesAreOneNonEmptyRunAThreadCoveringEveryIndexOnce) {
  reset_thread_speeds();
  for (bool follow : {true, false}) {
    set_speed_shares(follow);
    for (int threads : {2, 3, 5, 20})
      for (int64_t n : {1, 2, 3, 7, 14, 1000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> calls;
        parallel_shares(n, threads, [&](int64_t b, int64_t e) {
          std::lock_guard<std::mutex> lock(mu);
          calls.emplace_back(b, e);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        reset_thread_speeds();  // whatever this region measured: the next cut stays even
        for (auto& h : hits) ASSERT_EQ(h.load(), 1) << n << " on " << threads;
        EXPECT_EQ(static_cast<int64_t>(calls.size()), std::min<int64_t>({threads, n, 16})) << n << " on " << threads;
        std::sort(calls.begin(), calls.end());
        for (const auto& [b, e] : calls) {
          EXPECT_LT(b, e);
          // Even: each share within one index of n / calls.
          const double even = static_cast<double>(n) / static_cast<double>(calls.size());
          EXPECT_LE(std::abs(static_cast<double>(e - b) - even), 1.0) << n << " on " << threads;
        }
      }
  }
  set_speed_shares(true);
  // 7 rows on two threads: the first share (the caller's) rounded up.
  std::vector<std::pair<int64_t, int64_t>> calls;
  std::mutex mu;
  parallel_shares(7, 2, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace_back(b, e);
  });
  reset_thread_speeds();
  std::sort(calls.begin(), calls.end());
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 7}}));
  EXPECT_EQ(thread_speed(0), 1.0);
  EXPECT_EQ(thread_speed(1), 1.0);
}

// Runs `body` in a process of its own (gtest's threadsafe death-test style runs this test
// again in a new process up to here), its failures failing the test (the child's stderr is
// what the failure shows, so bodies print what they measured there). Timing tests need it: a
// pool grown by the wider regions of earlier tests keeps its extra workers spinning between
// the narrower regions here, and on two cores they take the caller's core (the learned cuts
// drifted by up to 11 of 60 indices when these ran after the 5-thread tests in one process).
// For the same reason ctest runs the ParallelTiming suite alone (CMakeLists.txt: SERIAL).
// `body` returns why it could not measure (the test is then skipped), or "".
template <class Body>
void in_fresh_process(Body body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto skip_file = [](pid_t parent) { return testing::TempDir() + "kiln_timing_skip_" + std::to_string(parent); };
  const std::string mine = skip_file(getpid());
  std::remove(mine.c_str());
  EXPECT_EXIT(
      {
        const std::string skip = body();
        if (!skip.empty()) std::ofstream(skip_file(getppid())) << skip << "\n";
        std::exit(testing::Test::HasFailure() ? 1 : 0);
      },
      testing::ExitedWithCode(0), "");
  std::string reason;
  if (std::ifstream in(mine); in && std::getline(in, reason)) {
    std::remove(mine.c_str());
    GTEST_SKIP() << reason;
  }
}

// Regions of 60 indices in shares on two threads, each spinning on the clock for a set time an
// index (so the cores' own speeds do not matter). Records the cut (the first share's end,
// whoever ran it: a worker woken onto the caller's core may run both shares) and how many
// regions had each thread run its own share, the only ones the pool learns from. Short shares
// (a few hundred microseconds): a thread that loses its core inside one comes back past the 4x
// ratio the pool ignores.
struct TwoThreadShares {
  std::thread::id caller = std::this_thread::get_id();
  int64_t cut = 0;
  int regions = 0, together = 0;

  void run(int caller_us, int worker_us, const void* key = nullptr) {
    std::atomic<int> own{0};
    parallel_shares(
        60, 2,
        [&](int64_t b, int64_t e) {
          const bool on_caller = std::this_thread::get_id() == caller;
          if (b == 0) cut = e;
          if (on_caller == (b == 0)) own.fetch_add(1);
          spin_for_us((on_caller ? caller_us : worker_us) * (e - b));
        },
        key);
    ++regions;
    together += own.load() == 2;
  }
  // Whether most regions since the last call ran on both threads at once; starts counting anew.
  bool mostly_together() {
    const bool most = 4 * together >= 3 * regions;
    regions = together = 0;
    return most;
  }
};

constexpr const char* kNoTwoCores = "the host seldom ran the two threads at once (another process on the cores)";

// Up to `tries` tries, each from forgotten speeds: one_try() runs a try's regions and says
// whether most of them ran on both threads (a try that did not does not count). Stops at the
// first counted try after which settled(); false when no try counted (nothing was measured).
template <class OneTry, class Settled>
bool measured_in_tries(int tries, OneTry one_try, Settled settled) {
  bool measured = false;
  for (int i = 0; i < tries; ++i) {
    reset_thread_speeds();
    if (!one_try()) continue;
    measured = true;
    if (settled()) break;
  }
  return measured;
}

// The pool times each thread's share and moves the cut toward the faster thread: here the
// worker spends twice as long per index as the caller, its measured speed settles near 0.5 and
// the cut near two thirds. With speed shares off the speeds are still measured but the cut
// stays even.
TEST(ParallelTiming, SharesFollowTheThreadsMeasuredSpeeds) {
  if (hardware_threads() < 2) GTEST_SKIP() << "one hardware thread";
  in_fresh_process([]() -> std::string {
    TwoThreadShares shares;
    // A disturbance the pool does not catch still moves the average: up to eight tries of 40
    // regions; a try counts when most of its regions ran on both threads.
    const bool measured = measured_in_tries(
        8,
        [&] {
          for (int i = 0; i < 40; ++i) shares.run(4, 8);
          return shares.mostly_together();
        },
        [&] { return thread_speed(1) > 0.3 && thread_speed(1) < 0.8 && shares.cut >= 34 && shares.cut <= 46; });
    if (!measured) return kNoTwoCores;
    std::fprintf(stderr, "learned: speed %.3f, cut %lld of 60\n", thread_speed(1), static_cast<long long>(shares.cut));
    EXPECT_GT(thread_speed(1), 0.3);
    EXPECT_LT(thread_speed(1), 0.8);
    EXPECT_GE(shares.cut, 34);  // 40 at the measured speeds, 30 with an even cut
    EXPECT_LE(shares.cut, 46);
    set_speed_shares(false);
    shares.run(4, 8);
    EXPECT_EQ(shares.cut, 30);
    EXPECT_LT(thread_speed(1), 0.8);  // still measured
    set_speed_shares(true);
    reset_thread_speeds();
    EXPECT_EQ(thread_speed(1), 1.0);
    return "";
  });
}

// A region whose worker ran its share over 4x slower per index than the caller teaches
// nothing (a descheduled thread, not a slower core): the speed stays where it was, and the cut
// even. Clamping such samples instead would have moved the speed to 0.81 after one region.
TEST(ParallelTiming, SharesIgnoreRegionsPastAFourfoldRatio) {
  if (hardware_threads() < 2) GTEST_SKIP() << "one hardware thread";
  in_fresh_process([]() -> std::string {
    TwoThreadShares shares;
    // (A caller that loses its core for the worker's whole share brings the ratio under 4x.)
    // The caller's shares last 300 us: a worker that has to be woken (the pool stops spinning
    // for a while when a spinner lost its core) comes before the caller could take its share.
    const bool measured = measured_in_tries(
        4,
        [&] {
          for (int i = 0; i < 8; ++i) shares.run(10, 100);  // 10x
          return shares.mostly_together();
        },
        [] { return thread_speed(1) == 1.0; });
    if (!measured) return kNoTwoCores;
    std::fprintf(stderr, "speed %.3f, cut %lld of 60\n", thread_speed(1), static_cast<long long>(shares.cut));
    EXPECT_EQ(thread_speed(1), 1.0);
    EXPECT_EQ(shares.cut, 30);
    reset_thread_speeds();
    return "";
  });
}

// Keyed regions learn speeds of their own: interleaved, a region whose worker takes twice as
// long per index and one where both threads take as long settle at different cuts.
TEST(ParallelTiming, KeyedSharesLearnTheirOwnSpeeds) {
  if (hardware_threads() < 2) GTEST_SKIP() << "one hardware thread";
  in_fresh_process([]() -> std::string {
    const int slow_key = 0, even_key = 0;
    TwoThreadShares slow, even;
    // One speed for both keys would cut both alike: the cuts must also be 6 apart.
    auto settled = [&] {
      return slow.cut >= 34 && slow.cut <= 46 && even.cut >= 26 && even.cut <= 34 && slow.cut >= even.cut + 6;
    };
    const bool measured = measured_in_tries(
        8,
        [&] {
          for (int i = 0; i < 40; ++i) {
            slow.run(4, 8, &slow_key);
            even.run(4, 4, &even_key);
          }
          return slow.mostly_together() & even.mostly_together();  // both counters restart
        },
        settled);
    if (!measured) return kNoTwoCores;
    std::fprintf(stderr, "cuts: slow key %lld, even key %lld of 60\n", static_cast<long long>(slow.cut),
                 static_cast<long long>(even.cut));
    EXPECT_GE(slow.cut, 34);  // 40 at its speeds
    EXPECT_LE(slow.cut, 46);
    EXPECT_GE(even.cut, 26);  // 30
    EXPECT_LE(even.cut, 34);
    EXPECT_GE(slow.cut, even.cut + 6);
    reset_thread_speeds();
    return "";
  });
}

}  // namespace
}  // namespace kiln::kernels

// The core-to-core round trip is measured on the calling thread and pool worker 1: a positive
// time (or, with the worker not there within 50 µs, negative), and never from inside a region,
// where the pool runs nested regions inline and the two sides would wait on each other.
TEST(Parallel, CoreRoundTripIsMeasuredOnlyOutsideRegions) {
  if (kiln::kernels::hardware_threads() < 2) GTEST_SKIP() << "one hardware thread";
  kiln::kernels::set_default_threads(2);
  std::atomic<int> inside_measured{0};
  kiln::kernels::parallel_for(2, 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      if (kiln::kernels::core_round_trip_ns() >= 0) inside_measured.fetch_add(1);
  });
  EXPECT_EQ(inside_measured.load(), 0);
  // Outside: both threads must run at once for a few µs, which a loaded host (ctest -j2) may
  // not grant for a while. The worker is kept spinning (as during a model run) and woken by a
  // region first: from sleep it may take longer than the 50 µs the probe waits.
  const kiln::kernels::SpinningScope spinning;
  double outside = -1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (outside <= 0 && std::chrono::steady_clock::now() < give_up) {
    kiln::kernels::parallel_for(2, 2, [](int64_t, int64_t) {});
    outside = kiln::kernels::core_round_trip_ns();
  }
  kiln::kernels::set_default_threads(0);
  if (outside <= 0) GTEST_SKIP() << "the worker never ran beside this thread for 5 s";
  EXPECT_LT(outside, 1e6);
}

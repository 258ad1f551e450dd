// A persistent pool of worker threads. parallel_for cuts [0, n) into pieces (up to
// kPiecesPerThread per thread) and gives each thread of the region a contiguous run of them:
// thread t (the caller is thread 0) owns the t-th 1/T of [0, n) and runs its pieces in order,
// then steals the not yet started pieces of the others from their far end, and the caller waits
// until every piece is done. Owning a fixed share is what makes two threads scale: the two vCPUs
// of this machine read a cache line the other one wrote 2x slower than their own, and overwrite
// it 4x slower (bench/cache_affinity_bench.cpp), so kernels that cut the same
// dimension the same way (every conv tactic cuts output pixels, see conv.h) make each thread
// read mostly what it wrote itself in the kernel before. Stealing keeps the pool robust: a
// thread that comes late (a worker that was asleep, or lost its core to another process) leaves
// its share to the others instead of stalling them.
//
// Waking is cheap: a new region is published by bumping an atomic generation counter, which
// idle workers spin on before they sleep on a condition variable; the caller likewise spins
// on the pending-piece counter. A model's kernels run back to back, so workers are usually
// still spinning when the next region starts and a fork-join costs a cache-line round trip
// instead of a futex wake-up (bench/parallel_bench: ~1.3 µs instead of ~8-11 µs; waking an
// idle vCPU of a virtual machine can cost far more). While a SpinningScope is open (a model
// run) idle workers keep spinning between regions however long the serial work in between
// takes, and for the idle spin (set_idle_spin) after the last scope closes, so that the next
// run, arriving a few milliseconds later, finds them awake; otherwise they stop after kSpin.
// The idle spin is what keeps two threads worth having under intermittent load: on the Zen 5
// host a worker that slept through a gap of 1-20 ms between runs came back so slowly (late to
// the first regions, then descheduled inside its pieces for milliseconds while its vCPU
// ramped up) that mobilenet_v2 at two threads ran 5.8-7.7 ms instead of 2.8, slower than on
// one thread (3.7); docs/runtime.md has the measurements.
//
// Spinning backfires only when threads compete for cores (an oversubscribed machine, or the
// caller and a worker sharing one): a spinner notices that it lost its core (a long gap
// between two polls), gives up and sleeps, and the pool blocks right away for the next
// kBackoffRegions regions. Waiting on a worker that is merely busy (a chunk that takes longer
// than the caller's, or a worker that was asleep) is not a reason to stop spinning.
#include "kiln/kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/ir/env.h"
#include "kiln/ir/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::kernels {
namespace {

std::atomic<int> g_default_threads{0};

// Most threads a region runs on (pieces per thread: kPiecesPerThread, parallel.h).
constexpr int kMaxThreads = 256;

// How a region of n indices on `threads` threads is cut into `total` pieces, thread t owning
// pieces [total * t / threads, total * (t + 1) / threads) (owned_from). Up to kPiecesPerThread
// indices a thread, each index is a piece. Beyond, thread t's share is indices [n * t / threads,
// n * (t + 1) / threads), cut into kPiecesPerThread pieces, so that the shares differ by at most
// one index. (Pieces of one size for all threads gave 14 indices on 2 threads as 7 pieces of 2,
// 3 pieces against 4: mobilenet_v2's first expand + depthwise bands ran 6 on one thread and 8 on
// the other, the caller waiting ~0.04 ms of its 0.2 at every run.)
// In a region of shares (parallel_shares) piece t is thread t's whole share, [bound[t],
// bound[t + 1]), sized by the threads' measured speeds (KeyedSpeeds, below).
constexpr int kShareThreads = 16;
struct PieceLayout {
  int64_t n, total;
  int threads;
  bool shares = false;
  int64_t bound[kShareThreads + 1] = {};
  // Indices [begin, end) of piece p.
  std::pair<int64_t, int64_t> range(int64_t p) const {
    if (shares) return {bound[p], bound[p + 1]};
    if (total == n) return {p, p + 1};
    const int64_t t = p / kPiecesPerThread, j = p % kPiecesPerThread;
    const int64_t a = n * t / threads, len = n * (t + 1) / threads - a;
    return {a + len * j / kPiecesPerThread, a + len * (j + 1) / kPiecesPerThread};
  }
};
PieceLayout piece_layout(int64_t n, int threads) {
  return {n, n <= int64_t{threads} * kPiecesPerThread ? n : int64_t{threads} * kPiecesPerThread, threads};
}

// How fast each pool thread runs its share of a parallel_shares region, relative to the caller
// (thread 0), as a moving average of the log of the ratio of units per second. The two vCPUs of
// the hosts measured are not equally fast: on the Zen 4 host one ran an FMA loop at 60 GFLOP/s
// and the other at 40 for minutes on end (another guest on its core), and regions cut in halves
// then wait for the slow one. Written by the thread that runs a region (under the pool's run
// lock), read by anyone.
std::atomic<double> g_log_speed[kShareThreads];
std::atomic<bool> g_speed_shares{env_switch_on("KILN_SPEED_SHARES")};
// Weight of one region's ratio in the average: ~10 regions (a mobilenet_v2 run has 13 such
// regions) follow a change of the host, and one disturbed region moves the shares little.
constexpr double kSpeedAlpha = 0.15;
// A region whose threads' rates differ by more than 4x teaches nothing: a thread descheduled
// inside its share (another process on its core, as under ctest -j2) is not a slower core, and
// clamping such a sample still moved the shares by a fifth of the clamp. The averages stay
// within +-log(4), so no share drops below a fifth of the region on two threads.
constexpr double kMaxLogRatio = 1.3862943611198906;
// Shares shorter than this are too noisy to time (a clock read is ~20 ns; a piece of a few
// microseconds varies with the caches).
constexpr int64_t kMinSampleNs = 3000;

// The speeds are also kept per region key (parallel_shares' `key`, e.g. a layer's weights):
// what a thread's share costs per index depends on the kernel too (whose cache the input rows
// are in, how rows round to tiles), and one average over mobilenet_v2's pairs gave its 56x56
// pair the wrong cut (the caller 20% busier there while the 14x14 pairs were even). A key's
// entry starts from the average over all regions. A hashed table: a key looks at kSpeedProbes
// entries from its hash and, when all hold other keys, takes over the first (a model with more
// keys than that keeps re-learning a few of them). Guarded by the pool's run lock.
constexpr int kSpeedKeys = 128, kSpeedProbes = 4;
static_assert(kSpeedKeys == 128, "speeds_for hashes to 7 bits");
struct KeyedSpeeds {
  const void* key = nullptr;
  double log_speed[kShareThreads] = {};
};

// The region of shares of n indices on `threads` threads: bound[t] = n * (speeds of threads
// before t) / (all speeds), each share at least one index.
PieceLayout share_layout(int64_t n, int threads, const KeyedSpeeds& ks) {
  PieceLayout l{n, threads, threads};
  l.shares = true;
  double speed[kShareThreads], sum = 0;
  for (int t = 0; t < threads; ++t)
    sum += speed[t] = g_speed_shares.load(std::memory_order_relaxed) ? std::exp(ks.log_speed[t]) : 1.0;
  double before = 0;
  for (int t = 0; t < threads; ++t) {
    const int64_t at = static_cast<int64_t>(std::llround(static_cast<double>(n) * before / sum));
    l.bound[t] = t == 0 ? 0 : std::clamp<int64_t>(at, l.bound[t - 1] + 1, n - (threads - t));
    before += speed[t];
  }
  l.bound[threads] = n;
  return l;
}

// The first of the `total` pieces thread t of `threads` owns (its last is owned_from(t + 1) - 1).
inline int64_t owned_from(int64_t total, int t, int threads) { return total * t / threads; }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long an idle worker spins before sleeping outside a SpinningScope: long enough to cover
// the gap between two kernels, short enough not to burn a core when idle.
constexpr auto kSpin = std::chrono::microseconds(50);
// How long the caller spins on busy workers before sleeping: a chunk may run a millisecond
// longer than the caller's (uneven work, a worker that had to be woken), and sleeping would add
// a wake-up to every such region.
constexpr auto kCallerSpin = std::chrono::milliseconds(2);
// 64 polls take ~1-2 µs; a gap this long between two checks means the thread lost its core to
// another thread (a scheduler time slice is milliseconds). Gaps of tens of microseconds are
// common without any contention on a virtual machine (the host's interrupts and exits), and
// taking those for preemption made the pool block on most regions (mobilenet_v2 at 2 threads:
// 7.5 -> 6.1 ms when only real preemptions count).
constexpr auto kPreempted = std::chrono::microseconds(300);
// After a spinner lost its core, the next this many regions block right away, as a pool
// without spinning would; then spinning is retried.
constexpr int kBackoffRegions = 256;

enum class Spin { Done, TimedOut, Preempted };

// Spins until pred(), until `limit` has passed (checked only while keep_going() is false), or
// until the spinner finds it was descheduled: on an oversubscribed machine spinning backfires
// (the spinner competes for the core the awaited thread needs, and an always-runnable thread
// loses the scheduler's wake-up preference).
template <class Pred, class KeepGoing>
Spin spin_until(Pred pred, std::chrono::microseconds limit, KeepGoing keep_going) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto last = start;
  for (int i = 0;; ++i) {
    if (pred()) return Spin::Done;
    cpu_relax();
    if ((i & 63) == 63) {
      const auto now = clock::now();
      if (now - last > kPreempted) return pred() ? Spin::Done : Spin::Preempted;
      if (keep_going()) start = now;
      else if (now - start > limit) return pred() ? Spin::Done : Spin::TimedOut;
      last = now;
    }
  }
}

std::atomic<int> g_spinning_scopes{0};
// KILN_IDLE_SPIN_MS when it holds a usable value (the CLI has refused any other by then).
int64_t idle_spin_at_start() {
  try {
    if (const auto spin = idle_spin_from_env()) return spin->count();
  } catch (const Error&) {
  }
  return kDefaultIdleSpinUs;
}
// The idle spin (set_idle_spin), and when the current one ends: steady_clock nanoseconds,
// stored as the last SpinningScope closes.
std::atomic<int64_t> g_idle_spin_us{idle_spin_at_start()};
std::atomic<int64_t> g_idle_spin_until_ns{0};

int64_t steady_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
static_assert(std::is_same_v<std::chrono::steady_clock::duration, std::chrono::nanoseconds>);

// Whether idle workers keep spinning: a model run is in progress, or the last one ended less
// than the idle spin ago.
bool keep_spinning() {
  return g_spinning_scopes.load(std::memory_order_relaxed) > 0 ||
         steady_ns() < g_idle_spin_until_ns.load(std::memory_order_relaxed);
}

// PoolStats while collection is on (set_pool_stats): each thread's counts on a line of their
// own, so that collecting them moves no line between the cores while a region runs.
std::atomic<bool> g_stats_on{false};
struct alignas(64) ThreadStats {
  std::atomic<int64_t> busy_ns{0}, pieces{0}, stolen{0};
};
ThreadStats g_thread_stats[PoolStats::kThreads];
struct alignas(64) RegionStats {  // the calling thread's alone
  std::atomic<int64_t> regions{0}, region_ns{0};
  std::atomic<int> threads{0};
} g_region_stats;

// Runs one piece; with the stats on, counts it for thread `self` (owning pieces [lo, hi)).
template <class Fn>
inline void run_piece(Fn&& fn, int self, int64_t piece, int64_t lo, int64_t hi, int64_t b, int64_t e) {
  if (!g_stats_on.load(std::memory_order_relaxed)) {
    fn(b, e);
    return;
  }
  const int64_t t0 = steady_ns();
  fn(b, e);
  // Before the piece is counted done: the caller reads these once every piece is.
  ThreadStats& ts = g_thread_stats[std::min(self, PoolStats::kThreads - 1)];
  ts.busy_ns.fetch_add(steady_ns() - t0, std::memory_order_relaxed);
  ts.pieces.fetch_add(1, std::memory_order_relaxed);
  if (piece < lo || piece >= hi) ts.stolen.fetch_add(1, std::memory_order_relaxed);
}

// A top-level region starts: counted, and its start time returned (0 with the stats off).
int64_t count_region(int threads) {
  if (!g_stats_on.load(std::memory_order_relaxed)) return 0;
  g_region_stats.regions.fetch_add(1, std::memory_order_relaxed);
  if (threads > g_region_stats.threads.load(std::memory_order_relaxed)) g_region_stats.threads.store(threads);
  return steady_ns();
}

// It ended (every piece done, as the caller sees it).
void region_done(int64_t start) {
  if (start != 0) g_region_stats.region_ns.fetch_add(steady_ns() - start, std::memory_order_relaxed);
}

class Pool {
 public:
  static Pool& get() {
    static Pool p;
    return p;
  }

  void run(int64_t n, int threads, bool shares, const void* key, FunctionRef<void(int64_t, int64_t)> fn) {
    std::lock_guard<std::mutex> serial(run_mu_);  // one parallel region at a time
    threads = std::min(threads, kMaxThreads);
    ensure_workers(threads - 1);
    // Spin only while spinning has been paying off (see kBackoffRegions).
    const int backoff = backoff_.load();
    const bool spin = backoff == 0;
    if (!spin) backoff_.store(backoff - 1);
    spin_.store(spin);
    KeyedSpeeds* speeds = shares ? &speeds_for(key) : nullptr;
    const PieceLayout layout = shares ? share_layout(n, threads, *speeds) : piece_layout(n, threads);
    fn_ = fn;
    layout_ = layout;
    error_ = nullptr;
    done_.store(0);
    const uint64_t gen = (generation_of(state_.load()) + 1) & 0xffffffffu;
    const int64_t total = layout.total;
    // Thread t owns pieces [total*t/T, total*(t+1)/T).
    for (int t = 0; t < threads; ++t)
      slots_[t].range.store(gen << kGenShift | uint64_t(owned_from(total, t, threads)) << kFrontShift |
                            uint64_t(owned_from(total, t + 1, threads)));
    // Publishes the fields above to the workers.
    state_.store(gen << kGenShift | uint64_t(threads - 1));
    if (sleepers_.load() > 0) {
      // A worker that saw the old generation holds mu_ until cv_.wait releases it: taking
      // (and dropping) mu_ orders this notify after its wait. Notifying outside the lock
      // spares the woken worker from blocking on mu_ again.
      { std::lock_guard<std::mutex> lk(mu_); }
      cv_.notify_all();
    }
    std::exception_ptr mine;
    try {
      const int64_t own_end = owned_from(total, 1, threads);
      for (int64_t piece; (piece = next_piece(0, threads, gen)) >= 0;) {
        const auto [begin, end] = layout.range(piece);
        run_counted(layout, fn, 0, piece, 0, own_end, begin, end);
        done_.fetch_add(1);
      }
    } catch (...) {
      mine = std::current_exception();
      done_.fetch_add(1);
      // The pieces nobody has started yet are not run: the region failed.
      while (next_piece(0, threads, gen) >= 0) done_.fetch_add(1);
    }
    auto finished = [&] { return done_.load() == total; };
    const Spin waited = spin ? spin_until(finished, kCallerSpin, [] { return false; }) : Spin::TimedOut;
    if (waited != Spin::Done) {
      // This thread lost its core while it waited: the cores are contended, stop spinning for
      // a while.
      if (waited == Spin::Preempted) backoff_.store(kBackoffRegions);
      std::unique_lock<std::mutex> lk(mu_);
      caller_sleeping_.store(true);
      done_cv_.wait(lk, finished);
      caller_sleeping_.store(false);
    }
    fn_ = {};
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
    if (speeds) learn_speeds(layout, *speeds);
  }

  // Back to equal speeds, for every key.
  void reset_speeds() {
    std::lock_guard<std::mutex> serial(run_mu_);
    for (auto& s : g_log_speed) s.store(0.0, std::memory_order_relaxed);
    for (auto& k : keyed_) k = KeyedSpeeds{};
    unkeyed_ = KeyedSpeeds{};
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  // state_ holds the region's generation and how many workers may help the caller; each
  // thread's slot holds the generation too, with the front and back of the pieces it has not
  // started. Claiming a piece is a compare-and-swap on the whole slot word, so it also proves
  // the region is still the one the claimer saw: a worker that comes late never touches the
  // fields of a region that has finished.
  static constexpr int kGenShift = 32, kFrontShift = 16;
  static constexpr uint64_t kField16 = (1u << 16) - 1, kHelpers = 0xff;
  static_assert(int64_t{kMaxThreads} * kPiecesPerThread <= int64_t{kField16});
  static_assert(kMaxThreads - 1 <= int{kHelpers});

  static uint64_t generation_of(uint64_t state) { return state >> kGenShift; }

  // run_piece, and in a region of shares the piece's time and the thread that ran it.
  void run_counted(const PieceLayout& layout, FunctionRef<void(int64_t, int64_t)> fn, int self, int64_t piece,
                   int64_t lo, int64_t hi, int64_t b, int64_t e) {
    if (!layout.shares) {
      run_piece(fn, self, piece, lo, hi, b, e);
      return;
    }
    const int64_t t0 = steady_ns();
    run_piece(fn, self, piece, lo, hi, b, e);
    share_time_[piece].ns = steady_ns() - t0;
    share_time_[piece].runner = self;
  }

  // The speeds a region of shares with this key follows (the unkeyed regions share one entry).
  KeyedSpeeds& speeds_for(const void* key) {
    if (!key) return unkeyed_;
    // Fibonacci hashing, then the next kSpeedProbes entries: a key finds its entry, or an empty
    // one, or takes over the first.
    const uint64_t h = (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key)) * 0x9e3779b97f4a7c15ull) >> 57;
    for (int i = 0; i < kSpeedProbes; ++i) {
      KeyedSpeeds& e = keyed_[(h + i) % kSpeedKeys];
      if (e.key == key) return e;
      if (!e.key) return fresh(e, key);
    }
    return fresh(keyed_[h % kSpeedKeys], key);
  }

  // Entry e for `key`, starting from the average speeds.
  static KeyedSpeeds& fresh(KeyedSpeeds& e, const void* key) {
    e.key = key;
    for (int t = 0; t < kShareThreads; ++t) e.log_speed[t] = g_log_speed[t].load(std::memory_order_relaxed);
    return e;
  }

  // After a region of shares: each thread's units per second against the caller's, into the
  // key's speeds and the average over all regions (g_log_speed), when every thread ran its own
  // share, each took long enough to time, and no rate is 4x another's.
  void learn_speeds(const PieceLayout& l, KeyedSpeeds& ks) {
    for (int t = 0; t < l.threads; ++t)
      if (share_time_[t].runner != t || share_time_[t].ns < kMinSampleNs) return;
    auto rate = [&](int t) {
      return static_cast<double>(l.bound[t + 1] - l.bound[t]) / static_cast<double>(share_time_[t].ns);
    };
    double ratios[kShareThreads] = {};
    for (int t = 1; t < l.threads; ++t) {
      ratios[t] = std::log(rate(t) / rate(0));
      if (std::abs(ratios[t]) > kMaxLogRatio) return;
    }
    for (int t = 1; t < l.threads; ++t) {
      ks.log_speed[t] += kSpeedAlpha * (ratios[t] - ks.log_speed[t]);
      const double old = g_log_speed[t].load(std::memory_order_relaxed);
      g_log_speed[t].store(old + kSpeedAlpha * (ratios[t] - old), std::memory_order_relaxed);
    }
  }

  // The next piece of region `gen` for thread `self` of `threads`: its own front piece, else
  // the back piece of another thread (the one it would have run last); -1 when none is left or
  // the region is over.
  int64_t next_piece(int self, int threads, uint64_t gen) {
    for (int k = 0; k < threads; ++k) {
      std::atomic<uint64_t>& range = slots_[(self + k) % threads].range;
      uint64_t w = range.load();
      for (;;) {
        if (generation_of(w) != gen) return -1;
        const uint64_t front = w >> kFrontShift & kField16, back = w & kField16;
        if (front >= back) break;
        if (k == 0 ? range.compare_exchange_weak(w, w + (uint64_t{1} << kFrontShift))
                   : range.compare_exchange_weak(w, w - 1))
          return static_cast<int64_t>(k == 0 ? front : back - 1);
      }
    }
    return -1;
  }

  void ensure_workers(int want) {
    while (static_cast<int>(workers_.size()) < want) {
      int id = static_cast<int>(workers_.size()) + 1;  // helps in regions of more than id threads
      // The generation before this region's start: the new worker must not skip the region.
      uint64_t seen = generation_of(state_.load());
      workers_.emplace_back([this, id, seen] { loop(id, seen); });
    }
  }

  void loop(int id, uint64_t seen) {
    auto news = [&] { return generation_of(state_.load()) != seen || stop_.load(); };
    for (;;) {
      if (!(spin_.load() && spin_until(news, kSpin, keep_spinning) == Spin::Done)) {
        std::unique_lock<std::mutex> lk(mu_);
        sleeps_.fetch_add(1, std::memory_order_relaxed);
        sleepers_.fetch_add(1);
        cv_.wait(lk, news);
        sleepers_.fetch_sub(1);
      }
      if (stop_.load()) return;
      const uint64_t st = state_.load();
      seen = generation_of(st);
      const int helpers = static_cast<int>(st & kHelpers);
      if (id > helpers) continue;
      // fn_ and layout_ stay valid while this worker holds an unfinished piece.
      for (int64_t piece; (piece = next_piece(id, helpers + 1, seen)) >= 0;) {
        const int64_t total = layout_.total;
        try {
          const auto [begin, end] = layout_.range(piece);
          run_counted(layout_, fn_, id, piece, owned_from(total, id, helpers + 1),
                      owned_from(total, id + 1, helpers + 1), begin, end);
        } catch (...) {
          std::lock_guard<std::mutex> lk(mu_);
          if (!error_) error_ = std::current_exception();
        }
        if (done_.fetch_add(1) + 1 == total && caller_sleeping_.load()) {
          { std::lock_guard<std::mutex> lk(mu_); }
          done_cv_.notify_one();
        }
      }
    }
  }

  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  // The current region; written by the caller before state_ publishes it.
  FunctionRef<void(int64_t, int64_t)> fn_;
  PieceLayout layout_{0, 0, 1};
  std::exception_ptr error_;
  // Separate cache lines: threads claim from the slots while they count finished pieces.
  alignas(64) std::atomic<uint64_t> state_{0};
  struct alignas(64) Slot {
    std::atomic<uint64_t> range{0};
  };
  Slot slots_[kMaxThreads];
  // A region of shares: how long each share took and which thread ran it (written by that
  // thread before it counts the piece done, read by the caller after the join).
  struct alignas(64) ShareTime {
    int64_t ns = 0;
    int runner = -1;
  };
  ShareTime share_time_[kShareThreads];
  KeyedSpeeds keyed_[kSpeedKeys], unkeyed_;
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false}, stop_{false};
  std::atomic<bool> spin_{true};    // whether this region's threads spin before sleeping
  std::atomic<int> backoff_{0};     // regions left to run without spinning
  std::atomic<int64_t> sleeps_{0};  // times a worker went to sleep (worker_sleeps)

 public:
  int64_t sleeps() const { return sleeps_.load(); }
};

thread_local bool t_in_parallel = false;
// Regions this thread has handed to the pool, and the count when its outermost SpinningScope
// opened: a run that used no worker (one thread) starts no idle spin.
thread_local int64_t t_pool_regions = 0, t_scope_regions = 0;
thread_local int t_scope_depth = 0;

}  // namespace

SpinningScope::SpinningScope() {
  if (t_scope_depth++ == 0) t_scope_regions = t_pool_regions;
  g_spinning_scopes.fetch_add(1);
}
SpinningScope::~SpinningScope() {
  // Published before the count drops, so that a worker never sees no scope and an old end.
  if (--t_scope_depth == 0 && t_pool_regions != t_scope_regions)
    g_idle_spin_until_ns.store(steady_ns() + g_idle_spin_us.load() * 1000);
  g_spinning_scopes.fetch_sub(1);
}

void set_idle_spin(std::chrono::microseconds spin) {
  KILN_CHECK(spin.count() >= 0 && spin <= kMaxIdleSpin, "idle spin must be 0 to ", kMaxIdleSpin.count() / 1000,
             " ms, got ", spin.count() / 1000.0, " ms");
  g_idle_spin_us.store(spin.count());
  // A shorter spin also ends the current one sooner.
  const int64_t until = steady_ns() + spin.count() * 1000;
  if (g_idle_spin_until_ns.load() > until) g_idle_spin_until_ns.store(until);
}

std::optional<std::chrono::microseconds> idle_spin_from_env() {
  const char* v = std::getenv(kIdleSpinEnv);
  if (!v) return std::nullopt;
  const std::string_view text(v);
  int64_t ms = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  KILN_CHECK(!text.empty() && ec == std::errc() && end == text.data() + text.size() && ms >= 0 &&
                 ms <= kMaxIdleSpinMs,
             kIdleSpinEnv, " must be 0 to ", kMaxIdleSpinMs, " (whole milliseconds), got '", text, "'");
  return std::chrono::milliseconds(ms);
}

std::chrono::microseconds idle_spin() { return std::chrono::microseconds(g_idle_spin_us.load()); }

std::chrono::microseconds idle_spin_left() {
  const int64_t left_ns = g_idle_spin_until_ns.load() - steady_ns();
  if (g_spinning_scopes.load() > 0 || left_ns <= 0) return std::chrono::microseconds(0);
  // Plus kSpin: a worker polls the clock every 64 pauses and then times out kSpin later.
  return std::chrono::microseconds(left_ns / 1000 + 1) + kSpin;
}

int64_t worker_sleeps() { return Pool::get().sleeps(); }

void set_pool_stats(bool on) {
  if (on && !g_stats_on.load()) (void)take_pool_stats();
  g_stats_on.store(on);
}

bool pool_stats_on() { return g_stats_on.load(); }

PoolStats take_pool_stats() {
  PoolStats s;
  s.regions = g_region_stats.regions.exchange(0);
  s.region_ns = g_region_stats.region_ns.exchange(0);
  s.threads = g_region_stats.threads.exchange(0);
  for (int t = 0; t < PoolStats::kThreads; ++t) {
    ThreadStats& ts = g_thread_stats[t];
    s.busy_ns[t] = ts.busy_ns.exchange(0);
    s.pieces += ts.pieces.exchange(0);
    s.stolen += ts.stolen.exchange(0);
  }
  return s;
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void set_default_threads(int n) { g_default_threads = n; }

int default_threads() {
  int n = g_default_threads.load();
  return n > 0 ? n : hardware_threads();
}

int parallel_owner(int64_t n, int threads, int64_t i) {
  if (threads <= 0) threads = default_threads();
  const int chunks = static_cast<int>(std::min<int64_t>({threads, n, int64_t{kMaxThreads}}));
  if (chunks <= 1 || i < 0 || i >= n) return 0;
  const PieceLayout layout = piece_layout(n, chunks);
  int t = 0;
  while (t + 1 < chunks && layout.range(owned_from(layout.total, t + 1, chunks)).first <= i) ++t;
  return t;
}

namespace {
std::atomic<bool> g_tapered_parts{env_switch_on("KILN_TAPERED_PARTS")};
}  // namespace

bool tapered_parts_on() { return g_tapered_parts.load(std::memory_order_relaxed); }
void set_tapered_parts(bool on) { g_tapered_parts.store(on, std::memory_order_relaxed); }

int64_t tapered_start(int64_t n, int64_t parts, int threads, int64_t p) {
  if (p <= 0 || parts <= 0) return 0;
  if (p >= parts) return n;
  if (threads <= 0) threads = default_threads();
  const int64_t t_count = std::min<int64_t>({threads, parts, int64_t{kMaxThreads}});
  if (t_count <= 1 || !tapered_parts_on()) return n * p / parts;
  // Part p's thread t owns parts [first, last) (owned_from), whose even cut is [n * first /
  // parts, n * last / parts).
  const int t = parallel_owner(parts, static_cast<int>(t_count), p), tc = static_cast<int>(t_count);
  const int64_t first = owned_from(parts, t, tc), last = owned_from(parts, t + 1, tc);
  const int64_t a = n * first / parts, len = n * last / parts - a, m = last - first, j = p - first;
  // Weights m, m-1, .., 1: the first j parts hold j m - j (j - 1) / 2 of m (m + 1) / 2.
  const int64_t before = j * m - j * (j - 1) / 2, all = m * (m + 1) / 2;
  return a + len * before / all;
}

namespace {

void run_region(int64_t n, int threads, bool shares, const void* key, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  if (threads <= 0) threads = default_threads();
  int chunks = static_cast<int>(std::min<int64_t>(threads, n));
  if (shares) chunks = std::min(chunks, kShareThreads);
  // Nested regions (a kernel called from inside another's chunk) run inline.
  if (t_in_parallel) {
    fn(0, n);
    return;
  }
  if (chunks <= 1) {
    const int64_t start = count_region(1);
    run_piece(fn, 0, 0, 0, 1, 0, n);
    region_done(start);
    return;
  }
  const int64_t start = count_region(chunks);
  t_in_parallel = true;
  ++t_pool_regions;
  auto wrapped = [&fn](int64_t b, int64_t e) {
    bool prev = t_in_parallel;
    t_in_parallel = true;
    fn(b, e);
    t_in_parallel = prev;
  };
  try {
    Pool::get().run(n, chunks, shares, key, wrapped);
  } catch (...) {
    t_in_parallel = false;
    throw;
  }
  t_in_parallel = false;
  region_done(start);
}

}  // namespace

void parallel_for(int64_t n, int threads, FunctionRef<void(int64_t, int64_t)> fn) {
  run_region(n, threads, false, nullptr, fn);
}

void parallel_shares(int64_t n, int threads, FunctionRef<void(int64_t, int64_t)> fn, const void* key) {
  run_region(n, threads, true, key, fn);
}

double thread_speed(int t) {
  if (t <= 0 || t >= kShareThreads) return 1.0;
  return std::exp(g_log_speed[t].load(std::memory_order_relaxed));
}

void reset_thread_speeds() { Pool::get().reset_speeds(); }

bool speed_shares_on() { return g_speed_shares.load(std::memory_order_relaxed); }
void set_speed_shares(bool on) { g_speed_shares.store(on, std::memory_order_relaxed); }

double core_round_trip_ns() {
  if (t_in_parallel || default_threads() < 2) return -1;
  using Clock = std::chrono::steady_clock;
  constexpr int kTrips = 8;
  constexpr auto kPatience = std::chrono::microseconds(50);
  constexpr int kGaveUp = -1;
  alignas(64) std::atomic<int> flag{0};
  // Waits until flag holds v; false after kPatience (the other side is not running), once the
  // pinging side gave up, or when this thread lost its core meanwhile.
  auto wait_for = [&flag, kPatience](int v) {
    int f = 0;
    spin_until([&] { return (f = flag.load(std::memory_order_acquire)) == v || f == kGaveUp; }, kPatience,
               [] { return false; });
    return f == v;
  };
  double best = -1;
  for (int attempt = 0; attempt < 2; ++attempt) {
    flag.store(0);
    double mean = -1;
    // Index 0 on this thread pings, index 1 on worker 1 answers. Should the worker be late (or
    // this thread run both), the pinging side gives up after kPatience, the answering one as it
    // sees that, and nothing is measured.
    parallel_for(2, 2, [&](int64_t b, int64_t e) {
      for (int64_t side = b; side < e; ++side) {
        if (side == 0) {
          const auto t0 = Clock::now();
          auto last = t0;
          for (int i = 0; i < kTrips; ++i) {
            flag.store(2 * i + 1, std::memory_order_release);
            // An answer later than the patience (it came, but a side was descheduled
            // meanwhile) measures the scheduler, not the cores: 3 ms was read once this way.
            const bool answered = wait_for(2 * i + 2);
            const auto now = Clock::now();
            if (!answered || now - last > kPatience) {
              flag.store(kGaveUp, std::memory_order_release);
              return;
            }
            last = now;
          }
          mean = std::chrono::duration<double, std::nano>(last - t0).count() / kTrips;
        } else {
          for (int i = 0; i < kTrips; ++i) {
            if (!wait_for(2 * i + 1)) return;
            flag.store(2 * i + 2, std::memory_order_release);
          }
        }
      }
    });
    if (mean < 0) break;  // the worker was not there (asleep, descheduled): no second wait
    if (best < 0 || mean < best) best = mean;
  }
  return best;
}

}  // namespace kiln::kernels

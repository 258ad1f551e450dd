// A persistent pool of worker threads. parallel_for hands each worker one contiguous chunk and
// runs the first chunk on the calling thread, then waits for all of them.
//
// Waking is cheap: a new region is published by bumping an atomic generation counter, which
// idle workers spin on for a short while (kSpin) before they sleep on a condition variable;
// the caller likewise spins on the pending-chunk counter before sleeping. A model's kernels
// run back to back, so workers are usually still spinning when the next region starts and a
// fork-join costs a cache-line round trip instead of a futex wake-up (bench/parallel_bench:
// ~1.3 µs instead of ~8-11 µs). When spinning stops paying (an oversubscribed machine) the
// pool backs off to blocking for a while (kBackoffRegions).
#include "kiln/kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::kernels {
namespace {

std::atomic<int> g_default_threads{0};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long an idle worker (or the waiting caller) spins before sleeping: long enough to cover
// the gap between two kernels of one inference, short enough not to burn a core when idle.
constexpr auto kSpin = std::chrono::microseconds(50);
// 64 polls take ~1-2 µs; a gap this long between two checks means the thread lost its core.
constexpr auto kPreempted = std::chrono::microseconds(20);
// When a region's workers come late despite spinning (the machine is oversubscribed, or the
// caller and a worker share one core, where every spin only delays the other), the next this
// many regions block right away, as a pool without spinning would; then spinning is retried.
constexpr int kBackoffRegions = 256;

// Spins until pred() or kSpin has passed; returns pred(). On an oversubscribed machine spinning
// backfires (the spinner competes for the core the awaited thread needs, and an always-runnable
// thread loses the scheduler's wake-up preference), so a spinner that finds it was descheduled
// gives up at once and the caller sleeps instead.
template <class Pred>
bool spin_until(Pred pred) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto last = start;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    cpu_relax();
    if ((i & 63) == 63) {
      const auto now = clock::now();
      if (now - start > kSpin || now - last > kPreempted) return pred();
      last = now;
    }
  }
}

class Pool {
 public:
  static Pool& get() {
    static Pool p;
    return p;
  }

  void run(int64_t n, int chunks, const std::function<void(int64_t, int64_t)>& fn) {
    std::lock_guard<std::mutex> serial(run_mu_);  // one parallel region at a time
    ensure_workers(chunks - 1);
    // Spin only while spinning has been paying off (see kBackoffRegions).
    const int backoff = backoff_.load();
    const bool spin = backoff == 0;
    if (!spin) backoff_.store(backoff - 1);
    spin_.store(spin);
    fn_ = &fn;
    n_ = n;
    per_ = (n + chunks - 1) / chunks;
    active_ = chunks - 1;
    error_ = nullptr;
    pending_.store(chunks - 1);
    generation_.fetch_add(1);  // publishes the fields above to the workers
    if (sleepers_.load() > 0) {
      // A worker that saw the old generation holds mu_ until cv_.wait releases it: taking
      // (and dropping) mu_ orders this notify after its wait. Notifying outside the lock
      // spares the woken worker from blocking on mu_ again.
      { std::lock_guard<std::mutex> lk(mu_); }
      cv_.notify_all();
    }
    std::exception_ptr mine;
    try {
      fn(0, std::min(per_, n));
    } catch (...) {
      mine = std::current_exception();
    }
    if (!(spin && spin_until([&] { return pending_.load() == 0; }))) {
      // The workers were late (descheduled, or sharing this core): stop spinning for a while.
      if (spin) backoff_.store(kBackoffRegions);
      std::unique_lock<std::mutex> lk(mu_);
      caller_sleeping_.store(true);
      done_cv_.wait(lk, [&] { return pending_.load() == 0; });
      caller_sleeping_.store(false);
    }
    fn_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
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
  void ensure_workers(int want) {
    while (static_cast<int>(workers_.size()) < want) {
      int id = static_cast<int>(workers_.size()) + 1;  // chunk index this worker runs
      // The generation before this region's bump: the new worker must not skip the region.
      uint64_t seen = generation_.load();
      workers_.emplace_back([this, id, seen] { loop(id, seen); });
    }
  }

  void loop(int id, uint64_t seen) {
    for (;;) {
      if (!(spin_.load() && spin_until([&] { return generation_.load() != seen || stop_.load(); }))) {
        std::unique_lock<std::mutex> lk(mu_);
        sleepers_.fetch_add(1);
        cv_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
      if (stop_.load()) return;
      seen = generation_.load();
      if (id > active_) continue;
      int64_t b = std::min<int64_t>(id * per_, n_), e = std::min<int64_t>(b + per_, n_);
      if (b < e) {
        try {
          (*fn_)(b, e);
        } catch (...) {
          std::lock_guard<std::mutex> lk(mu_);
          if (!error_) error_ = std::current_exception();
        }
      }
      if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
        { std::lock_guard<std::mutex> lk(mu_); }
        done_cv_.notify_one();
      }
    }
  }

  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  // The current region; written by the caller before generation_ is bumped.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, per_ = 0;
  int active_ = 0;
  std::exception_ptr error_;
  // Separate cache lines: workers poll generation_ while they decrement pending_.
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false}, stop_{false};
  std::atomic<bool> spin_{true};    // whether this region's threads spin before sleeping
  std::atomic<int> backoff_{0};     // regions left to run without spinning
};

thread_local bool t_in_parallel = false;

}  // namespace

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void set_default_threads(int n) { g_default_threads = n; }

int default_threads() {
  int n = g_default_threads.load();
  return n > 0 ? n : hardware_threads();
}

void parallel_for(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (threads <= 0) threads = default_threads();
  int chunks = static_cast<int>(std::min<int64_t>(threads, n));
  // Nested regions (a kernel called from inside another's chunk) run inline.
  if (chunks <= 1 || t_in_parallel) {
    fn(0, n);
    return;
  }
  t_in_parallel = true;
  auto wrapped = [&fn](int64_t b, int64_t e) {
    bool prev = t_in_parallel;
    t_in_parallel = true;
    fn(b, e);
    t_in_parallel = prev;
  };
  try {
    Pool::get().run(n, chunks, wrapped);
  } catch (...) {
    t_in_parallel = false;
    throw;
  }
  t_in_parallel = false;
}

}  // namespace kiln::kernels

// A persistent pool of worker threads. parallel_for hands each worker one contiguous
// chunk and runs the first chunk on the calling thread, then waits for all of them.
#include "kiln/kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::kernels {
namespace {

std::atomic<int> g_default_threads{0};

class Pool {
 public:
  static Pool& get() {
    static Pool p;
    return p;
  }

  void run(int64_t n, int chunks, const std::function<void(int64_t, int64_t)>& fn) {
    std::lock_guard<std::mutex> serial(run_mu_);  // one parallel region at a time
    ensure_workers(chunks - 1);
    int64_t per = (n + chunks - 1) / chunks;
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      n_ = n;
      per_ = per;
      pending_ = chunks - 1;
      active_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    std::exception_ptr mine;
    try {
      fn(0, std::min(per, n));
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    fn_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void ensure_workers(int want) {
    while (static_cast<int>(workers_.size()) < want) {
      int id = static_cast<int>(workers_.size()) + 1;  // chunk index this worker runs
      workers_.emplace_back([this, id] { loop(id); });
    }
  }

  void loop(int id) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (id > active_) continue;
      const auto* fn = fn_;
      int64_t b = std::min<int64_t>(id * per_, n_), e = std::min<int64_t>(b + per_, n_);
      lk.unlock();
      std::exception_ptr err;
      if (b < e) {
        try {
          (*fn)(b, e);
        } catch (...) {
          err = std::current_exception();
        }
      }
      lk.lock();
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, per_ = 0;
  int pending_ = 0, active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
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

// A small fixed thread pool shared by all kernels. parallel_for splits [0, n) into at
// most `threads` contiguous chunks; the calling thread runs one of them.
#pragma once
#include <cstdint>
#include <functional>

namespace kiln::kernels {

// Number of hardware threads (at least 1).
int hardware_threads();
// Sets the default thread count used when a caller passes threads <= 0.
void set_default_threads(int n);
int default_threads();

// Waking the pool costs tens of microseconds, so a parallel region must carry enough work to
// pay for it. threads_for_work returns `threads` when `work` (in multiply-adds or elements
// touched) is at least kMinParallelWork, else 1.
constexpr double kMinParallelWork = 1 << 18;
inline int threads_for_work(double work, int threads) { return work < kMinParallelWork ? 1 : threads; }

// Calls fn(begin, end) over chunks of [0, n). Runs inline when threads == 1 or n is small.
void parallel_for(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kiln::kernels

// Fork-join cost of the kernel thread pool: one parallel_for over 2 chunks that do nothing,
// so the time is waking the worker, running, and waiting for it.
//   build/bench/parallel_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <atomic>

#include "kiln/kernels/parallel.h"

namespace {

void BM_ForkJoin(benchmark::State& st) {
  const int threads = static_cast<int>(st.range(0));
  std::atomic<int64_t> sink{0};
  for (auto _ : st) {
    kiln::kernels::parallel_for(threads, threads, [&](int64_t b, int64_t e) { sink += e - b; });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_ForkJoin)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Back-to-back regions separated by some serial work (a model's next small op): the worker
// has gone idle for `gap` microseconds before each wake.
void BM_ForkJoinAfterGap(benchmark::State& st) {
  const int64_t gap_iters = st.range(0);
  std::atomic<int64_t> sink{0};
  for (auto _ : st) {
    volatile double x = 0;
    for (int64_t i = 0; i < gap_iters; ++i) x = x + 1.0;
    kiln::kernels::parallel_for(2, 2, [&](int64_t b, int64_t e) { sink += e - b; });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_ForkJoinAfterGap)->Arg(0)->Arg(10000)->Arg(200000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// What it costs one core to read or overwrite data another core wrote last, against data it
// wrote itself: the reason the pool gives each thread a fixed share of every region
// (kiln/kernels/parallel.h) and every conv kernel cuts output pixels. On this machine's two
// vCPUs (2026-11-23, host under load): reading 256 KiB-4 MiB the other core wrote ran at 18-21
// GB/s against 39-44 GB/s for its own, overwriting it at 12-14 GB/s against 51-56 GB/s; the
// ratios vary with where the host places the vCPUs. A cache-line round trip takes ~0.4 µs.
// BM_OverwriteAfterTouch (2026-12-04, cores far apart): 1 MiB overwritten with glibc's memcpy
// after the other core wrote it or read it 14-15 GB/s (its own lines: 54-70); with a string
// store (the depthwise kernels' output claims, kiln/kernels/dispatch.h claim_for_write) 32-39
// GB/s (own: 95-99).
//   build/bench/cache_affinity_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Each iteration: a writer thread (this core, or the other one) fills the buffer, then this
// thread reads it (Read) or overwrites it (Write); only the second step is timed. Pinned to
// CPUs 0 and 1 when the machine has them.
#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace {

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Both move the buffer 4 KiB at a time through glibc's memcpy, which picks the widest vector
// loads and stores this CPU has (a plain loop here would be built for the baseline ISA).
constexpr size_t kChunk = 1024;  // floats
__attribute__((noinline)) float read_all(const float* a, size_t n) {
  float tmp[kChunk];
  float s = 0;
  for (size_t i = 0; i < n; i += kChunk) {
    std::memcpy(tmp, a + i, sizeof(float) * std::min(kChunk, n - i));
    s += tmp[0];
  }
  return s;
}

__attribute__((noinline)) void fill(float* a, size_t n, float v) {
  float tmp[kChunk];
  for (float& x : tmp) x = v;
  for (size_t i = 0; i < n; i += kChunk) std::memcpy(a + i, tmp, sizeof(float) * std::min(kChunk, n - i));
}

// range(0): bytes; range(1): 1 = the other core wrote the buffer last, 0 = this core did;
// range(2): 0 = read it, 1 = overwrite it.
void BM_TouchAfterWriter(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)) / sizeof(float);
  const bool other = st.range(1) != 0, write = st.range(2) != 0;
  if (std::thread::hardware_concurrency() < 2 || !pin_to(0)) {
    st.SkipWithError("needs two CPUs to pin to");
    return;
  }
  std::vector<float> buf(n, 1.f);
  float sink = 0, v = 0;
  for (auto _ : st) {
    st.PauseTiming();
    v += 1.f;
    if (other) {
      std::thread w([&] {
        pin_to(1);
        fill(buf.data(), n, v);
      });
      w.join();
    } else {
      fill(buf.data(), n, v);
    }
    st.ResumeTiming();
    if (write)
      fill(buf.data(), n, v + 0.5f);
    else
      sink += read_all(buf.data(), n);
  }
  benchmark::DoNotOptimize(sink);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

#if defined(__x86_64__)
// A string store (rep stosb) of zeros over [a, a + n): what claim_for_write issues.
__attribute__((noinline)) void string_store(float* a, size_t n) {
  size_t count = n * sizeof(float);
  void* p = a;
  asm volatile("rep stosb" : "+D"(p), "+c"(count) : "a"(0) : "memory");
}
#endif

// range(0): bytes; range(1): what happened to the buffer last: 0 = this core wrote it, 1 = the
// other core wrote it, 2 = this core wrote it and then the other core read it (the line sits
// in both caches); range(2): how this core overwrites it: 0 = glibc's memcpy (vector stores),
// 1 = a string store.
void BM_OverwriteAfterTouch(benchmark::State& st) {
#if defined(__x86_64__)
  const size_t n = static_cast<size_t>(st.range(0)) / sizeof(float);
  const int64_t last = st.range(1);
  const bool string = st.range(2) != 0;
  if (std::thread::hardware_concurrency() < 2 || !pin_to(0)) {
    st.SkipWithError("needs two CPUs to pin to");
    return;
  }
  std::vector<float> buf(n, 1.f);
  float v = 0, sink = 0;
  for (auto _ : st) {
    st.PauseTiming();
    v += 1.f;
    if (last == 1) {
      std::thread w([&] {
        pin_to(1);
        fill(buf.data(), n, v);
      });
      w.join();
    } else {
      fill(buf.data(), n, v);
      if (last == 2) {
        std::thread r([&] {
          pin_to(1);
          sink += read_all(buf.data(), n);
        });
        r.join();
      }
    }
    st.ResumeTiming();
    if (string) string_store(buf.data(), n);
    else fill(buf.data(), n, v + 0.5f);
  }
  benchmark::DoNotOptimize(sink);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
#else
  st.SkipWithError("string stores are x86-64 only");
#endif
}

BENCHMARK(BM_TouchAfterWriter)
    ->ArgNames({"bytes", "other_core", "write"})
    ->ArgsProduct({{256 << 10, 1 << 20, 4 << 20}, {0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OverwriteAfterTouch)
    ->ArgNames({"bytes", "last", "string"})
    ->ArgsProduct({{1 << 20}, {0, 1, 2}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

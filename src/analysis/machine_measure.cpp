// `kiln machine`: timing the loops of machine_kernels on pinned threads, best of N.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <thread>

#include "kiln/analysis/machine.h"
#include "kiln/ir/error.h"
#include "machine_internal.h"
#include "machine_kernels.h"

namespace kiln::analysis {
namespace {

namespace mk = machine_kernels;
using Clock = std::chrono::steady_clock;

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: a refusal only adds noise
}

// CPU time of the calling thread, in seconds.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs work(i) on one thread per cpus[i], all released together; returns the seconds from
// the first start to the last finish. `cpu_share`: the least share of its wall time a thread
// spent on its core (its CPU time over its wall time; under 1 when another process of this
// machine shared the core; a hypervisor's steal is not seen from inside the guest).
double run_pinned(const std::vector<int>& cpus, const std::function<void(size_t)>& work,
                  double* cpu_share = nullptr) {
  size_t n = cpus.size();
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<Clock::time_point> start(n), end(n);
  std::vector<double> share(n, 1.0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      pin_to(cpus[i]);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      start[i] = Clock::now();
      const double cpu0 = thread_cpu_seconds();
      work(i);
      const double cpu = thread_cpu_seconds() - cpu0;
      end[i] = Clock::now();
      const double wall = std::chrono::duration<double>(end[i] - start[i]).count();
      if (wall > 0) share[i] = std::min(1.0, cpu / wall);
    });
  }
  while (ready.load() < n) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  if (cpu_share) *cpu_share = *std::min_element(share.begin(), share.end());
  auto first = *std::min_element(start.begin(), start.end());
  auto last = *std::max_element(end.begin(), end.end());
  return std::chrono::duration<double>(last - first).count();
}

// Count of work units whose single-core run takes about `seconds`: doubles from 1 until a
// run takes a quarter of that, then scales. All on one pinned thread (a thread start per
// trial costs milliseconds on a loaded machine).
int64_t calibrate(int cpu, const std::function<void(int64_t)>& run, double seconds) {
  int64_t result = 1;
  run_pinned({cpu}, [&](size_t) {
    for (int64_t count = 1;; count *= 2) {
      auto t0 = Clock::now();
      run(count);
      double t = std::chrono::duration<double>(Clock::now() - t0).count();
      if (t >= seconds / 4 || count > (int64_t{1} << 40)) {
        result = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(count) * (t > 0 ? seconds / t : 2.0)));
        return;
      }
    }
  });
  return result;
}

// Best rate (work units per second) over `reps` runs of work(i) on all `cpus` together;
// work returns the units it did. `cpu_share`: run_pinned's share for the best run.
double best_rate(const std::vector<int>& cpus, int reps, const std::function<double(size_t)>& work,
                 double* cpu_share = nullptr) {
  double best = 0, best_share = 1.0;
  std::vector<double> units(cpus.size());
  for (int r = 0; r < reps; ++r) {
    double share = 1.0;
    double t = run_pinned(cpus, [&](size_t i) { units[i] = work(i); }, &share);
    double total = 0;
    for (double u : units) total += u;
    if (t > 0 && total / t > best) best = total / t, best_share = share;
  }
  if (cpu_share) *cpu_share = best_share;
  return best;
}

struct PeakPair {
  double one = 0, all = 0;  // giga-ops per second: one core, all cores together
  double one_cpu_share = 1;  // the share of its wall time the best one-core run had its core
};

PeakPair compute_peak(double (*loop)(int64_t), const std::vector<int>& cpus, const MeasureOptions& opt) {
  int64_t iters = calibrate(cpus[0], [&](int64_t n) { loop(n); }, opt.seconds_per_rep);
  PeakPair p;
  p.one = best_rate({cpus[0]}, opt.repetitions, [&](size_t) { return loop(iters); }, &p.one_cpu_share) / 1e9;
  p.all = cpus.size() == 1 ? p.one : best_rate(cpus, opt.repetitions, [&](size_t) { return loop(iters); }) / 1e9;
  return p;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
// 2 MiB-aligned and, where the kernel allows, backed by huge pages: touching 768 MiB in
// 4 KiB pages takes seconds of page faults on a VM; huge pages also keep TLB misses out of
// the bandwidth numbers.
template <typename T>
std::unique_ptr<T[], FreeDeleter> aligned_array(int64_t n) {
  constexpr size_t kAlign = size_t{2} << 20;
  size_t bytes = (static_cast<size_t>(n) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, bytes);
  KILN_CHECK(p != nullptr, "kiln machine: cannot allocate ", bytes, " bytes");
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without it the numbers stand, measured slower
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

constexpr int64_t kMiB = int64_t{1} << 20;

// STREAM asks for arrays of at least 4x the last-level cache. VMs often report the whole
// socket's L3 (hundreds of MiB) where one core reaches only its own slice; the cap keeps the
// footprint sane and is still far beyond any one core's share.
int64_t triad_array_bytes(int64_t l3_bytes) { return std::clamp<int64_t>(4 * l3_bytes, 64 * kMiB, 256 * kMiB); }

void measure_dram(MachinePeaks& m, mk::VectorIsa isa, const std::vector<int>& cpus, const MeasureOptions& opt) {
  int64_t l3 = 0;
  for (const auto& c : m.caches)
    if (c.level == "L3") l3 = c.cache_bytes;
  m.triad_array_bytes = triad_array_bytes(l3);
  int64_t n = m.triad_array_bytes / 8;
  auto a = aligned_array<double>(n), b = aligned_array<double>(n), c = aligned_array<double>(n);
  size_t parts = cpus.size();
  auto chunk = [&](size_t i, size_t of) {
    return std::pair<int64_t, int64_t>{n * static_cast<int64_t>(i) / static_cast<int64_t>(of),
                                       n * static_cast<int64_t>(i + 1) / static_cast<int64_t>(of)};
  };
  // First touch by the thread that will use the pages (NUMA placement).
  run_pinned(cpus, [&](size_t i) {
    auto [lo, hi] = chunk(i, parts);
    for (int64_t k = lo; k < hi; ++k) {
      a[k] = 0;
      b[k] = 1.0 + static_cast<double>(k % 7);
      c[k] = 0.5;
    }
  });
  m.dram_gbs_one_core = best_rate({cpus[0]}, opt.repetitions, [&](size_t) {
                          return mk::triad(isa, a.get(), b.get(), c.get(), 3.0, 0, n);
                        }) / 1e9;
  m.dram_gbs_all_cores = best_rate(cpus, opt.repetitions, [&](size_t i) {
                           auto [lo, hi] = chunk(i, parts);
                           return mk::triad(isa, a.get(), b.get(), c.get(), 3.0, lo, hi);
                         }) / 1e9;
}

// Working set per level: half of L1 and of L2 (room for the stack and the other level's
// lines); for L3, half of it but at most 8x L2, a share one core can really hold (see above).
int64_t working_set(const MachinePeaks& m, size_t level) {
  const CacheBandwidth& c = m.caches[level];
  int64_t ws = c.cache_bytes / 2;
  if (c.level == "L3" && level > 0) ws = std::min(ws, 8 * m.caches[level - 1].cache_bytes);
  return std::max<int64_t>(ws / 512 * 512, 4096);
}

void measure_caches(MachinePeaks& m, mk::VectorIsa isa, int cpu, const MeasureOptions& opt) {
  for (size_t level = 0; level < m.caches.size(); ++level) {
    CacheBandwidth& c = m.caches[level];
    c.working_set_bytes = working_set(m, level);
    int64_t n = c.working_set_bytes / 4;
    auto buf = aligned_array<float>(n);
    for (int64_t k = 0; k < n; ++k) buf[k] = static_cast<float>(k % 13);
    int64_t passes = calibrate(cpu, [&](int64_t p) { mk::read_sum(isa, buf.get(), n, p); }, opt.seconds_per_rep / 2);
    c.gbs_one_core = best_rate({cpu}, opt.repetitions, [&](size_t) { return mk::read_sum(isa, buf.get(), n, passes); }) / 1e9;
  }
}

mk::VectorIsa vector_isa(const CpuFeatures& f) {
  return f.avx512f ? mk::VectorIsa::avx512 : (f.avx2 && f.fma) ? mk::VectorIsa::avx2 : mk::VectorIsa::scalar;
}

// The widest FP32 FMA loop this CPU runs: what `kiln machine` and parallel_capacity time.
double (*fma_loop(const CpuFeatures& f))(int64_t) {
  switch (vector_isa(f)) {
    case mk::VectorIsa::avx512: return mk::fma_f32_avx512;
    case mk::VectorIsa::avx2: return mk::fma_f32_avx2;
    case mk::VectorIsa::scalar: break;
  }
  return mk::fma_f32_scalar;
}

}  // namespace

double run_fma_loop(int64_t iters) {
  static double (*const loop)(int64_t) = fma_loop(cpu_features());
  return loop(iters);
}

std::string contention_warning(const MachinePeaks& m) {
  if (m.cpu_share < kContendedShare) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f%%", m.cpu_share * 100);
    return str_cat("the one-core runs had their core only ", buf,
                   " of the time (another process of this machine ran on it): every number is low, so it was not "
                   "cached; measure again on a quiet machine (kiln machine --refresh)");
  }
  if (m.cores <= 1 || m.fp32_gflops_per_core <= 0) return "";
  const double capacity = m.fp32_gflops_all_cores / m.fp32_gflops_per_core;
  if (capacity >= kContendedShare * m.cores) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", capacity);
  return str_cat("all ", m.cores, " cores together reached only ", buf,
                 "x one core's FMA rate: the host ran other work on them during the measurement, so the "
                 "all-core numbers (and multi-thread predictions) are low; measure again on a quiet machine "
                 "(kiln machine --refresh)");
}

double parallel_capacity(int threads, const MeasureOptions& opt) {
  KILN_CHECK(opt.repetitions >= 1 && opt.seconds_per_rep > 0, "parallel capacity: bad measurement options");
  std::vector<int> cpus = one_cpu_per_core();
  if (threads <= 1 || cpus.size() <= 1) return 1.0;
  cpus.resize(std::min<size_t>(cpus.size(), static_cast<size_t>(threads)));
  const PeakPair p = compute_peak(fma_loop(cpu_features()), cpus, opt);
  // More than one core's worth per thread only means the one-thread runs were all disturbed (a
  // busy machine): the threads cannot deliver more than their count.
  return p.one > 0 ? std::min(p.all / p.one, static_cast<double>(cpus.size())) : 1.0;
}

MachinePeaks measure_machine(const MeasureOptions& opt) {
  KILN_CHECK(opt.repetitions >= 1 && opt.seconds_per_rep > 0, "kiln machine: bad measurement options");
  auto t0 = Clock::now();
  MachinePeaks m = describe_machine();
  std::vector<int> cpus = one_cpu_per_core();
  CpuFeatures f = cpu_features();
  const mk::VectorIsa isa = vector_isa(f);

  PeakPair fp32 = compute_peak(fma_loop(f), cpus, opt);
  m.fp32_gflops_per_core = fp32.one;
  m.fp32_gflops_all_cores = fp32.all;
  m.cpu_share = fp32.one_cpu_share;
  if (f.avx512_vnni || f.avx_vnni || f.avx2) {
    // What kiln's int8 kernels multiply with on this CPU: vpdpbusd, or on AVX2 alone the
    // vpmaddubsw pair of its 7-bit-weight kernels (full-range weights widen and run at half that).
    m.int8_kernel = f.avx512_vnni ? "avx512-vnni" : f.avx_vnni ? "avx-vnni" : "avx2";
    PeakPair i8 = compute_peak(f.avx512_vnni ? mk::dot_u8s8_avx512vnni
                               : f.avx_vnni  ? mk::dot_u8s8_avxvnni
                                             : mk::dot_u8s8_avx2,
                               cpus, opt);
    m.int8_gops_per_core = i8.one;
    m.int8_gops_all_cores = i8.all;
  }
  if (f.avx512_bf16) {
    PeakPair bf = compute_peak(mk::dot_bf16_avx512, cpus, opt);
    m.bf16_gflops_per_core = bf.one;
    m.bf16_gflops_all_cores = bf.all;
  }
  measure_dram(m, isa, cpus, opt);
  measure_caches(m, isa, cpus[0], opt);
  measure_kernel_rates(m, opt);
  m.measure_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return m;
}

}  // namespace kiln::analysis

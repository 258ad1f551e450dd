// GEMM micro-kernel throughput: gemm_packed_b (weights packed once, as the compiled runtime
// runs MatMul) and gemm_packed_a (as convolution runs), GFLOP/s and % of the FMA peak of the
// threads used as `kiln machine` measured and cached on this host (runtime_memory.h), else
// 225 GFLOP/s per core (the project machine: 2 x 16-lane FMA per cycle at ~3.5 GHz).
// GEMV shapes (M = 1, the GPT-2 decode) also report GB/s of packed B streamed. VsFmaLoop
// compares the square products with the FMA loop run between them (see BM_VsFmaLoop).
//   build/bench/gemm_bench --benchmark_filter=Square --benchmark_min_time=1
//   build/bench/gemm_bench --benchmark_filter=VsFmaLoop --benchmark_min_time=2s
// VsPeers adds oneDNN's and OpenBLAS's sgemm to those pairs (gemm_peers.h, BM_VsPeers).
// The ISA is the kernel table's choice; see main() for the options that override it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemm_peers.h"
#include "isa_table.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/parallel.h"
#include "runtime_memory.h"

namespace {

using namespace kiln::kernels;

const KernelTable* g_table = nullptr;

using kiln::bench::Floats;

Floats random_vec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Times each call: the machine is shared, so besides the mean rate (GFLOPs, from the
// benchmark's own timing) we report the best single call (best_GFLOPs, best_peak%), the
// speed of a call nobody preempted.
// Long calls (a 2048^3 GEMM takes ~80 ms) are always preempted on a busy machine; for them the
// calling thread's CPU time per call (cpu_GFLOPs: the main thread's share of the work, without
// the time it was descheduled) estimates the quiet-machine speed.
double g_best_cpu_s = 0;
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

template <class F>
void timed_loop(benchmark::State& st, double& best_s, F&& call) {
  best_s = 1e30;
  g_best_cpu_s = 1e30;
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = thread_cpu_seconds();
    call();
    benchmark::ClobberMemory();
    g_best_cpu_s = std::min(g_best_cpu_s, thread_cpu_seconds() - c0);
    best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

void report(benchmark::State& st, double flops, int threads, double best_s, double bytes = 0) {
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["best_GFLOPs"] = flops * 1e-9 / best_s;
  st.counters["best_peak%"] = flops / kiln::bench::cached_peak(threads) * 100 / best_s;
  st.counters["cpu_GFLOPs"] = flops * 1e-9 / g_best_cpu_s;
  st.counters["cpu_peak%"] = flops / kiln::bench::cached_peak(threads) * 100 / g_best_cpu_s;
  if (bytes > 0) {
    st.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    st.counters["best_GBps"] = bytes * 1e-9 / best_s;
  }
  st.SetLabel(isa_name(g_table->isa));
}

// One product over weights packed once (as the compiled runtime runs MatMul), from the
// benchmark's args: M, N, K, threads.
struct PackedBProduct {
  explicit PackedBProduct(const benchmark::State& st)
      : M(st.range(0)), N(st.range(1)), K(st.range(2)), threads(static_cast<int>(st.range(3))),
        A(random_vec(M * K, 1)), pb(packed_b_floats_on(*g_table, K, N)), C(M * N) {
    auto B = random_vec(K * N, 2);
    pack_b_on(*g_table, B.data(), N, false, K, N, pb.data());
  }
  void run() { gemm_packed_b_on(*g_table, M, N, K, A.data(), K, pb.data(), C.data(), N, Epilogue{}, threads); }
  double flops() const { return 2.0 * M * N * K; }

  const int64_t M, N, K;
  const int threads;
  Floats A, pb, C;
};

void BM_PackedB(benchmark::State& st) {
  PackedBProduct g(st);
  double best;
  timed_loop(st, best, [&] { g.run(); });
  report(st, g.flops(), g.threads, best, g.M <= 4 ? 4.0 * g.pb.size() : 0);
}

void BM_PackedA(benchmark::State& st) {
  const int64_t M = st.range(0), N = st.range(1), K = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  const KernelTable& t = *g_table;
  auto A = random_vec(M * K, 1), B = random_vec(K * N, 2);
  Floats pa(packed_a_floats_on(t, M, K)), C(M * N);
  pack_a_on(t, A.data(), K, M, K, pa.data());
  Epilogue e;
  double best;
  timed_loop(st, best, [&] { gemm_packed_a_on(t, M, N, K, pa.data(), B.data(), N, C.data(), N, e, threads); });
  report(st, 2.0 * M * N * K, threads, best);
}

// The GEMM target (>= 90% of the FMA peak on one core, >= 85% on all) measured pair by
// pair: each iteration times the FMA loop `kiln machine` times on `threads` threads, then one
// product, and takes the ratio of the two rates. On a shared host both move with its phases
// (the Xeon 5th gen host read 111-177 GFLOP/s from the FMA loop and 95-158 from a one-core
// 1024^3 product within an hour), so a peak cached in another minute (best_peak%) can read
// 70% or 130%; vs_fma is the median ratio of neighbouring calls (vs_fma_q1 / _q3 its
// quartiles), GFLOPs and fma_GFLOPs the medians of each.
// Each pair also times the GEMM's own register tile on operands that stay in L1 (a kc of 128:
// its A and B panels take 3 and 32 KiB, C one tile), as many FLOPs on each thread: l1_vs_fma is
// that tile against the loop, the most any blocking of the product could reach right now, so
// vs_fma / l1_vs_fma is what the caches and memory cost. On the Xeon 5th gen host the tile read
// 0.96-1.02 of the loop in quiet minutes and 0.81-0.87 in slow ones (one core, medians): in
// those the loop's register-only FMAs keep their speed and anything that loads does not.
double median_of(std::vector<double> v, double q = 0.5) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}

// Seconds f() takes.
template <class F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `kiln machine`'s FMA loop on `threads` threads, as many iterations on each as take about as
// long as `flops` of a product at the FMA peak: gflops() runs it once and says its rate.
class FmaLoop {
 public:
  FmaLoop(double flops, int threads) : threads_(threads) {
    const double per_iter = kiln::analysis::run_fma_loop(1000) / 1000;
    iters_ = std::max<int64_t>(1000, static_cast<int64_t>(flops / threads / per_iter));
  }
  double gflops() const {
    double done = 0;
    const double s = seconds([&] {
      parallel_for(threads_, threads_, [&](int64_t b, int64_t end) {
        for (int64_t i = b; i < end; ++i) {
          const double f = kiln::analysis::run_fma_loop(iters_);
          if (i == 0) done = f * threads_;
        }
      });
    });
    return done / s * 1e-9;
  }

 private:
  int threads_;
  int64_t iters_ = 0;
};

void BM_VsFmaLoop(benchmark::State& st) {
  PackedBProduct g(st);
  const int threads = g.threads;
  const double flops = g.flops();
  g.run();  // first touch of C and the driver's blocks
  const FmaLoop loop(flops, threads);
  // The L1-resident tile: each thread's own panels, calls enough for the product's FLOPs.
  const KernelTable& t = *g_table;
  const int64_t mr = t.gemm.mr, nr = t.gemm.nr, kc = 128;
  const auto tile = t.tile[mr - 1][nr / t.simd_width - 1];
  std::vector<Floats> panels(threads);
  for (auto& v : panels) v = random_vec(static_cast<size_t>((mr + nr) * kc + mr * nr), 3);
  const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(flops / threads / (2.0 * mr * nr * kc)));
  std::vector<double> ratio, gemm_rate, fma_rate, l1_ratio;
  for (auto _ : st) {
    fma_rate.push_back(loop.gflops());
    const double gs = seconds([&] {
      g.run();
      benchmark::ClobberMemory();
    });
    const double ts = seconds([&] {
      parallel_for(threads, threads, [&](int64_t b, int64_t end) {
        for (int64_t i = b; i < end; ++i) {
          float* const p = panels[i].data();
          for (int64_t c = 0; c < calls; ++c)
            tile(kc, p, p + mr * kc, p + (mr + nr) * kc, nr, static_cast<int>(nr), true, nullptr);
        }
      });
    });
    l1_ratio.push_back(2.0 * mr * nr * kc * calls * threads / ts * 1e-9 / fma_rate.back());
    gemm_rate.push_back(flops / gs * 1e-9);
    ratio.push_back(gemm_rate.back() / fma_rate.back());
  }
  st.counters["GFLOPs"] = median_of(gemm_rate);
  st.counters["fma_GFLOPs"] = median_of(fma_rate);
  st.counters["vs_fma"] = median_of(ratio);
  st.counters["vs_fma_q1"] = median_of(ratio, 0.25);
  st.counters["vs_fma_q3"] = median_of(ratio, 0.75);
  st.counters["l1_vs_fma"] = median_of(l1_ratio);
  st.SetLabel(isa_name(g_table->isa));
}

// The same pairs with the peers' sgemm beside kiln's product (gemm_peers.h): each iteration
// times the FMA loop, then kiln and each available peer in an order that rotates every
// iteration. Per peer: <peer>_vs_fma (the median of its rate over the loop's in that iteration)
// and kiln_vs_<peer> (the median of kiln's time over the peer's, same iteration: below 1 is kiln
// faster). The peers are given B row-major and pack it on every call, as they must; kiln's B is
// packed once, as the compiled runtime holds a MatMul's weights. Packing a 1024 x 1024 B moves
// 8 MB, ~1-2% of a one-core product, which bounds what that difference can be worth.
void BM_VsPeers(benchmark::State& st) {
  PackedBProduct g(st);
  const int threads = g.threads;
  const double flops = g.flops();
  std::vector<const kiln::bench::GemmPeer*> peers;
  std::string missing;
  for (const auto* peer : {&kiln::bench::GemmPeer::onednn(), &kiln::bench::GemmPeer::openblas()}) {
    if (peer->available()) peers.push_back(peer);
    else missing += (missing.empty() ? "" : "; ") + peer->why_missing();
  }
  if (peers.empty()) {
    st.SkipWithError(("no peer library: " + missing).c_str());
    return;
  }
  Floats B = random_vec(static_cast<size_t>(g.K * g.N), 2), C(static_cast<size_t>(g.M * g.N));
  g.run();
  // Warm-up, and each peer's product against kiln's: a library whose entry point was called
  // with the wrong arguments must not be timed as a fast one.
  double ref = 0;
  for (float x : g.C) ref = std::max(ref, static_cast<double>(std::fabs(x)));
  for (const auto* peer : peers) {
    peer->run(g.M, g.N, g.K, g.A.data(), B.data(), C.data(), threads);
    double diff = 0;
    for (size_t i = 0; i < C.size(); ++i) diff = std::max(diff, static_cast<double>(std::fabs(C[i] - g.C[i])));
    if (!(diff <= 1e-4 * ref)) {
      st.SkipWithError((peer->name() + "'s product differs from kiln's (max |diff| " + std::to_string(diff) +
                        " against max |C| " + std::to_string(ref) + ")").c_str());
      return;
    }
  }
  const FmaLoop loop(flops, threads);
  const size_t n = peers.size() + 1;  // slot 0: kiln
  std::vector<std::vector<double>> vs_fma(n), kiln_vs(n);
  std::vector<double> fma_rate, s(n);
  int64_t round = 0;
  for (auto _ : st) {
    fma_rate.push_back(loop.gflops());
    for (size_t k = 0; k < n; ++k) {
      const size_t slot = (k + round) % n;
      s[slot] = seconds([&] {
        if (slot == 0) g.run();
        else peers[slot - 1]->run(g.M, g.N, g.K, g.A.data(), B.data(), C.data(), threads);
        benchmark::ClobberMemory();
      });
    }
    ++round;
    for (size_t k = 0; k < n; ++k) {
      vs_fma[k].push_back(flops / s[k] * 1e-9 / fma_rate.back());
      kiln_vs[k].push_back(s[0] / s[k]);
    }
  }
  st.counters["fma_GFLOPs"] = median_of(fma_rate);
  st.counters["kiln_vs_fma"] = median_of(vs_fma[0]);
  for (size_t k = 1; k < n; ++k) {
    const std::string& name = peers[k - 1]->name();
    st.counters[name + "_vs_fma"] = median_of(vs_fma[k]);
    st.counters["kiln_vs_" + name] = median_of(kiln_vs[k]);
  }
  st.SetLabel(isa_name(g_table->isa) + (missing.empty() ? std::string() : " (" + missing + ")"));
}

// What the memory system delivers right now: a sum over a buffer as large as GPT-2's packed
// LM head (154 MB), the reference the GEMV's GB/s is compared with.
void BM_StreamRead(benchmark::State& st) {
  const int64_t n = st.range(0);
  const int threads = static_cast<int>(st.range(1));
  Floats buf(n, 1.f);
  double best;
  float total = 0;
  timed_loop(st, best, [&] {
    float part[2] = {0, 0};
    parallel_for(threads, threads, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        float lanes[16] = {};
        for (int64_t i = n * t / threads; i + 16 <= n * (t + 1) / threads; i += 16)
          for (int u = 0; u < 16; ++u) lanes[u] += buf[i + u];
        for (float l : lanes) part[t] += l;
      }
    });
    total += part[0] + part[1];
  });
  benchmark::DoNotOptimize(total);
  st.counters["best_GBps"] = 4.0 * n * 1e-9 / best;
  st.counters["GBps"] = benchmark::Counter(4.0 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void square(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1024, 1536, 2048})
    for (int64_t th : {1, 2}) b->Args({n, n, n, th});
}
void bert(benchmark::internal::Benchmark* b) {
  for (int64_t th : {1, 2}) {
    b->Args({128, 768, 768, th});
    b->Args({128, 2304, 768, th});
    b->Args({128, 3072, 768, th});
    b->Args({128, 768, 3072, th});
  }
}
void gemv(benchmark::internal::Benchmark* b) {
  for (int64_t th : {1, 2}) {
    b->Args({1, 2304, 768, th});
    b->Args({1, 3072, 768, th});
    b->Args({1, 768, 3072, th});
    b->Args({1, 50257, 768, th});
  }
}
// resnet50 convolutions as GEMMs (M = Cout, N = H·W, K = Cin·R·S), the packed-A form.
void resnet(benchmark::internal::Benchmark* b) {
  for (int64_t th : {1, 2}) {
    b->Args({64, 3136, 576, th});    // layer1 3x3
    b->Args({256, 3136, 64, th});    // layer1 1x1 expand
    b->Args({128, 784, 1152, th});   // layer2 3x3
    b->Args({256, 196, 2304, th});   // layer3 3x3
    b->Args({1024, 196, 256, th});   // layer3 1x1 expand
    b->Args({512, 49, 4608, th});    // layer4 3x3
    b->Args({2048, 49, 512, th});    // layer4 1x1 expand
  }
}

BENCHMARK(BM_PackedB)->Name("Square/packed_b")->Apply(square)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VsFmaLoop)->Name("VsFmaLoop/packed_b")->Apply(square)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VsPeers)->Name("VsPeers/packed_b")->Apply(square)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PackedA)->Name("Square/packed_a")->Apply(square)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PackedB)->Name("Bert/packed_b")->Apply(bert)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PackedB)->Name("Gemv/packed_b")->Apply(gemv)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StreamRead)->Name("Gemv/stream_read")->Args({50257 * 768, 1})->Args({50257 * 768, 2})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PackedA)->Name("Resnet/packed_a")->Apply(resnet)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

// Leading options before the benchmark's own: --isa=avx2|scalar forces a lower ISA;
// --kc=, --mc=, --nc= override the table's cache blocks (schedule knobs, for tuning).
int main(int argc, char** argv) {
  static KernelTable table = kernel_table();
  while (argc > 1 && std::strncmp(argv[1], "--", 2) == 0) {
    const char* a = argv[1];
    if (std::strncmp(a, "--isa=", 6) == 0) {
      if (const KernelTable* named = kiln::bench::table_named(a + 6)) table = *named;
    } else if (std::strncmp(a, "--kc=", 5) == 0) {
      table.gemm.kc = std::atoll(a + 5);
    } else if (std::strncmp(a, "--mc=", 5) == 0) {
      table.gemm.mc = std::atoll(a + 5);
    } else if (std::strncmp(a, "--nc=", 5) == 0) {
      table.gemm.nc = std::atoll(a + 5);
    } else {
      break;
    }
    argv[1] = argv[0];
    ++argv, --argc;
  }
  g_table = &table;
  benchmark::AddCustomContext("fp32_peak_GFLOPs_1_thread", std::to_string(kiln::bench::cached_peak(1) * 1e-9));
  benchmark::AddCustomContext("fp32_peak_GFLOPs_2_threads", std::to_string(kiln::bench::cached_peak(2) * 1e-9));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

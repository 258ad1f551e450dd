// A probe outside kiln: how close an fp32 register tile on operands in L1 comes to an FMA loop
// with no loads on this core, and what fresh L1 lines cost the FMAs. Not part of the build
// (it is AVX-512-only and built for the host); run it with bench/probes/fma_load_probe.sh.
// Every rate is printed as a fraction of the 12-chain FMA loop timed in the same round.
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// C[R x 16*NV] += A panel (kc x R) . B panel (kc x 16*NV), as the GEMM's tile does it.
template <int R, int NV>
__attribute__((noinline)) void tile(long kc, const float* a, const float* b, float* c) {
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (long p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + (p * NV + v) * 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(a[p * R + r]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      float* cp = c + (r * NV + v) * 16;
      _mm512_store_ps(cp, _mm512_add_ps(acc[r][v], _mm512_load_ps(cp)));
    }
}

template <int R, int NV>
double tile_gflops(long kc, long calls) {
  const long a_n = R * kc + 16, b_n = NV * 16 * kc, c_n = R * NV * 16;
  float* a = static_cast<float*>(std::aligned_alloc(64, a_n * 4));
  float* b = static_cast<float*>(std::aligned_alloc(64, b_n * 4));
  float* c = static_cast<float*>(std::aligned_alloc(64, c_n * 4));
  for (long i = 0; i < a_n; ++i) a[i] = 0.001f * static_cast<float>(i % 7);
  for (long i = 0; i < b_n; ++i) b[i] = 0.001f * static_cast<float>(i % 5);
  for (long i = 0; i < c_n; ++i) c[i] = 0;
  const auto t0 = Clock::now();
  for (long i = 0; i < calls; ++i) tile<R, NV>(kc, a, b, c);
  const double s = seconds_since(t0);
  std::free(a), std::free(b), std::free(c);
  return 2.0 * R * NV * 16 * kc * calls / s * 1e-9;
}

// 24 independent FMA chains. With LOADS > 0 their multipliers are LOADS zmm loads a step, walking
// BUF floats (BUF 0: always the same address); with none, a register.
template <int LOADS, long BUF>
__attribute__((noinline)) double chains(long steps, const float* buf) {
  __m512 x[24];
  for (int i = 0; i < 24; ++i) x[i] = _mm512_set1_ps(static_cast<float>(i) * 0.001f);
  const __m512 m = _mm512_set1_ps(0.9999f);
  constexpr int kVectors = LOADS > 0 ? LOADS : 1;  // the loaded multipliers (one unused with none)
  const float* p = buf;
  for (long i = 0; i < steps; ++i) {
    __m512 l[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < LOADS; ++j) l[j] = _mm512_load_ps(p + 16 * j);
    if (BUF > 0) {
      p += 16 * LOADS;
      if (p + 16 * LOADS > buf + BUF) p = buf;
    }
#pragma GCC unroll 24
    for (int j = 0; j < 24; ++j) x[j] = _mm512_fmadd_ps(x[j], LOADS > 0 ? l[j % kVectors] : m, x[j]);
  }
  __m512 s = x[0];
  for (int i = 1; i < 24; ++i) s = _mm512_add_ps(s, x[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  volatile float sink = lanes[0];  // the chains' results are used: the compiler keeps them
  (void)sink;
  return 24.0 * 32 * steps;
}

template <int LOADS, long BUF>
double chains_gflops(const float* buf) {
  const auto t0 = Clock::now();
  const double flops = chains<LOADS, BUF>(20000000, buf);
  return flops / seconds_since(t0) * 1e-9;
}

}  // namespace

int main() {
  float* buf = static_cast<float*>(std::aligned_alloc(64, 16384 * 4));
  for (int i = 0; i < 16384; ++i) buf[i] = 1e-7f;
  for (int round = 0; round < 3; ++round) {
    const double loop = chains_gflops<0, 0>(buf);
    const long calls = 200000;
    std::printf("round %d: FMA loop %.1f GFLOP/s\n", round, loop);
    std::printf("  tiles, kc 128 (B in L1):  6x64 %.3f  8x48 %.3f  12x32 %.3f  14x32 %.3f  7x64 %.3f  5x80 %.3f  4x96 %.3f;"
                "  6x64 kc 256 (B 64 KiB) %.3f\n",
                tile_gflops<6, 4>(128, calls) / loop, tile_gflops<8, 3>(128, calls) / loop,
                tile_gflops<12, 2>(128, calls) / loop, tile_gflops<14, 2>(128, calls) / loop,
                tile_gflops<7, 4>(128, calls) / loop, tile_gflops<5, 5>(128, calls) / loop,
                tile_gflops<4, 6>(128, calls) / loop, tile_gflops<6, 4>(256, calls / 2) / loop);
    std::printf("  24 chains fed by loads:  4 from one address %.3f;  4 walking 4 KiB %.3f  16 KiB %.3f  32 KiB %.3f"
                "  40 KiB %.3f;  2 walking 32 KiB %.3f;  6 walking 32 KiB %.3f\n",
                chains_gflops<4, 0>(buf) / loop, chains_gflops<4, 1024>(buf) / loop, chains_gflops<4, 4096>(buf) / loop,
                chains_gflops<4, 8192>(buf) / loop, chains_gflops<4, 10240>(buf) / loop,
                chains_gflops<2, 8192>(buf) / loop, chains_gflops<6, 8192>(buf) / loop);
  }
  std::free(buf);
}

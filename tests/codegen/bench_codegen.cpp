// Measurements, not tests (disabled by default; numbers go to docs/codegen.md):
//   build/kiln_codegen_test --gtest_also_run_disabled_tests --gtest_filter='CodegenBench.*'
// - compile time of a library of 50 kernels shaped like efficientnet_b0's and BERT-base's fused
//   chains, cold (fresh cache) and warm;
// - throughput of the generated GELU (erf) and SiLU kernels on 1M floats, one thread, against
//   naive std::erf / std::exp loops compiled into this binary.
// Each still checks what it measured (outputs, cache behaviour), so a broken build fails.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "codegen/codegen_test_util.h"

namespace kiln::codegen::test {
namespace {

using Clock = std::chrono::steady_clock;

// CPU seconds used by finished child processes (the compiler) so far.
double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

std::string machine_isa() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "avx512";
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "avx2" : "scalar";
}

std::string dense_values(int64_t n, double scale) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += str_cat(i ? ", " : "", scale * static_cast<double>((i * 37) % 101) / 101.0, "0");
  return s;
}

// 50 fused chains of the kinds efficientnet_b0 (per-channel scale/bias + SiLU, excitation,
// residual adds) and BERT-base (bias + GELU, residual add, LayerNorm tails) produce.
std::vector<Model> fifty_bodies() {
  std::vector<Model> ms;
  const int channels[] = {32, 16, 96, 144, 240, 480, 672, 1152, 320, 1280};
  for (int c : channels) {
    const std::string t = str_cat("f32[N,", c, ",14,14]");
    ms.push_back(fused_model({t}, str_cat(R"(
    %s = init f32[)", c, ",1,1] dense<", dense_values(c, 2), R"(>
    %b = init f32[)", c, ",1,1] dense<", dense_values(c, -1), R"(>
    %m = Mul(%x0, %s)
    %a = Add(%m, %b)
    %g = Sigmoid(%a)
    %r0 = Mul(%a, %g))")));
    ms.push_back(fused_model({t, str_cat("f32[N,", c, ",1,1]")}, R"(
    %g = Sigmoid(%x1)
    %r0 = Mul(%x0, %g))"));
    ms.push_back(fused_model({t, t}, "    %r0 = Add(%x0, %x1)"));
  }
  for (int h : {768, 3072, 1024, 2048, 512}) {
    const std::string t = str_cat("f32[N,128,", h, "]");
    ms.push_back(fused_model({t, str_cat("f32[", h, "]")}, R"(
    %s = init f32[] dense<1.41421353816986083984375>
    %one = init f32[] dense<1.0>
    %half = init f32[] dense<0.5>
    %a = Add(%x0, %x1)
    %d = Div(%a, %s)
    %e = Erf(%d)
    %p = Add(%e, %one)
    %m = Mul(%a, %p)
    %r0 = Mul(%m, %half))"));
    ms.push_back(fused_model({t, t, str_cat("f32[", h, "]")}, R"(
    %a = Add(%x0, %x2)
    %r0 = Add(%a, %x1))"));
    ms.push_back(fused_model({t, "f32[N,128,1]", "f32[N,128,1]", str_cat("f32[", h, "]"), str_cat("f32[", h, "]")}, R"(
    %c = Sub(%x0, %x1)
    %d = Div(%c, %x2)
    %m = Mul(%d, %x3)
    %r0 = Add(%m, %x4))"));
    ms.push_back(fused_model({t}, R"(
    %k = init f32[] dense<0.125>
    %r0 = Mul(%x0, %k))"));
  }
  return ms;
}

TEST(CodegenBench, DISABLED_CompileFiftyKernels) {
  const std::vector<Model> models = fifty_bodies();
  ASSERT_EQ(models.size(), 50u);
  auto t0 = Clock::now();
  std::vector<GeneratedKernel> kernels;
  for (const Model& m : models) kernels.push_back(emit_fused_kernel(fused_node(m)));
  const double emit_s = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t bytes = 0;
  for (const GeneratedKernel& k : kernels) bytes += k.source.size();
  BuildOptions bo;
  bo.cache_dir = fresh_dir("bench-cache");
  bo.target_isa = machine_isa();
  t0 = Clock::now();
  const double cpu0 = children_cpu_seconds();
  const KernelLibrary cold = build_kernel_library(kernels, bo);
  const double cold_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cold_cpu = children_cpu_seconds() - cpu0;
  t0 = Clock::now();
  const KernelLibrary warm = build_kernel_library(kernels, bo);
  const double warm_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_TRUE(warm.cache_hit);
  EXPECT_EQ(warm.compiler_runs, 0);
  std::printf("50 kernels (%zu KiB of source, %s): emit %.3f s, cold build %.2f s (compiler CPU %.2f s), cached build %.4f s\n",
              bytes / 1024, bo.target_isa.c_str(), emit_s, cold_s, cold_cpu, warm_s);
}

__attribute__((noinline)) void naive_gelu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
}
__attribute__((noinline)) void naive_silu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// Fastest of `reps` calls of f(), in seconds (the machine is shared: the minimum is the
// uncontended time).
template <typename F>
double fastest_seconds(F&& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return *std::min_element(t.begin(), t.end());
}

TEST(CodegenBench, DISABLED_GeluSiluThroughput) {
  constexpr int64_t n = 1 << 20;
  const Model gelu = fused_model({"f32[1048576]"}, kGeluErfBody);
  const Model silu = fused_model({"f32[1048576]"}, R"(
    %s = Sigmoid(%x0)
    %r0 = Mul(%x0, %s))");
  const GeneratedKernel kg = emit_fused_kernel(fused_node(gelu)), ks = emit_fused_kernel(fused_node(silu));
  BuildOptions bo;
  bo.cache_dir = test_cache_dir();
  bo.target_isa = machine_isa();
  LoadedLibrary lib(build_kernel_library({kg, ks}, bo).path);

  Tensor x(DType::f32, {n});
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-6, 6);
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = dist(gen);
  Tensor y(DType::f32, {n}), y_naive(DType::f32, {n});
  const int64_t dims[1] = {n}, strides[1] = {1};
  const int64_t* in_strides[1] = {strides};
  const void* ins[1] = {x.raw()};
  void* outs[1] = {y.raw()};
  const kiln_fused_args args{ins, outs, dims, in_strides, 1};
  const double gb = 2.0 * n * sizeof(float) / 1e9;  // read x, write y
  struct Row {
    const char* name;
    kiln_fused_fn fn;
    void (*naive)(const float*, float*, int64_t);
    double atol;
  };
  for (const Row& r : {Row{"GELU (erf)", lib.kernel(kg.symbol), naive_gelu, 2e-6},
                       Row{"SiLU", lib.kernel(ks.symbol), naive_silu, 2e-6}}) {
    const double t_gen = fastest_seconds([&] { r.fn(&args, 0, n); }, 41);
    const double t_naive = fastest_seconds([&] { r.naive(x.data<float>(), y_naive.data<float>(), n); }, 11);
    EXPECT_EQ(compare(y, y_naive, r.atol, 2e-6), "") << r.name;
    std::printf("%-11s 1M floats, 1 thread: generated %.3f ms (%.1f GB/s), naive std:: loop %.3f ms (%.1f GB/s): %.1fx\n",
                r.name, t_gen * 1e3, gb / t_gen, t_naive * 1e3, gb / t_naive, t_naive / t_gen);
  }
}

}  // namespace
}  // namespace kiln::codegen::test

// The GEMM's peers for gemm_bench's VsPeers: the sgemm of the oneDNN and OpenBLAS libraries that
// scripts/bootstrap.sh installs (libopenblas0-openmp, and libdnnl2 as a dependency of
// python3-torch), loaded with dlopen so that the benchmark builds and runs without them (the
// benchmark then says which is missing). Both run on OpenMP; the thread count is set before each
// call through the library's own setter (oneDNN's: libgomp's omp_set_num_threads), and
// OMP_WAIT_POLICY defaults to PASSIVE before the first load so that their idle workers do not
// spin on the cores kiln's pool is about to use (with OpenMP's default spinning, kiln read
// 1.12-1.30 of oneDNN's time at two threads in the thirty-seventh session's harness).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace kiln::bench {

class GemmPeer {
 public:
  // C (M x N) = A (M x K) · B (K x N), all row-major and dense (run() sets the threads first).
  using Fn = void (*)(void* lib, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C);

  static const GemmPeer& onednn() {
    static const GemmPeer p("oneDNN", "libdnnl.so.2", "dnnl_sgemm", "omp_set_num_threads", &call_onednn);
    return p;
  }
  // OpenBLAS 0.3.21 (Debian 12) does not know the Xeon 5th gen's CPUID model and falls back to
  // its Prescott (SSE3) kernels, 0.17 of the FMA loop on one core; the peer gets its best
  // kernels for the ISA (a user's OPENBLAS_CORETYPE wins).
  static const GemmPeer& openblas() {
    if (__builtin_cpu_supports("avx512f")) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    else if (__builtin_cpu_supports("avx2")) setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    static const GemmPeer p("OpenBLAS", "libopenblas.so.0", "cblas_sgemm", "openblas_set_num_threads", &call_openblas);
    return p;
  }

  bool available() const { return fn_ != nullptr; }
  const std::string& name() const { return name_; }
  const std::string& why_missing() const { return missing_; }
  void run(int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C, int threads) const {
    if (set_threads_) set_threads_(threads);
    call_(fn_, M, N, K, A, B, C);
  }

 private:
  GemmPeer(const char* name, const char* file, const char* symbol, const char* set_threads, Fn call)
      : name_(name), call_(call) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);  // before libgomp first loads; a user's setting wins
    void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      missing_ = std::string(file) + " not loadable (" + (e ? e : "?") + "): run scripts/bootstrap.sh";
      return;
    }
    fn_ = dlsym(lib, symbol);
    if (!fn_) missing_ = std::string(file) + " has no " + symbol;
    // A handle's lookup also searches the libraries it depends on (oneDNN's: libgomp's setter).
    set_threads_ = reinterpret_cast<void (*)(int)>(dlsym(lib, set_threads));
    if (!set_threads_) fn_ = nullptr, missing_ = std::string(file) + " has no " + set_threads;
  }

  // oneDNN's C API: dnnl_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), row-major.
  static void call_onednn(void* f, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
    using Sgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
    reinterpret_cast<Sgemm>(f)('N', 'N', M, N, K, 1.f, A, K, B, N, 0.f, C, N);
  }
  // CBLAS: cblas_sgemm(order, transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // CblasRowMajor = 101, CblasNoTrans = 111 (cblas.h's enum values).
  static void call_openblas(void* f, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
    using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                           int);
    reinterpret_cast<Sgemm>(f)(101, 111, 111, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.f, A,
                               static_cast<int>(K), B, static_cast<int>(N), 0.f, C, static_cast<int>(N));
  }

  std::string name_, missing_;
  Fn call_;
  void* fn_ = nullptr;
  void (*set_threads_)(int) = nullptr;
};

}  // namespace kiln::bench

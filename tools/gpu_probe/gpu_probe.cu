// gpu_probe: measures what kiln's chip database claims for an NVIDIA GPU — dense GEMM rate
// through cuBLAS (FP32, TF32, BF16, FP16, INT8) at several shapes, device-memory copy
// bandwidth, and kernel launch overhead — so data/chips/<chip>.json can be checked against
// reality. Not part of the kiln build (kiln has no GPU dependency); see README.md.
//
// Method: random inputs (never zeros), a sampled check of each GEMM against a float64 host
// reference, warm-up, CUDA events around each timed call, median of the repetitions; for
// memory-bound shapes the weight operand rotates over buffers larger than L2.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define CB(x)                                                                       \
  do {                                                                              \
    cublasStatus_t s_ = (x);                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                              \
      std::fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #x, \
                   static_cast<int>(s_));                                           \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

namespace {

std::mt19937 rng(1234);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

enum class Kind { fp32, tf32, bf16, fp16, int8 };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::fp32: return "fp32";
    case Kind::tf32: return "tf32";
    case Kind::bf16: return "bf16";
    case Kind::fp16: return "fp16";
    case Kind::int8: return "int8";
  }
  return "?";
}
size_t in_bytes(Kind k) { return k == Kind::int8 ? 1 : (k == Kind::bf16 || k == Kind::fp16) ? 2 : 4; }
size_t out_bytes(Kind k) { return k == Kind::int8 ? 4 : in_bytes(k); }

// Host values that every input type represents exactly (small integers / 8), so the
// float64 reference sees what the GPU saw.
std::vector<float> host_values(size_t n, Kind k) {
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<float> v(n);
  for (auto& x : v) x = k == Kind::int8 ? static_cast<float>(d(rng)) : static_cast<float>(d(rng)) / 8.0f;
  return v;
}

void upload(void* dst, const std::vector<float>& v, Kind k) {
  size_t n = v.size();
  if (k == Kind::fp32 || k == Kind::tf32) {
    CK(cudaMemcpy(dst, v.data(), n * 4, cudaMemcpyHostToDevice));
  } else if (k == Kind::bf16) {
    std::vector<__nv_bfloat16> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = __float2bfloat16(v[i]);
    CK(cudaMemcpy(dst, h.data(), n * 2, cudaMemcpyHostToDevice));
  } else if (k == Kind::fp16) {
    std::vector<__half> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = __float2half(v[i]);
    CK(cudaMemcpy(dst, h.data(), n * 2, cudaMemcpyHostToDevice));
  } else {
    std::vector<int8_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = static_cast<int8_t>(v[i]);
    CK(cudaMemcpy(dst, h.data(), n, cudaMemcpyHostToDevice));
  }
}

double read_out(const void* c, size_t idx, Kind k) {
  if (k == Kind::fp32 || k == Kind::tf32) {
    float x;
    CK(cudaMemcpy(&x, static_cast<const float*>(c) + idx, 4, cudaMemcpyDeviceToHost));
    return x;
  }
  if (k == Kind::bf16) {
    __nv_bfloat16 x;
    CK(cudaMemcpy(&x, static_cast<const __nv_bfloat16*>(c) + idx, 2, cudaMemcpyDeviceToHost));
    return __bfloat162float(x);
  }
  if (k == Kind::fp16) {
    __half x;
    CK(cudaMemcpy(&x, static_cast<const __half*>(c) + idx, 2, cudaMemcpyDeviceToHost));
    return __half2float(x);
  }
  int32_t x;
  CK(cudaMemcpy(&x, static_cast<const int32_t*>(c) + idx, 4, cudaMemcpyDeviceToHost));
  return x;
}

// C[m,n] = A[m,k] * B[k,n], row-major, computed by cuBLAS (column-major) as C^T = B^T A^T.
void gemm(cublasHandle_t h, Kind k, int m, int n, int kk, const void* a, const void* b, void* c) {
  float alpha = 1, beta = 0;
  int32_t ialpha = 1, ibeta = 0;
  switch (k) {
    case Kind::fp32:
    case Kind::tf32:
      CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk, &alpha, b, CUDA_R_32F, n, a, CUDA_R_32F, kk, &beta, c,
                      CUDA_R_32F, n, k == Kind::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
      break;
    case Kind::bf16:
      CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk, &alpha, b, CUDA_R_16BF, n, a, CUDA_R_16BF, kk, &beta, c,
                      CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      break;
    case Kind::fp16:
      CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk, &alpha, b, CUDA_R_16F, n, a, CUDA_R_16F, kk, &beta, c,
                      CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      break;
    case Kind::int8:
      // cuBLAS's int8 path wants A transposed (TN) and dims that are multiples of 4.
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, kk, &ialpha, b, CUDA_R_8I, kk, a, CUDA_R_8I, kk, &ibeta, c,
                      CUDA_R_32I, n, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
      break;
  }
}

struct GemmResult {
  double ms = 0;         // one call between two events (includes any wait for the host to submit it)
  double queued_ms = 0;  // per call when kQueued calls are queued back to back (the steady state)
  double tflops = 0, gbs = 0, max_rel_err = 0;  // from queued_ms
};
constexpr int kQueued = 20;

GemmResult time_gemm(cublasHandle_t h, Kind k, int m, int n, int kk, int reps) {
  // Enough copies of B (the weights) that rotating through them defeats the 50 MB L2.
  size_t b_bytes = static_cast<size_t>(kk) * n * in_bytes(k);
  int copies = static_cast<int>(std::min<size_t>(16, std::max<size_t>(1, (size_t{256} << 20) / std::max<size_t>(b_bytes, 1) + 1)));
  std::vector<float> ha = host_values(static_cast<size_t>(m) * kk, k), hb = host_values(static_cast<size_t>(kk) * n, k);
  // int8 TN layout: B is stored n x k (each output column's weights contiguous).
  std::vector<float> hb_store = hb;
  if (k == Kind::int8)
    for (int r = 0; r < kk; ++r)
      for (int cidx = 0; cidx < n; ++cidx) hb_store[static_cast<size_t>(cidx) * kk + r] = hb[static_cast<size_t>(r) * n + cidx];
  void *a, *c;
  std::vector<void*> bs(copies);
  CK(cudaMalloc(&a, ha.size() * in_bytes(k)));
  CK(cudaMalloc(&c, static_cast<size_t>(m) * n * out_bytes(k)));
  for (auto& b : bs) {
    CK(cudaMalloc(&b, b_bytes));
    upload(b, hb_store, k);
  }
  upload(a, ha, k);
  CK(cudaMemset(c, 0xff, static_cast<size_t>(m) * n * out_bytes(k)));  // poison: unwritten -> NaN / garbage
  gemm(h, k, m, n, kk, a, bs[0], c);
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  GemmResult r;
  std::uniform_int_distribution<int> di(0, m - 1), dj(0, n - 1);
  for (int s = 0; s < 24; ++s) {
    int i = di(rng), j = dj(rng);
    double ref = 0, mag = 0;
    for (int p = 0; p < kk; ++p) {
      ref += static_cast<double>(ha[static_cast<size_t>(i) * kk + p]) * hb[static_cast<size_t>(p) * n + j];
      mag += std::fabs(static_cast<double>(ha[static_cast<size_t>(i) * kk + p]) * hb[static_cast<size_t>(p) * n + j]);
    }
    double got = read_out(c, static_cast<size_t>(i) * n + j, k);
    double err = std::isfinite(got) ? std::fabs(got - ref) / std::max(mag, 1.0) : 1e30;
    r.max_rel_err = std::max(r.max_rel_err, err);
  }
  for (int w = 0; w < 3; ++w) gemm(h, k, m, n, kk, a, bs[w % copies], c);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep) {
    CK(cudaEventRecord(e0));
    gemm(h, k, m, n, kk, a, bs[rep % copies], c);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  std::vector<double> queued;
  for (int rep = 0; rep < std::max(3, reps / 5); ++rep) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < kQueued; ++i) gemm(h, k, m, n, kk, a, bs[(rep * kQueued + i) % copies], c);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    queued.push_back(ms / kQueued);
  }
  CK(cudaGetLastError());
  r.ms = median(times);
  r.queued_ms = median(queued);
  r.tflops = 2.0 * m * n * kk / (r.queued_ms * 1e-3) / 1e12;
  double bytes = static_cast<double>(m) * kk * in_bytes(k) + static_cast<double>(b_bytes) +
                 static_cast<double>(m) * n * out_bytes(k);
  r.gbs = bytes / (r.queued_ms * 1e-3) / 1e9;
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(a));
  CK(cudaFree(c));
  for (auto b : bs) CK(cudaFree(b));
  return r;
}

__global__ void empty_kernel() {}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

void memory_bandwidth() {
  size_t bytes = size_t{2} << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 0x3c, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> t_memcpy, t_kernel;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int rep = 0; rep < 12; ++rep) {
    float ms;
    CK(cudaEventRecord(e0));
    CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (rep >= 2) t_memcpy.push_back(ms);
    CK(cudaEventRecord(e0));
    copy_kernel<<<sms * 8, 512>>>(static_cast<const float4*>(a), static_cast<float4*>(b), bytes / 16);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (rep >= 2) t_kernel.push_back(ms);
  }
  // Read + write: the bytes a copy moves through DRAM.
  std::printf("copy  cudaMemcpy D2D %zu MiB: %.3f ms median, %.0f GB/s (read+write)\n", bytes >> 20, median(t_memcpy),
              2.0 * bytes / (median(t_memcpy) * 1e-3) / 1e9);
  std::printf("copy  float4 kernel  %zu MiB: %.3f ms median, %.0f GB/s (read+write)\n", bytes >> 20, median(t_kernel),
              2.0 * bytes / (median(t_kernel) * 1e-3) / 1e9);
  CK(cudaFree(a));
  CK(cudaFree(b));
}

void launch_overhead() {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, s>>>();
  CK(cudaStreamSynchronize(s));
  const int n = 20000;
  std::vector<double> per_launch, round_trip, graph_per_kernel;
  for (int rep = 0; rep < 5; ++rep) {
    // Back-to-back asynchronous launches: the steady-state cost a runtime pays per kernel.
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, s>>>();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    per_launch.push_back(ms * 1e3 / n);
    // Launch then wait, one at a time: what a synchronous single-op call sees.
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) {
      empty_kernel<<<1, 32, 0, s>>>();
      CK(cudaStreamSynchronize(s));
    }
    round_trip.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 2000);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }
  // A CUDA graph of 1000 empty kernels, replayed.
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, s>>>();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    graph_per_kernel.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000);
  }
  CK(cudaGetLastError());
  std::printf("launch empty kernel, back-to-back async: %.2f us per kernel (median)\n", median(per_launch));
  std::printf("launch empty kernel, launch + sync:      %.2f us per kernel (median)\n", median(round_trip));
  std::printf("launch empty kernel, CUDA graph replay:  %.2f us per kernel (median)\n", median(graph_per_kernel));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
}

}  // namespace

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s, %d SMs, %.0f MiB, L2 %d MiB\n", p.name, p.multiProcessorCount,
              static_cast<double>(p.totalGlobalMem) / (1 << 20), p.l2CacheSize >> 20);
  cublasHandle_t h;
  CB(cublasCreate(&h));
  struct Shape {
    int m, n, k;
  };
  // Square compute-bound GEMMs, and skinny ones (decode-like: M = batch rows against a
  // 4096 x 4096 or 4096 x 11008 weight) where memory should bound the time.
  const Shape shapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                          {1, 4096, 4096},    {16, 4096, 4096},   {128, 4096, 4096},  {1, 11008, 4096}};
  std::printf("%-5s %6s %6s %6s %10s %10s %10s %9s %10s\n", "gemm", "M", "N", "K", "single_ms", "queued_ms", "TFLOP/s",
              "GB/s", "rel_err");
  for (Kind k : {Kind::fp32, Kind::tf32, Kind::bf16, Kind::fp16, Kind::int8}) {
    for (const Shape& s : shapes) {
      if (k == Kind::int8 && s.m % 4 != 0) continue;
      int reps = static_cast<double>(s.m) * s.n * s.k > 1e11 ? 10 : 50;
      GemmResult r = time_gemm(h, k, s.m, s.n, s.k, reps);
      std::printf("%-5s %6d %6d %6d %10.4f %10.4f %10.1f %9.0f %10.2e\n", kind_name(k), s.m, s.n, s.k, r.ms, r.queued_ms,
                  r.tflops, r.gbs, r.max_rel_err);
      std::fflush(stdout);
    }
  }
  CB(cublasDestroy(h));
  memory_bandwidth();
  launch_overhead();
  return 0;
}

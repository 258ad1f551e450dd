// sgemm (gemm.h) on the blocked driver: op(A) is packed per block with alpha folded in, op(B)
// per block, C pre-scaled by beta and accumulated into. Few-row products (fewer rows than the
// micro-kernel's tile) skip packing and stream B once with plain dot/axpy loops.
#include "kiln/kernels/gemm.h"

#include <algorithm>
#include <vector>

#include "gemm_driver.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

// c[j] += a * b[j] over [0, n); restrict lets -O2 vectorise the fixed 8-lane body.
inline void axpy_row(float* __restrict c, const float* __restrict b, float a, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) c[j + u] += a * b[j + u];
  for (; j < n; ++j) c[j] += a * b[j];
}

// Lanes of 8 partial sums keep the dot product vectorisable without reassociation flags.
inline float dot_row(const float* __restrict x, const float* __restrict y, int64_t n) {
  float lanes[8] = {};
  int64_t p = 0;
  for (; p + 8 <= n; p += 8)
    for (int u = 0; u < 8; ++u) lanes[u] += x[p + u] * y[p + u];
  float s = 0;
  for (; p < n; ++p) s += x[p] * y[p];
  for (float l : lanes) s += l;
  return s;
}

void gemm_few_rows(bool transA, bool transB, const float* A, int64_t lda, const float* B, int64_t ldb, int64_t M,
                   int64_t j0, int64_t j1, int64_t K, float alpha, float* C, int64_t ldc) {
  std::vector<float> arow(K);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t p = 0; p < K; ++p) arow[p] = transA ? A[p * lda + i] : A[i * lda + p];
    float* c = C + i * ldc;
    if (transB) {
      for (int64_t j = j0; j < j1; ++j) c[j] += alpha * dot_row(arow.data(), B + j * ldb, K);
    } else {
      for (int64_t p = 0; p < K; ++p) axpy_row(c + j0, B + p * ldb + j0, alpha * arow[p], j1 - j0);
    }
  }
}

void sgemm_on(const KernelTable& t, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
              const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
              int threads) {
  if (M <= 0 || N <= 0) return;
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    if (beta == 0.f)
      std::fill(c, c + N, 0.f);
    else if (beta != 1.f)
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
  }
  if (K <= 0 || alpha == 0.f) return;
  threads = detail::gemm_threads(M, N, K, false, threads);
  if (M < t.gemm.mr) {
    int64_t blocks = (N + 63) / 64;  // columns in blocks of 64 across threads
    parallel_for(blocks, threads, [&](int64_t lo, int64_t hi) {
      gemm_few_rows(transA, transB, A, lda, B, ldb, M, lo * 64, std::min(N, hi * 64), K, alpha, C, ldc);
    });
    return;
  }
  detail::GemmProblem p;
  p.M = M, p.N = N, p.K = K;
  auto pack_a = [&](int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
    detail::pack_a_panels(t, A, lda, transA, alpha, M, i0, mc, p0, kc, out);
  };
  auto pack_b = [&](int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
    detail::pack_b_panels(B, ldb, transB, N, p0, kc, j0, nc, t.gemm.nr, out);
  };
  p.pack_a = pack_a;
  p.pack_b = pack_b;
  p.C = C, p.ldc = ldc;
  p.accumulate = true;  // onto beta * C (zeros when beta == 0)
  detail::gemm_run(t, p, threads);
}

}  // namespace

bool sgemm_uses_avx2() { return kernel_table().isa != Isa::Scalar; }

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int threads) {
  sgemm_on(kernel_table(), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
}

void sgemm_portable(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int threads) {
  sgemm_on(*kernel_table_for(Isa::Scalar), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
}

}  // namespace kiln::kernels

// Single-precision matrix multiply for the reference interpreter and anything else that
// needs a fast, portable GEMM: C = alpha * op(A) * op(B) + beta * C, row-major.
#pragma once
#include <cstdint>

namespace kiln::kernels {

// op(A) is M x K (A stored K x M when transA), op(B) is K x N (B stored N x K when transB).
// lda/ldb/ldc are row strides in elements. beta == 0 overwrites C (NaNs in C are ignored).
// threads <= 0 uses the default thread count; blocks of C are split across threads.
void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int threads);

// The same blocked algorithm with the portable micro-kernel only (what CPUs without
// AVX2+FMA run); exposed so tests cover it on every machine.
void sgemm_portable(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int threads);

// True when the AVX2+FMA micro-kernel is in use on this CPU (for reports and benchmarks).
bool sgemm_uses_avx2();

}  // namespace kiln::kernels

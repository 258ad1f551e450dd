// GEMM with one operand packed ahead of time (gemm_packed.h) on the blocked driver.
// Packed layouts (valid only for the ISA that packed them, see packed_isa in the artifact):
//   packed B: ceil(N/nr) panels, each K x nr floats (row p of the panel = B[p, j0:j0+nr]),
//             zero-padded past N; panels follow each other, so a GEMV streams one array.
//   packed A: ceil(M/mr) panels, each K x mr floats (A[i0:i0+mr, p] per p), zero-padded.
// Neither depends on the cache blocks (kc, mc, nc), which stay free schedule knobs.
#include "kiln/kernels/gemm_packed.h"

#include "gemm_driver.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels {
using detail::ceil_div;

// Widest product (in panels of B) whose whole row tiles read A in place (gemm_run, GemmProblem::
// a_rows) instead of a packed copy per row block. Packing reads and writes A once, which a
// narrow product does not earn back: in-process pairs on one / two cores (Xeon 5th gen), in
// place against packed, 360 x 64 x 512 (digits_cnn's classifier) 0.64 / 0.68, 3136 x 256 x 64
// 0.91 / 0.77, 1024 x 256 x 1024 0.92 / 0.82, 1024 x 512 x 1024 0.95 / 0.89, 1024^3 0.97 /
// 0.97, 128 x 768 x 768 1.00 / 0.95; from 24 panels on even (1536^3 1.00 / 1.01, 2048^3 1.01
// / 1.00, 128 x 3072 x 768 1.01 / 1.00, GPT-2's 128 x 50257 x 768 head 1.01 / 1.00).
constexpr int64_t kARowsMaxPanels = 16;

size_t packed_b_floats_on(const KernelTable& t, int64_t K, int64_t N) {
  return static_cast<size_t>(ceil_div(N, t.gemm.nr) * t.gemm.nr * K);
}

void pack_b_on(const KernelTable& t, const float* B, int64_t ldb, bool trans_b, int64_t K, int64_t N, float* packed) {
  detail::pack_b_panels(B, ldb, trans_b, N, 0, K, 0, N, t.gemm.nr, packed);
}

void gemm_packed_b_on(const KernelTable& t, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                      const float* packed_b, float* C, int64_t ldc, const Epilogue& epi, int threads) {
  detail::gemm_packed_b_then(t, M, N, K, A, lda, packed_b, C, ldc, epi, threads, nullptr);
}

void detail::gemm_packed_b_then(const KernelTable& t, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                                const float* packed_b, float* C, int64_t ldc, const Epilogue& epi, int threads,
                                const float* b_next) {
  // One row (a decode step's projections): the weights stream once, panel by panel.
  if (M == 1 && detail::gemv_run(t, N, K, A, packed_b, C, &epi, threads)) return;
  detail::GemmProblem p;
  p.M = M, p.N = N, p.K = K;
  auto pack_a = [&](int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
    detail::pack_a_panels(t, A, lda, false, 1.f, M, i0, mc, p0, kc, out);
  };
  p.pack_a = pack_a;
  p.a_any_rows = true;
  if (N <= kARowsMaxPanels * t.gemm.nr && t.tile_a_rows_col_strip[0]) p.a_rows = A, p.lda = lda;
  p.b_packed = packed_b, p.b_next = b_next;
  p.C = C, p.ldc = ldc, p.epi = &epi;
  detail::gemm_run(t, p, threads);
}

size_t packed_a_floats_on(const KernelTable& t, int64_t M, int64_t K) {
  return static_cast<size_t>(ceil_div(M, t.gemm.mr) * t.gemm.mr * K);
}

void pack_a_on(const KernelTable& t, const float* A, int64_t lda, int64_t M, int64_t K, float* packed) {
  detail::pack_a_panels(t, A, lda, false, 1.f, M, 0, M, 0, K, packed);
}

void gemm_packed_a_on(const KernelTable& t, int64_t M, int64_t N, int64_t K, const float* packed_a, const float* B,
                      int64_t ldb, float* C, int64_t ldc, const Epilogue& epi, int threads) {
  detail::GemmProblem p;
  p.M = M, p.N = N, p.K = K;
  p.a_packed = packed_a;
  auto pack_b = [&](int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
    detail::pack_b_panels(B, ldb, false, N, p0, kc, j0, nc, t.gemm.nr, out);
  };
  p.pack_b = pack_b;
  p.C = C, p.ldc = ldc, p.epi = &epi;
  detail::gemm_run(t, p, threads);
}

size_t packed_b_floats(int64_t K, int64_t N) { return packed_b_floats_on(kernel_table(), K, N); }
void pack_b(const float* B, int64_t ldb, bool trans_b, int64_t K, int64_t N, float* packed) {
  pack_b_on(kernel_table(), B, ldb, trans_b, K, N, packed);
}
void gemm_packed_b(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* packed_b, float* C,
                   int64_t ldc, const Epilogue& epi, int threads) {
  gemm_packed_b_on(kernel_table(), M, N, K, A, lda, packed_b, C, ldc, epi, threads);
}
size_t packed_a_floats(int64_t M, int64_t K) { return packed_a_floats_on(kernel_table(), M, K); }
void pack_a(const float* A, int64_t lda, int64_t M, int64_t K, float* packed) {
  pack_a_on(kernel_table(), A, lda, M, K, packed);
}
void gemm_packed_a(int64_t M, int64_t N, int64_t K, const float* packed_a, const float* B, int64_t ldb, float* C,
                   int64_t ldc, const Epilogue& epi, int threads) {
  gemm_packed_a_on(kernel_table(), M, N, K, packed_a, B, ldb, C, ldc, epi, threads);
}

}  // namespace kiln::kernels

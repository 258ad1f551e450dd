// GEMM with one operand packed ahead of time (weights, packed once at compile time and stored
// in the artifact) and a fused epilogue. Row-major, C[M, N] = epilogue(op(A)[M, K] · op(B)[K, N]).
//
//   - packed B (MatMul / Gemm / fully connected: the weight is the right operand),
//   - packed A (convolution as GEMM: the weight [Cout, Cin·kh·kw] is the left operand and the
//     activations (or their im2col) the right one, so NCHW output comes out row by row).
//
// The packed layout depends on the micro-kernel (its MR/NR), so packed bytes are only valid on
// the ISA that packed them: packed_isa() names it and the artifact records it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/kernels/epilogue.h"

namespace kiln::kernels {

// "avx512", "avx2" or "scalar": the micro-kernel chosen once from CPU features at start-up.
std::string_view gemm_isa();

// ---- B packed (weights on the right) --------------------------------------------------------
// Floats needed to hold op(B) [K, N] packed.
size_t packed_b_floats(int64_t K, int64_t N);
// B is [K, N] with row stride ldb, or [N, K] when trans_b.
void pack_b(const float* B, int64_t ldb, bool trans_b, int64_t K, int64_t N, float* packed);
// C = epilogue(A · packed B); A [M, K] with row stride lda.
void gemm_packed_b(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* packed_b,
                   float* C, int64_t ldc, const Epilogue& epi, int threads);

// ---- A packed (weights on the left) ---------------------------------------------------------
size_t packed_a_floats(int64_t M, int64_t K);
// A is [M, K] with row stride lda.
void pack_a(const float* A, int64_t lda, int64_t M, int64_t K, float* packed);
// C = epilogue(packed A · B); B [K, N] with row stride ldb.
void gemm_packed_a(int64_t M, int64_t N, int64_t K, const float* packed_a, const float* B, int64_t ldb,
                   float* C, int64_t ldc, const Epilogue& epi, int threads);

}  // namespace kiln::kernels

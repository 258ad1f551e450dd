// Row kernels the runtime needs besides GEMM and convolution: softmax and layer norm over the
// last axis, a fused attention, and the GEMM epilogue on its own. All vectorised per ISA
// (through the kernel table), parallel over rows when the work pays for waking the pool.
//
// Numerics (tests/kernels check them against double-precision naive loops):
//   softmax     exp is a degree-6 polynomial after range reduction: relative error <= 2e-6
//               per element of the result.
//   layer_norm  two passes (mean, then variance of x - mean) in float: |err| <= 1e-5·|y|max.
//   attention   online softmax in float over key blocks: |err| <= 1e-5·max|V|·(1 + Sk/1000).
//   epilogue    Sigmoid/Silu/Tanh/GeluTanh via the exp polynomial, Gelu via the
//               Abramowitz-Stegun 7.1.26 erf (|erf err| <= 1.5e-7): see docs/kernels.md.
#pragma once
#include <cstdint>

#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels {

// y[r, :] = softmax(x[r, :]) for rows of n floats, rows ldx / ldy apart (x == y allowed).
void softmax_rows(const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t n, int threads,
                  const KernelTable& t = kernel_table());

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * scale + bias over n floats (bias may be null).
void layer_norm_rows(const float* x, int64_t ldx, const float* scale, const float* bias, float eps, float* y,
                     int64_t ldy, int64_t rows, int64_t n, int threads, const KernelTable& t = kernel_table());

// y = epilogue(y) over a rows x cols matrix with row stride ldy: bias per row or per column,
// residual with row stride epi.ldr, activation. (The GEMMs apply it in-tile; this is the same
// code for outputs produced elsewhere.)
void apply_epilogue(float* y, int64_t ldy, int64_t rows, int64_t cols, const Epilogue& epi, int threads,
                    const KernelTable& t = kernel_table());

// Y = softmax(scale · Q Kᵀ + mask) · V, per (batch b, head h):
//   Q [B, H, Sq, D], K [B, H, Sk, D], V [B, H, Sk, Dv], Y [B, H, Sq, Dv], contiguous.
//   mask (optional, additive): element (b, h, i, j) at
//     mask[b*mask_strides[0] + h*mask_strides[1] + i*mask_strides[2] + j*mask_strides[3]]
//   (a stride of 0 broadcasts that axis).
//   causal: key j is masked out for query i when j > i + (Sk - Sq).
// Never materialises the Sq x Sk score matrix: query tiles walk key blocks with an online
// softmax; parallel over B·H·(query tiles). A row whose keys are all masked (-inf) gives 0.
struct AttentionArgs {
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  float* y = nullptr;
  int64_t B = 1, H = 1, Sq = 0, Sk = 0, D = 0, Dv = 0;
  float scale = 1.f;
  const float* mask = nullptr;
  int64_t mask_strides[4] = {0, 0, 0, 0};
  bool causal = false;
  // Element strides of Q, K, V and Y along B, H and S (the head dim is always contiguous); all
  // three zero: a contiguous [B,H,S,D] tensor. Views of a wider tensor (kiln.Attention's
  // q_view..y_view): BERT's Q, K and V read in place from its [S, 1, 3·E] projection.
  int64_t q_strides[3] = {0, 0, 0}, k_strides[3] = {0, 0, 0}, v_strides[3] = {0, 0, 0}, y_strides[3] = {0, 0, 0};
};
void attention(const AttentionArgs& a, int threads, const KernelTable& t = kernel_table());

}  // namespace kiln::kernels

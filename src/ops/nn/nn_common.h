// Small pieces shared by the nn op definitions: the f16/bf16-via-f32 convention, a
// typed matmul (SGEMM for f32), a vectorisable axpy, and the cost of pool/norm-like ops.
#pragma once
#include <cstdint>
#include <optional>

#include "../op_helpers.h"

namespace kiln::ops::nn {

// C[M x N] = A[M x K] * B[K x N] (+ C when accumulate). sgemm for f32, loops otherwise.
template <typename T>
void matmul(bool transA, bool transB, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C,
            bool accumulate, int threads);

// y[i] += a * x[i] for i < n. Written in fixed chunks of 8 on restrict pointers so that
// g++ -O2 (whose default cost model only vectorises loops of known trip count) vectorises it.
template <typename T>
inline void axpy(T* __restrict y, const T* __restrict x, T a, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int u = 0; u < 8; ++u) y[i + u] += a * x[i + u];
  for (; i < n; ++i) y[i] += a * x[i];
}

// f16/bf16 are computed in f32: the dtype a kernel computes in, and an input converted to it.
inline DType compute_dtype(DType t) { return t == DType::f16 || t == DType::bf16 ? DType::f32 : t; }
inline Tensor compute_input(const Tensor& t) { return compute_dtype(t.dtype()) == t.dtype() ? t : to_f32(t); }
// Sets output i, converting an f32 result back to the model's dtype.
inline void set_result(KernelContext& c, size_t i, const Tensor& t, DType dtype) {
  c.set_output(i, from_f32(t, dtype));
}
// X, W and optional B of Conv/ConvTranspose in their compute dtype; they must share a dtype.
struct ConvOperands {
  Tensor X, W;
  std::optional<Tensor> B;
  const Tensor* bias() const { return B ? &*B : nullptr; }
};
inline ConvOperands conv_operands(const KernelContext& c) {
  ConvOperands o{compute_input(c.input(0)), compute_input(c.input(1)), std::nullopt};
  if (c.has_input(2)) o.B = compute_input(c.input(2));
  KILN_CHECK(o.W.dtype() == o.X.dtype() && (!o.B || o.B->dtype() == o.X.dtype()), c.node().describe(),
             ": X, W and B must share a dtype");
  return o;
}
// y[N,M,OS] += bias[M], broadcast over images and positions.
template <typename T>
void add_channel_bias(T* y, const T* bias, int64_t N, int64_t M, int64_t OS) {
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m) {
      T* ym = y + (b * M + m) * OS;
      for (int64_t o = 0; o < OS; ++o) ym[o] += bias[m];
    }
}

// Output dim from a known value, or unknown.
inline Dim dim_or_unknown(int64_t v) { return v >= 0 ? Dim(v) : Dim::unknown(); }

// Cost of ops that touch each element of input 0 a few times (pools, normalisations):
// F flops per input element, io bytes.
template <int F>
Cost cost_per_input(const CostContext& c) {
  Cost k;
  k.flops = F * static_cast<double>(numel_of(c.in_dims[0]));
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

}  // namespace kiln::ops::nn

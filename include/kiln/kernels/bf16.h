// BF16 GEMM and convolution: 16-bit brain-float operands, products accumulated in f32 with the
// AVX512-BF16 dot product (vdpbf16ps: per 32-bit lane, acc += a0*b0 + a1*b1 over a pair of bf16).
//
// Operands are packed in pairs of consecutive k per 32-bit word (low half = even k):
//   rows operand (broadcast by the micro-kernel): [ceil(M/mr)][Kp/2][mr] words
//   cols operand (loaded as vectors):             [ceil(N/nr)][Kp/2][nr] words
// with Kp = K rounded up to 2 and zeros past M, N and K. Weights are packed once from bf16;
// activations are rounded from f32 to bf16 (nearest even) while they are packed.
//
// Numerics: bf16 keeps 8 significant bits, so each f32 activation rounded to bf16 is within
// 2^-8 relatively (the unit roundoff); bf16 x bf16 products are exact in f32 and accumulate in f32. Against the f32
// product of the same (bf16) weights and the unrounded activations, an output differs by at most
//   2^-8 * sum_k |w_k x_k|  (+ f32 accumulation, ~1e-6 relative)
// which is the tolerance the tests check (tests/compress/bf16_test.cpp).
//
// Tables: the AVX512-BF16 one where the CPU has it (nullptr otherwise), and a scalar emulation of
// the same dot product on every CPU (for tests: same packing and driver). The compiled runtime's
// fallback on CPUs without AVX512-BF16 is not the emulation but the f32 kernels on the weights
// widened to f32 (fast_half_conv.cpp, fast_half_matmul.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels::bf16 {

// f32 -> bf16, round to nearest even (NaN stays a quiet NaN); bf16 -> f32 exactly.
inline uint16_t from_f32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

enum class BIsa : uint8_t { Emulated, Avx512Bf16 };
const char* bisa_name(BIsa isa);  // "emulated", "avx512-bf16"

struct BKernels {
  BIsa isa = BIsa::Emulated;
  int mr = 0, nr = 0;  // register tile
  // acc[r * nr + j] = sum over k of rows(r, k) * cols(k, j), one rows panel by one cols panel
  // of `kpairs` k pairs.
  void (*tile)(int64_t kpairs, const uint32_t* rows, const uint32_t* cols, float* acc) = nullptr;
  // One cols panel from f32 rows at offsets: for each k pair g < kpairs and column j < nr,
  //   out[g * nr + j] = pair(bf16(base[offsets[2g] + j]), bf16(base[offsets[2g + 1] + j]))
  // for j < count, 0 for count <= j < nr; offsets[2g + 1] < 0 gives a zero high half. Reads
  // base[offset + j] only for j < count.
  void (*pack_panel)(const float* base, const int64_t* offsets, int64_t kpairs, int64_t count, uint32_t* out) = nullptr;
  // Convolution with output positions as rows (small images): a tile of mr_px rows by nr columns,
  // acc[r * nr + j] like `tile` with rows packed [kpairs][mr_px]; and those rows from f32:
  //   out[g * mr_px + r] = pair(bf16(base[offsets[2g] + cols[r]]), bf16(base[offsets[2g + 1] + cols[r]]))
  // for r < count, 0 for count <= r < mr_px (offsets[2g + 1] < 0: a zero high half).
  int mr_px = 0;
  void (*tile_px)(int64_t kpairs, const uint32_t* rows, const uint32_t* cols, float* acc) = nullptr;
  void (*pack_rows_px)(const float* base, const int64_t* offsets, int64_t kpairs, const int64_t* cols, int count,
                       uint32_t* out) = nullptr;
};

// AVX512-BF16 kernels, or nullptr when the CPU (or the OS) lacks them.
const BKernels* native();
// The scalar emulation (any CPU).
const BKernels& emulated();
// What the compiled runtime uses: native() unless set_force_fallback(true) (tests and
// benchmarks of the fallback on a CPU that has BF16), or nullptr = take the f32 fallback.
const BKernels* runtime_kernels();
void set_force_fallback(bool on);

// ---- packing -----------------------------------------------------------------------------
size_t packed_rows_words(const BKernels& k, int64_t M, int64_t K);
size_t packed_cols_words(const BKernels& k, int64_t K, int64_t N);
// Rows operand from an M x K bf16 matrix (row stride lda), or from f32 (rounded).
void pack_rows_bf16(const BKernels& k, const uint16_t* a, int64_t lda, int64_t M, int64_t K, uint32_t* out);
void pack_rows_f32(const BKernels& k, const float* a, int64_t lda, int64_t M, int64_t K, uint32_t* out, int threads);
// Cols operand from bf16 B: element (k, n) at b[k * ldb + n], or at b[n * ldb + k] when trans.
void pack_cols_bf16(const BKernels& k, const uint16_t* b, int64_t ldb, bool trans, int64_t K, int64_t N, uint32_t* out);

// ---- GEMM ----------------------------------------------------------------------------------
// C (M x N, row stride ldc) = epilogue(rows x cols) from packed operands (kernels/epilogue.h:
// alpha, bias per row or column, residual, activation).
void gemm_packed(const BKernels& k, int64_t M, int64_t N, int64_t K, const uint32_t* rows, const uint32_t* cols,
                 float* C, int64_t ldc, const Epilogue& epi, int threads);

// ---- convolution (NCHW f32 activations, weights [K, C/group, R, S] bf16, group 1) -----------
// The packed weight's layout (rows or cols operand) follows from the shape (src/kernels/bf16/bconv.cpp).
// Whether the shape runs with output positions as rows (small images; see bconv.cpp).
bool conv_uses_pixels(const BKernels& k, const Conv2dShape& s);
size_t conv_packed_weight_words(const BKernels& k, const Conv2dShape& s);
void conv_pack_weight(const BKernels& k, const Conv2dShape& s, const uint16_t* w, uint32_t* packed);
size_t conv_workspace_bytes(const BKernels& k, const Conv2dShape& s, int threads);
// y [N, K, out_h, out_w] = epilogue(conv(bf16(x), w)); epi.bias_per_row = per output channel.
void conv2d(const BKernels& k, const Conv2dShape& s, const float* x, const uint32_t* packed_w, float* y,
            const Epilogue& epi, void* workspace, int threads);

}  // namespace kiln::kernels::bf16

// INT8 GEMM and convolution: u8 x s8 products accumulated exactly in int32, with the
// requantization (per-channel scale, int32 bias, zero point, residual, ReLU/Clip clamp) fused
// into the epilogue that writes u8, s8 or f32.
//
// One operand of every product is unsigned (u8) and the other signed (s8), as vpdpbusd wants.
// Signed activations are stored with their sign bit flipped (x + 128, zero point + 128) so they
// are unsigned too; the caller folds -zero_point * sum_k(w) into the int32 bias.
//
// Packed layouts (4 consecutive k per 32-bit lane, the VNNI dot-product group):
//   rows operand (broadcast by the micro-kernel): [ceil(M/mr)][Kp/4][mr][4] bytes
//   cols operand (loaded as vectors):             [ceil(N/nr)][Kp/4][nr][4] bytes
// with Kp = K rounded up to 4 and zeros past M, N and K. mr x nr is the ISA's register tile.
//
// ISA paths, chosen once from CPUID (kernels for every ISA the CPU has can be asked for, so tests
// run them all):
//   avx512-vnni  vpdpbusd on zmm, 8 x 32 tile
//   avx-vnni     vpdpbusd on ymm (VEX), 6 x 16 tile
//   avx2         no vpmaddubsw (its u8*s8 pair sums saturate at 16 bits): both operands are widened
//                to 16 bits and multiplied with vpmaddwd, whose pair sums are exact in int32;
//                for 7-bit s8 operands (qkernels_for_signed), vpmaddubsw + vpmaddwd, 5 x 16 tile.
//   scalar       plain loops.
// Every path gives the same int32 accumulators and, through the epilogue below, bit-identical outputs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kiln/kernels/conv.h"

namespace kiln::kernels {
struct DepthwisePlane;  // kiln/kernels/dispatch.h
}

namespace kiln::kernels::int8 {

enum class QIsa : uint8_t { Scalar, Avx2, AvxVnni, Avx512Vnni };
const char* qisa_name(QIsa isa);  // "scalar", "avx2", "avx-vnni", "avx512-vnni"

enum class QType : uint8_t { U8, S8, F32 };

// What the epilogue does to accumulator acc of channel ch (a row of C for convolutions, a
// column for matrix products); see epilogue_value for the exact arithmetic.
struct QEpilogue {
  bool per_row = true;              // channel = row index (true) or column index (false)
  const int32_t* bias = nullptr;    // per channel, added to the accumulator (nullptr = none)
  const float* scale = nullptr;     // per channel: accumulator units -> real value (required)
  const float* bias_f = nullptr;    // per channel real bias added after scaling (nullptr = none)
  // Residual with the output's layout: real value (r - residual_zp) * residual_scale for u8/s8.
  const void* residual = nullptr;
  QType residual_type = QType::F32;
  int64_t ldr = 0;
  float residual_scale = 1.f;
  int32_t residual_zp = 0;
  // With a residual: the product's value is first clamped to [res_lo, res_hi] (a folded QDQ graph
  // quantized it there, saturating to its type's range, before adding the residual).
  float res_lo = -std::numeric_limits<float>::infinity();
  float res_hi = std::numeric_limits<float>::infinity();
  float lo = -std::numeric_limits<float>::infinity();  // clamp: ReLU lo = 0; Clip [lo, hi]
  float hi = std::numeric_limits<float>::infinity();
  QType out = QType::F32;
  float out_inv_scale = 1.f;        // 1 / y_scale
  int32_t out_zp = 0;
  // Columns on a wider grid (0 = no): GEMM column j is output column (j / grid_w) * grid_valid +
  // j % grid_w, and columns with j % grid_w >= grid_valid are dropped (a convolution computed
  // over the padded input's width, see qconv2d).
  int64_t grid_w = 0, grid_valid = 0;
};

// The real value before quantization. Every path computes exactly these float operations:
//   v = float(acc + bias[ch]) * scale[ch];  v = v + bias_f[ch];
//   with a residual r: v = min(max(v, res_lo), res_hi), then
//   v = fma(float(r - residual_zp), residual_scale, v)   (u8/s8 residual)  or  v = v + r  (f32);
//   v = min(max(v, lo), hi)
inline float epilogue_real(const QEpilogue& e, int32_t acc, int64_t ch, const void* residual_elem) {
  float v = static_cast<float>(acc + (e.bias ? e.bias[ch] : 0)) * e.scale[ch];
  if (e.bias_f) v = v + e.bias_f[ch];
  if (residual_elem) {
    v = std::min(std::max(v, e.res_lo), e.res_hi);
    switch (e.residual_type) {
      case QType::U8:
        v = std::fma(static_cast<float>(*static_cast<const uint8_t*>(residual_elem) - e.residual_zp), e.residual_scale, v);
        break;
      case QType::S8:
        v = std::fma(static_cast<float>(*static_cast<const int8_t*>(residual_elem) - e.residual_zp), e.residual_scale, v);
        break;
      case QType::F32: v = v + *static_cast<const float*>(residual_elem); break;
    }
  }
  return std::min(std::max(v, e.lo), e.hi);
}

// Quantizes a real value: round half to even of v / y_scale (as v * out_inv_scale, kept within
// +-2^30 so the conversion cannot overflow), plus the zero point, saturated to the type.
inline int32_t quantize_value(float v, float inv_scale, int32_t zp, QType t) {
  float x = std::min(std::max(v * inv_scale, -1073741824.f), 1073741824.f);
  int32_t q = static_cast<int32_t>(std::nearbyint(x)) + zp;
  int32_t lo = t == QType::U8 ? 0 : -128, hi = t == QType::U8 ? 255 : 127;
  return std::min(std::max(q, lo), hi);
}

// Writes the epilogue's value v to the output element at p (f32, or quantized to u8/s8).
inline void store_output(const QEpilogue& e, float v, void* p) {
  if (e.out == QType::F32) *static_cast<float*>(p) = v;
  else if (e.out == QType::U8) *static_cast<uint8_t*>(p) = static_cast<uint8_t>(quantize_value(v, e.out_inv_scale, e.out_zp, e.out));
  else *static_cast<int8_t*>(p) = static_cast<int8_t>(quantize_value(v, e.out_inv_scale, e.out_zp, e.out));
}

// Dynamic quantization of f32 activations to u8, exactly DynamicQuantizeLinear: the range
// [min(0, lo), max(0, hi)] over 255 steps (scale 1 when it is empty), zero point
// saturate(round(-min / scale)), values saturate(round_half_even(x / scale) + zero point).
struct DynamicQParams {
  float scale = 1.f;
  int32_t zero_point = 0;
};
inline DynamicQParams dynamic_qparams(float lo, float hi) {
  lo = std::min(lo, 0.f), hi = std::max(hi, 0.f);
  DynamicQParams p;
  p.scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  float z = std::nearbyint((0.f - lo) / p.scale);
  p.zero_point = static_cast<int32_t>(std::min(std::max(z, 0.f), 255.f));
  return p;
}
// Rounds half to even by adding and subtracting 1.5 * 2^23 (exact for |v| <= 2^22, where v is
// clamped first: beyond that every value saturates anyway), which compilers vectorise.
inline int32_t quantize_dynamic(float x, const DynamicQParams& p) {
  float v = x / p.scale;
  if (v != v) return p.zero_point;  // NaN
  v = std::min(std::max(v, -4194304.f), 4194304.f);
  v = (v + 12582912.f) - 12582912.f;
  return std::min(std::max(static_cast<int32_t>(v) + p.zero_point, 0), 255);
}

// The epilogue of one element: accumulator acc of output (row, col), written to `out` (row stride
// ldo, type e.out); the residual is read at (row, col) with stride e.ldr.
// Always inlined: the ISA translation units (built with -mavx2, -mavxvnni, ...) must not emit an
// out-of-line copy the linker could hand to the scalar table.
[[gnu::always_inline]] inline void epilogue_element(const QEpilogue& e, int32_t acc, int64_t row, int64_t col, void* out, int64_t ldo) {
  const size_t osize = e.out == QType::F32 ? 4 : 1, rsize = e.residual_type == QType::F32 ? 4 : 1;
  const void* rp = e.residual ? static_cast<const char*>(e.residual) + (row * e.ldr + col) * rsize : nullptr;
  store_output(e, epilogue_real(e, acc, e.per_row ? row : col, rp), static_cast<char*>(out) + (row * ldo + col) * osize);
}

// The micro-kernels and epilogue of one ISA.
struct QKernels {
  QIsa isa = QIsa::Scalar;
  // Exact only while every s8 operand byte is within [-64, 64] (qkernels_for_signed).
  bool narrow_signed = false;
  int mr = 0, nr = 0;  // register tile
  // acc[r * nr + j] = sum over k of rows(r, k) * cols(k, j) for the whole tile (r < mr, j < nr),
  // from one rows panel and one cols panel of `kgroups` 4-k groups. tile_s8u8: rows are s8 and
  // cols u8 (convolution: weights x activations); tile_u8s8: rows u8, cols s8 (activations x weights).
  void (*tile_s8u8)(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int32_t* acc) = nullptr;
  void (*tile_u8s8)(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int32_t* acc) = nullptr;
  // out(row0 + r, col0 + j) = epilogue(acc[r * nr + j]) for r < rows, j < cols; `out` and
  // e.residual point at element (0, 0) of their matrices (row strides ldo and e.ldr).
  void (*epilogue)(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo) = nullptr;
  // tile_s8u8 with the cols operand read in place: group g's nr x 4 bytes at cols + offsets[g]
  // (the channel-quad planes of a convolution, see qconv2d), not in a packed panel.
  void (*tile_s8u8_gather)(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                           int32_t* acc) = nullptr;
  // Optional (nullptr: the tile, then epilogue): tile_s8u8 (offsets == nullptr) or tile_s8u8_gather
  // with the epilogue applied while the accumulators are still in registers, for per_row
  // epilogues: out(row0 + r, col0 + j) for r < rows_valid, j < cols_valid (GEMM columns, mapped
  // through e.grid_w / grid_valid as epilogue_tile does when tile_epilogue_grid is set; without
  // it, only for epilogues without a grid). Bit-identical to the tile + epilogue.
  void (*tile_s8u8_epilogue)(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                             int rows_valid, int cols_valid, const QEpilogue& e, int64_t row0, int64_t col0, void* out,
                             int64_t ldo) = nullptr;
  bool tile_epilogue_grid = false;
  // Optional (nullptr: no "pixels" convolution path, qconv_pixels.cpp): tile (r, j) = sum over
  // runs u < runs and 4-k groups q < run_groups of the 4 u8 bytes at rows[r] + run_offsets[u] +
  // 4 q times group u * run_groups + q of the packed s8 cols panel `cols` — the rows operand
  // read in place, each row (an output pixel) from its own position of an image whose pixels
  // hold their channels together — stored transposed: acc[j * ldb + r] for j < nr, r < mr. It
  // may also write acc[j * ldb + r] for r in [mr, 8) (the ymm tables transpose 8 x 8 blocks).
  void (*tile_u8s8_pixels)(const uint8_t* const* rows, const int64_t* run_offsets, int64_t runs, int64_t run_groups,
                           const uint8_t* cols, int32_t* acc, int64_t ldb) = nullptr;
  // Optional (nullptr: no pixel-major int8 activations, Conv2dShape::y_nhwc): tile_u8s8_pixels
  // over the output pixels [p0, p1) (tiles of mr; pixel p's row at image + pixel_offsets[p],
  // pixels past p1 - 1 reading its row) with the epilogue applied in registers, for epilogues
  // with per-column channels (per_row false): out(p, col0 + j) for p in [p0, p1), j < cols_valid,
  // the residual at p * e.ldr + col0 + j. Bit-identical to the tiles + epilogue.
  void (*pixels_epilogue_strip)(const uint8_t* image, const int64_t* pixel_offsets, int64_t p0, int64_t p1,
                                const int64_t* run_offsets, int64_t runs, int64_t run_groups, const uint8_t* cols,
                                int cols_valid, const QEpilogue& e, int64_t col0, void* out, int64_t ldo) = nullptr;
  // Optional (nullptr: tile_s8u8_epilogue per panel): tile_s8u8_epilogue over `count` consecutive
  // packed panels (panel_bytes apart, GEMM columns col0 + p * nr; ncols columns valid from col0),
  // the epilogue's set-up paid once. Bit-identical to the tiles one by one.
  void (*tile_s8u8_epilogue_strip)(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int64_t panel_bytes,
                                   int64_t count, int rows_valid, int64_t ncols, const QEpilogue& e, int64_t row0,
                                   int64_t col0, void* out, int64_t ldo) = nullptr;
  // Optional (nullptr: depthwise convolutions run the grouped GEMM): a depthwise convolution of
  // nc <= 8 channels at once, channel-blocked (qdepthwise_avx2.cpp): planes x + c * x_plane
  // (g.H x g.W; x_plane 0: one plane for every channel) XOR flip, the block's weights w as
  // [R*S][8] floats (tap-major, the qconv_pack_weight layout), outputs out + c * out_plane
  // (g.OH x g.OW, element type e.out). The products are summed in f32, exact for windows of up
  // to qdepthwise_max_taps taps (every partial sum is an integer below 2^24), so the outputs
  // equal the GEMM path's bit for bit. `scratch` holds depthwise_block_scratch(g, 8).floats
  // floats, 64-byte aligned, its padding (everything but the input's interior, which the kernel
  // writes) already the padding value as a float. e's per-channel arrays and residual start at
  // the block's first channel (residual planes e.ldr apart, indexed like the output).
  void (*depthwise_block)(const DepthwisePlane& g, const uint8_t* x, int64_t x_plane, int nc, uint8_t flip,
                          const float* w, float* scratch, const QEpilogue& e, void* out, int64_t out_plane) = nullptr;
  // Optional (nullptr: depthwise convolutions stay NCHW): a depthwise convolution (group == C ==
  // K) whose input and output are both pixel-major (Conv2dShape::x_nhwc and y_nhwc), 16 channels
  // a vector read and written in place; packed_w as qconv_pack_weight packs that shape (blocks of
  // 16 channels, [R*S][16] floats each); e per channel, its
  // residual pixel-major like y. Bit-identical to depthwise_block's bytes, transposed.
  void (*depthwise_nhwc)(const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad, const float* packed_w,
                         const QEpilogue& e, void* y, int threads) = nullptr;
};
// 255 * 127 * taps < 2^24: the f32 sums of the channel-blocked depthwise kernel stay exact.
constexpr int64_t qdepthwise_max_taps = 518;

// The kernels for this CPU (best ISA it has), and those of one ISA (nullptr when the CPU lacks it).
const QKernels& qkernels();
const QKernels* qkernels_for(QIsa isa);
// The kernels for a product whose s8 operand is the constant `s8` (n bytes, e.g. the weights):
// qkernels(), except on AVX2 without VNNI when every byte is within [-64, 64] (7-bit weights,
// `kiln quantize --reduce-range`): then kernels that multiply bytes with vpmaddubsw, exact in
// that range and about twice the rate of the widening AVX2 kernels (qgemm_avx2_narrow.cpp).
// Pack and run with the same kernels.
const QKernels& qkernels_for_signed(const int8_t* s8, int64_t n);

// ---- packing -----------------------------------------------------------------------------
size_t packed_rows_bytes(const QKernels& k, int64_t M, int64_t K);
size_t packed_cols_bytes(const QKernels& k, int64_t K, int64_t N);
// Rows operand from a row-major M x K byte matrix (row stride lda); every byte XORed with
// `flip` (0x80 turns s8 activations into u8 ones, 0 keeps them).
void pack_rows(const QKernels& k, const uint8_t* a, int64_t lda, int64_t M, int64_t K, uint8_t flip, uint8_t* out);
// Cols operand from a K x N byte matrix: element (k, n) at b[k * ldb + n], or at b[n * ldb + k]
// when `trans` (weights stored [N, K], e.g. Gemm with transB).
void pack_cols(const QKernels& k, const uint8_t* b, int64_t ldb, bool trans, int64_t K, int64_t N, uint8_t* out);
// Columns [j0, j0 + n) of the cols operand whose row k is the bytes at base + offsets[k]
// (offsets[k] < 0: a zero row; 4 * kgroups entries), e.g. a convolution's im2col rows: writes
// ceil(n / nr) panels of kgroups * nr * 4 bytes from `out`, zero past n.
void pack_cols_rows(const QKernels& k, const uint8_t* base, const int64_t* offsets, int64_t kgroups, int64_t j0,
                    int64_t n, uint8_t* out);

// ---- GEMM ----------------------------------------------------------------------------------
// The epilogue of one finished tile (acc: rows x cols at GEMM position (row0, col0), row stride
// k.nr), through e.grid_w / grid_valid when set.
void epilogue_tile(const QKernels& k, const int32_t* acc, int rows, int64_t row0, int64_t col0, int cols,
                   const QEpilogue& e, void* out, int64_t ldo);

// C (M x N) = epilogue(rows x cols) from packed operands, written at out (row stride ldo, element
// type e.out). rows_signed: the rows operand is s8 and cols u8 (else the reverse).
void qgemm_packed(const QKernels& k, bool rows_signed, int64_t M, int64_t N, int64_t K, const uint8_t* rows,
                  const uint8_t* cols, const QEpilogue& e, void* out, int64_t ldo, int threads);

// ---- convolution (NCHW, weights [K, C/group, R, S] s8, activations u8) ----------------------
// Packed weight: each group's [K/group, (C/group)*R*S] matrix as a rows operand, groups back to back.
size_t qconv_packed_weight_bytes(const QKernels& k, const Conv2dShape& s);
void qconv_pack_weight(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed);
// Depthwise convolutions (group == C == K, or one input channel into K outputs) run through
// QKernels::depthwise_block when the table has it and the window has at most
// qdepthwise_max_taps taps; their packed weight is then the weight as floats, in blocks of 8
// channels, tap-major.
bool qconv_is_depthwise(const QKernels& k, const Conv2dShape& s);
// The path qconv2d takes for s on table k (signed_input: s8 activations), for reports and
// profiles: "depthwise" (channel-blocked), "pixels" (output pixels as the GEMM's rows, windows
// read in place), "quads" (channel quads read in place), "planes" (a
// 1x1 convolution reading its input planes as they are), "im2col" (phase planes packed into
// panels) or "nhwc" (the pixels path reading or writing pixel-major activations).
const char* qconv_tactic_name(const QKernels& k, const Conv2dShape& s, bool signed_input);
// Whether qconv2d can read (input) and write (output and residual) s pixel-major
// (Conv2dShape::x_nhwc / y_nhwc) on table k: group 1, input channels in quads, and the
// "pixels" path with its fused epilogue (QKernels::pixels_epilogue_strip), where such a shape
// runs whatever qconv_uses_pixels would pick for NCHW; or a depthwise shape (qconv_is_depthwise,
// C == K) on QKernels::depthwise_nhwc, which needs x_nhwc and y_nhwc together. Tactic "nhwc".
// Elsewhere (a table without those kernels, an artifact compiled on another CPU) qconv2d runs
// pixel-major shapes on the NCHW paths between transposes (tactic "nhwc-transposed"), with the
// same bytes: the packed weight and workspace sizes follow.
bool qconv_nhwc_supported(const QKernels& k, const Conv2dShape& s);
// y [N][H][W][C] = x [N][C][H][W] bytes (16 x 16 and 32 x 16 byte transposes): an int8 max
// pool's output for pixel-major readers (lower/int8_nhwc_layout.cpp).
void planes_to_pixels(const uint8_t* x, int64_t N, int64_t C, int64_t H, int64_t W, uint8_t* y, int threads);
// Scratch bytes of one qconv2d call.
size_t qconv_workspace_bytes(const QKernels& k, const Conv2dShape& s, int threads);
// y [N, K, out_h, out_w] = epilogue(conv(x ^ flip, w)) with padding taps reading `pad` (the
// activations' zero point, after the flip). e.per_row must be true (channel = output channel);
// e.residual, when set, has y's layout: NCHW planes e.ldr apart, or pixel-major with y (y_nhwc:
// the kernel sets its stride). With s.x_nhwc / s.y_nhwc, x / y (and the residual) are
// [N, H, W, C] bytes (qconv_nhwc_supported must hold).
void qconv2d(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
             const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads);

// y[i] = table[x[i]] for i < n, a 256-entry byte table (kiln.QLookup's kernel): AVX2 vpshufb
// lookups where the CPU has them (about 3x the scalar loop's rate), else the scalar loop.
void lookup_bytes(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n);

// Per-tensor QuantizeLinear of x[0:n) into y (u8, or s8 bytes when is_signed): saturate(round
// half to even(x / scale) + zp), NaN -> zp, exactly the reference's; AVX2 where the CPU has it
// (8 floats per division), else 4 at a time with SSE2, and a scalar tail.
void quantize_floats(const float* x, int64_t n, float scale, int32_t zp, bool is_signed, uint8_t* y);

// sum_k w[m][k] of an M x K s8 matrix (the zero-point compensation of each output channel).
void row_sums_s8(const int8_t* w, int64_t M, int64_t K, int32_t* out);

}  // namespace kiln::kernels::int8

namespace kiln::kernels::int8 {

// 2-D max pooling of u8 (or, with is_signed, s8) planes: y[p, oh, ow] = max over the window
// (oh * stride_h - pad_top + kh, ow * stride_w - pad_left + kw), taps outside the plane ignored
// (ONNX MaxPool semantics: padding never wins). Separable: a horizontal pass per input row, then
// a vertical pass, both over whole rows. Exact (max is order-free).
struct Pool2d {
  int64_t planes = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};
size_t max_pool_workspace_bytes(const Pool2d& p, int threads);
void max_pool_2d(const Pool2d& p, bool is_signed, const uint8_t* x, uint8_t* y, uint8_t* workspace, int threads);

}  // namespace kiln::kernels::int8

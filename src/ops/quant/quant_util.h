// Shared pieces of the quantization ops: rounding/saturation, zero-point and scale
// parameters that are per tensor or per row/column/channel, an exact integer GEMM and the
// convolution geometry + im2col used by ConvInteger and QLinearConv.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../op_helpers.h"

namespace kiln::ops::quant {

// Range of a quantized dtype (u8: 0..255, i8: -128..127); fails for other dtypes.
struct QRange {
  int32_t lo, hi;
};
QRange qrange(const Node& n, DType dt, const std::string& what);

// round-half-to-even(v) + zp, saturated to r. NaN maps to zp (no value is closer to "no number").
inline int32_t round_add_saturate(double v, int32_t zp, QRange r) {
  double q = std::isnan(v) ? zp : std::nearbyint(v) + zp;  // nearbyint rounds ties to even by default
  if (q < r.lo) return r.lo;
  if (q > r.hi) return r.hi;
  return static_cast<int32_t>(q);
}

// Writes integer values (already in range) into a u8/i8 tensor.
void store_q(Tensor& t, int64_t i, int32_t v);
// Reads element i of an integer tensor as int32 (u8, i8, i32).
int32_t load_i32(const Tensor& t, int64_t i);

// Zero point input: fails unless it has the dtype of `data` (the quantized tensor it belongs to).
void check_zp_dtype(const Node& n, const Tensor& zp, DType data, const std::string& what);

// A parameter (scale or zero point) that is per tensor or varies along one index.
// get(i) returns the value for index i (of the row, column or channel).
struct Param {
  std::vector<double> values;  // 1 value (per tensor) or one per index
  double get(int64_t i) const { return values.size() == 1 ? values[0] : values[i]; }
};
// Reads `t` as per tensor (one element) or as a 1-D vector of `count` entries; fails otherwise.
Param read_param(const Node& n, const Tensor* t, int64_t count, const std::string& what, double dflt);

// c[m*N + n] = sum_k a[m*K + k] * bt[n*K + k]. Operands are int32 with zero points already
// subtracted; the sum wraps to int32 like an int32 accumulator would.
void gemm_i32(int64_t M, int64_t N, int64_t K, const int32_t* a, const int32_t* bt, int32_t* c);

// ---- convolution geometry (Conv attributes: auto_pad, dilations, group, kernel_shape, pads, strides)
struct ConvGeom {
  int64_t batch = 0, in_ch = 0, out_ch = 0, group = 1;
  std::vector<int64_t> in, kernel, out, stride, dil, pad_begin;  // per spatial dim
  int64_t in_size() const { return numel_of(in); }
  int64_t out_size() const { return numel_of(out); }
  int64_t kernel_size() const { return numel_of(kernel); }
};
// From concrete x [N, C, D...] and w [M, C/group, k...]; fails with a clear message on bad input.
ConvGeom conv_geometry(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& w);
// Output dims [N, M, out...] for shape inference (unknown spatial dims when inputs are not static).
Shape conv_output_shape(InferContext& c, size_t x_index, size_t w_index);
// For image `img`, group `g`: col[p * Kc + k] = x value under kernel tap k at output position p
// (0 where the tap falls into padding), Kc = (C/group) * kernel_size. `x` is zero-point shifted.
void im2col(const ConvGeom& geo, const int32_t* x, int64_t img, int64_t g, std::vector<int32_t>& col);
// acc [N, M, out...] = integer convolution of shifted x and w (w: [M, Kc] rows, shifted per channel).
std::vector<int32_t> conv_i32(const ConvGeom& geo, const std::vector<int32_t>& x, const std::vector<int32_t>& w);
Cost cost_conv(const CostContext& c, size_t x_index, size_t w_index);

// ---- matmul layout (numpy matmul broadcasting over batch dims)
struct MatMulGeom {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> a_batch, b_batch, batch;  // batch dims of a, b and the broadcast result
  std::vector<int64_t> out;                      // output dims (1-D operands squeezed)
  // Flat batch index of a / b for flat output batch index `i`.
  int64_t a_index(int64_t i) const;
  int64_t b_index(int64_t i) const;
};
MatMulGeom matmul_geometry(const Node& n, const std::vector<int64_t>& a, const std::vector<int64_t>& b);
Shape matmul_output_shape(InferContext& c, size_t a_index, size_t b_index);
Cost cost_matmul(const CostContext& c, size_t a_index, size_t b_index);

// Zero point of a MatMulInteger operand: per tensor, a 1-D vector per row of a (per column
// of b), or N-D with the operand's batch dims and 1 in the reduced dim. Returns the value
// for (batch index of the operand, row/column).
struct MatZp {
  std::vector<int32_t> values;
  int64_t per_batch = 0;  // entries per batch (0: shared by all batches)
  int32_t get(int64_t batch, int64_t i) const {
    if (values.size() == 1) return values[0];
    return values[(per_batch ? batch * per_batch : 0) + i];
  }
};
// `is_a`: zero point of the left operand (per row) or of the right one (per column).
MatZp read_mat_zp(const Node& n, const Tensor* zp, const std::vector<int64_t>& operand, const MatMulGeom& geo,
                  bool is_a, DType data, const std::string& what);
// Shifted copies of one batch: a_rows [M, K] and b transposed [N, K].
void shifted_a(const Tensor& a, const MatMulGeom& geo, int64_t ab, const MatZp& zp, std::vector<int32_t>& out);
void shifted_bt(const Tensor& b, const MatMulGeom& geo, int64_t bb, const MatZp& zp, std::vector<int32_t>& out);

}  // namespace kiln::ops::quant

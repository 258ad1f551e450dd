// kiln's quantized ops (domain "kiln"): what the fold-qdq pass makes of QDQ patterns and what
// `kiln quantize` compiles to. int8 flows between them without a round trip to float.
//
//   kiln.QConv(X, W, W_scale, B?, Z?) -> Y
//       X u8/i8 [N, C, H, W] with attributes x_scale, x_zero_point; W i8 [M, C/group, kh, kw]
//       (symmetric: zero point 0) with W_scale f32 [M] (or [1]); every Conv attribute.
//   kiln.QMatMul(A, B, B_scale, Bias?, Z?) -> Y
//       A [..., M, K]: u8/i8 with x_scale, x_zero_point, or f32 (dynamic quantization: A is
//       quantized per run to u8 exactly like DynamicQuantizeLinear); B i8 [K, N] (zero point 0)
//       with B_scale f32 [N] (or [1]); Y [..., M, N].
// Both compute, per output element of channel c (output channel / output column):
//   acc = sum (x - x_zero_point) * w                       (exact, int32)
//   v   = float(acc + B[c]) * (x_scale * w_scale[c])       B i32 (scale x_scale * w_scale[c])
//   v  += B[c]                                             B f32 instead: added after scaling
//   v   = min(max(v, pre_min), pre_max)                   with Z only (attributes, default +-inf)
//   v  += (Z - z_zero_point) * z_scale  (u8/i8 Z)  or  Z (f32 Z)            Z has Y's shape
//   v   = activation(v)                                   Relu / Clip (a clamp); any activation for f32 Y
//   Y   = v (out_dtype "f32") or saturate(round_half_even(v / y_scale) + y_zero_point) (u8/i8)
// The arithmetic is kernels::int8::epilogue_real / quantize_value, so the reference kernels and
// the fast ones agree bit for bit (f32 outputs with non-clamp activations: to the activation's
// vectorised accuracy).
#pragma once
#include <cstdint>

#include "kiln/ir/graph.h"
#include "kiln/kernels/int8.h"
#include "kiln/ops/kiln_ops.h"

namespace kiln::ops {

// The quantization attributes of a kiln.QConv / kiln.QMatMul node, checked.
struct QuantAttrs {
  float x_scale = 1.f;
  int32_t x_zero_point = 0;
  kernels::int8::QType out = kernels::int8::QType::F32;
  float y_scale = 1.f;
  int32_t y_zero_point = 0;
  float z_scale = 1.f;
  int32_t z_zero_point = 0;
  float pre_min, pre_max;  // clamp before the residual (+-inf when absent)
  ActivationSpec act;
  float lo, hi;  // the activation as a clamp (Relu, Clip) or +-inf
  bool clamp_only = true;  // act is None, Relu or Clip (else applied after the epilogue; f32 Y only)
};
// Throws kiln::Error naming the node for a bad out_dtype, a missing y_scale, a zero point out
// of its type's range or a non-clamp activation on a quantized output.
QuantAttrs quant_attrs(const Node& n);

// "u8" / "i8" / "f32" <-> QType and DType.
kernels::int8::QType qtype_of(DType dt);
DType dtype_of(kernels::int8::QType t);
const char* qtype_name(kernels::int8::QType t);

}  // namespace kiln::ops

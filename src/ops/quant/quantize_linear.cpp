// QuantizeLinear, DequantizeLinear (per tensor; per axis from opset 13) and
// DynamicQuantizeLinear (u8, scale and zero point computed from the data).
#include <algorithm>

#include "quant_util.h"

namespace kiln::ops {
namespace {
using quant::QRange;

// Which scale/zero-point entry applies to element e of x.
struct AxisLayout {
  int64_t count = 1, inner = 1;
  int64_t index(int64_t e) const { return count == 1 ? 0 : (e / inner) % count; }
};

AxisLayout axis_layout(const KernelContext& c, const Tensor& x, const Tensor& scale, const Tensor* zp) {
  if (scale.dtype() != DType::f32) c.fail(str_cat("scale must be f32, got ", dtype_name(scale.dtype())));
  if (zp && zp->numel() != scale.numel())
    c.fail(str_cat("zero point shape ", dims_str(zp->dims()), " does not match scale shape ", dims_str(scale.dims())));
  AxisLayout l;
  if (scale.numel() == 1 && scale.rank() <= 1) return l;
  if (c.opset() < 13)
    c.fail(str_cat("scale of shape ", dims_str(scale.dims()), " (per-axis) needs opset >= 13; it must be a scalar"));
  if (scale.rank() != 1) c.fail(str_cat("scale must be a scalar or 1-D, got shape ", dims_str(scale.dims())));
  int64_t axis = normalize_axis(c.node().attr_i("axis", 1), static_cast<int64_t>(x.rank()), c.node());
  if (scale.numel() != x.dim(axis))
    c.fail(str_cat("scale has ", scale.numel(), " entries, x ", dims_str(x.dims()), " has ", x.dim(axis),
                   " along axis ", axis));
  l.count = scale.numel();
  for (size_t d = axis + 1; d < x.rank(); ++d) l.inner *= x.dim(d);
  return l;
}

// ---- QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point)
void infer_quantize(InferContext& c) {
  DType x = c.in_dtype(0);
  if (x != DType::undefined && x != DType::f32 && x != DType::i32)
    c.fail(str_cat("x must be f32 or i32, got ", dtype_name(x)));
  DType out = c.has_input(2) ? c.in_dtype(2) : DType::u8;
  if (out != DType::undefined) quant::qrange(c.node(), out, "y_zero_point");
  c.set_output(0, out, c.in_shape(0));
}

void kernel_quantize(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& scale = c.input(1);
  const Tensor* zp = c.has_input(2) ? &c.input(2) : nullptr;
  DType out_dt = zp ? zp->dtype() : DType::u8;
  QRange r = quant::qrange(c.node(), out_dt, "y_zero_point");
  AxisLayout l = axis_layout(c, x, scale, zp);
  Tensor& y = c.alloc_output(0, out_dt, x.dims());
  const float* s = scale.data<float>();
  if (x.dtype() == DType::f32) {
    const float* xp = x.data<float>();
    for (int64_t e = 0; e < x.numel(); ++e) {
      int64_t i = l.index(e);
      quant::store_q(y, e, quant::round_add_saturate(xp[e] / s[i], zp ? quant::load_i32(*zp, i) : 0, r));
    }
  } else if (x.dtype() == DType::i32) {
    const int32_t* xp = x.data<int32_t>();
    for (int64_t e = 0; e < x.numel(); ++e) {
      int64_t i = l.index(e);
      double v = static_cast<double>(xp[e]) / s[i];
      quant::store_q(y, e, quant::round_add_saturate(v, zp ? quant::load_i32(*zp, i) : 0, r));
    }
  } else {
    c.fail(str_cat("x must be f32 or i32, got ", dtype_name(x.dtype())));
  }
}

// ---- DequantizeLinear: y = (x - zero_point) * scale
void infer_dequantize(InferContext& c) {
  DType x = c.in_dtype(0);
  if (x != DType::undefined && x != DType::u8 && x != DType::i8 && x != DType::i32)
    c.fail(str_cat("x must be u8, i8 or i32, got ", dtype_name(x)));
  if (c.has_input(2) && x != DType::undefined && c.in_dtype(2) != DType::undefined && c.in_dtype(2) != x)
    c.fail(str_cat("x_zero_point is ", dtype_name(c.in_dtype(2)), " but x is ", dtype_name(x), " (they must match)"));
  c.set_output(0, DType::f32, c.in_shape(0));
}

void kernel_dequantize(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& scale = c.input(1);
  const Tensor* zp = c.has_input(2) ? &c.input(2) : nullptr;
  if (x.dtype() != DType::u8 && x.dtype() != DType::i8 && x.dtype() != DType::i32)
    c.fail(str_cat("x must be u8, i8 or i32, got ", dtype_name(x.dtype())));
  if (zp) quant::check_zp_dtype(c.node(), *zp, x.dtype(), "x_zero_point");
  AxisLayout l = axis_layout(c, x, scale, zp);
  if (zp && x.dtype() == DType::i32)
    for (int64_t i = 0; i < zp->numel(); ++i)
      if (zp->data<int32_t>()[i] != 0) c.fail("an i32 x needs a zero point of 0");
  Tensor& y = c.alloc_output(0, DType::f32, x.dims());
  float* yp = y.data<float>();
  const float* s = scale.data<float>();
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t i = l.index(e);
    int32_t z = zp ? quant::load_i32(*zp, i) : 0;
    yp[e] = static_cast<float>(quant::load_i32(x, e) - z) * s[i];
  }
}

// ---- DynamicQuantizeLinear (u8): scale = (max(0, max x) - min(0, min x)) / 255, zero point =
// saturate(round(-min / scale)), y as QuantizeLinear. For an all-zero x the formula divides by
// zero; like ONNX Runtime, scale is then 1 (y and the zero point are 0 either way).
void infer_dynamic_quantize(InferContext& c) {
  DType x = c.in_dtype(0);
  if (x != DType::undefined && x != DType::f32) c.fail(str_cat("x must be f32, got ", dtype_name(x)));
  c.set_output(0, DType::u8, c.in_shape(0));
  c.set_output(1, DType::f32, Shape{});
  c.set_output(2, DType::u8, Shape{});
}

void kernel_dynamic_quantize(KernelContext& c) {
  const Tensor& x = c.input(0);
  if (x.dtype() != DType::f32) c.fail(str_cat("x must be f32, got ", dtype_name(x.dtype())));
  const float* xp = x.data<float>();
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0 so that 0 is exact
  for (int64_t e = 0; e < x.numel(); ++e) {
    if (xp[e] < lo) lo = xp[e];
    if (xp[e] > hi) hi = xp[e];
  }
  const QRange r{0, 255};
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  int32_t zp = quant::round_add_saturate(0.0f - lo / scale, 0, r);
  Tensor& y = c.alloc_output(0, DType::u8, x.dims());
  for (int64_t e = 0; e < x.numel(); ++e) quant::store_q(y, e, quant::round_add_saturate(xp[e] / scale, zp, r));
  c.set_output(1, Tensor::scalar<float>(scale));
  c.set_output(2, Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp)));
}

}  // namespace

OpDef def_QuantizeLinear() {
  return {.name = "QuantizeLinear",
          .since = 10,
          .min_inputs = 2,
          .max_inputs = 3,
          .attrs = {{"axis", AttrKind::Int}},
          .infer = infer_quantize,
          .cost = cost_elementwise,
          .kernel = kernel_quantize,
          .doc = "y = saturate(round_half_even(x / scale) + zero_point), per tensor or per axis"};
}

OpDef def_DequantizeLinear() {
  return {.name = "DequantizeLinear",
          .since = 10,
          .min_inputs = 2,
          .max_inputs = 3,
          .attrs = {{"axis", AttrKind::Int}},
          .infer = infer_dequantize,
          .cost = cost_elementwise,
          .kernel = kernel_dequantize,
          .doc = "y = (x - zero_point) * scale, per tensor or per axis"};
}

OpDef def_DynamicQuantizeLinear() {
  return {.name = "DynamicQuantizeLinear",
          .since = 11,
          .min_inputs = 1,
          .max_inputs = 1,
          .min_outputs = 3,
          .max_outputs = 3,
          .infer = infer_dynamic_quantize,
          .cost = cost_elementwise,
          .kernel = kernel_dynamic_quantize,
          .doc = "quantizes f32 to u8 with a scale and zero point computed from the data's range"};
}

}  // namespace kiln::ops

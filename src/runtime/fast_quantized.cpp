#include "fast_quantized.h"

namespace kiln::runtime {

std::optional<QuantizedConstants> quantized_constants(const Node& n, int64_t channels) {
  QuantizedConstants c;
  const Value* w = n.input(1);
  const Value* s = n.input(2);
  if (!w || !w->is_constant() || !s || !s->is_constant()) return std::nullopt;
  c.w = &*w->initializer;
  const Tensor& st = *s->initializer;
  if (c.w->dtype() != DType::i8 || st.dtype() != DType::f32 || (st.numel() != 1 && st.numel() != channels))
    return std::nullopt;
  for (int64_t i = 0; i < channels; ++i) c.w_scale.push_back(st.data<float>()[st.numel() == 1 ? 0 : i]);
  if (const Value* b = n.input(3)) {
    if (!b->is_constant() || b->initializer->numel() != channels) return std::nullopt;
    c.bias = &*b->initializer;
    if (c.bias->dtype() != DType::i32 && c.bias->dtype() != DType::f32) return std::nullopt;
  }
  return c;
}

void build_epilogue(const Node& n, const QuantizedConstants& c, const std::vector<int32_t>& weight_sums,
                    int32_t x_zero_point, float x_scale, QuantizedEpilogue& out) {
  out.attrs = ops::quant_attrs(n);
  const int64_t channels = static_cast<int64_t>(c.w_scale.size());
  out.scales.resize(channels);
  out.bias.resize(channels);
  for (int64_t i = 0; i < channels; ++i) {
    out.scales[i] = x_scale * c.w_scale[i];
    int32_t b = c.bias && c.bias->dtype() == DType::i32 ? c.bias->data<int32_t>()[i] : 0;
    out.bias[i] = b - x_zero_point * weight_sums[i];
  }
  kernels::int8::QEpilogue& e = out.e;
  e.scale = out.scales.data();
  e.bias = out.bias.data();
  if (c.bias && c.bias->dtype() == DType::f32) {
    out.bias_f.assign(c.bias->data<float>(), c.bias->data<float>() + channels);
    e.bias_f = out.bias_f.data();
  }
  e.lo = out.attrs.lo, e.hi = out.attrs.hi;
  e.out = out.attrs.out;
  e.out_inv_scale = 1.f / out.attrs.y_scale;
  e.out_zp = out.attrs.y_zero_point;
  if (const Value* z = n.input(4)) {
    e.residual_type = ops::qtype_of(z->dtype);
    e.residual_scale = out.attrs.z_scale;
    e.residual_zp = out.attrs.z_zero_point;
    e.res_lo = out.attrs.pre_min, e.res_hi = out.attrs.pre_max;
  }
}

}  // namespace kiln::runtime

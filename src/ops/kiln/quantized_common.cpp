// Attributes, input checks and the reference epilogue of the quantized kiln ops.
#include "quantized_common.h"

#include <limits>

namespace kiln::ops {

using kernels::int8::QType;

QType qtype_of(DType dt) {
  switch (dt) {
    case DType::u8: return QType::U8;
    case DType::i8: return QType::S8;
    case DType::f32: return QType::F32;
    default: break;
  }
  throw Error(str_cat("quantized ops: ", dtype_name(dt), " is not u8, i8 or f32"));
}

DType dtype_of(QType t) { return t == QType::U8 ? DType::u8 : t == QType::S8 ? DType::i8 : DType::f32; }

const char* qtype_name(QType t) { return t == QType::U8 ? "u8" : t == QType::S8 ? "i8" : "f32"; }

QuantAttrs quant_attrs(const Node& n) {
  QuantAttrs q;
  auto zero_point = [&](const char* name, QType t) {
    int64_t z = n.attr_i(name, 0);
    int64_t lo = t == QType::U8 ? 0 : -128, hi = t == QType::U8 ? 255 : 127;
    KILN_CHECK(t == QType::F32 || (z >= lo && z <= hi), n.describe(), ": ", name, " ", z, " is outside ",
               qtype_name(t), "'s range");
    return static_cast<int32_t>(z);
  };
  q.x_scale = n.attr_f("x_scale", 1.f);
  q.x_zero_point = static_cast<int32_t>(n.attr_i("x_zero_point", 0));
  std::string out = n.attr_s("out_dtype", "f32");
  KILN_CHECK(out == "u8" || out == "i8" || out == "f32", n.describe(), ": out_dtype '", out,
             "' must be u8, i8 or f32");
  q.out = out == "u8" ? QType::U8 : out == "i8" ? QType::S8 : QType::F32;
  if (q.out != QType::F32) {
    KILN_CHECK(n.has_attr("y_scale"), n.describe(), ": out_dtype ", out, " needs y_scale");
    q.y_scale = n.attr_f("y_scale", 1.f);
    KILN_CHECK(q.y_scale > 0 && std::isfinite(q.y_scale), n.describe(), ": y_scale must be positive and finite");
    q.y_zero_point = zero_point("y_zero_point", q.out);
  }
  q.z_scale = n.attr_f("z_scale", 1.f);
  q.z_zero_point = static_cast<int32_t>(n.attr_i("z_zero_point", 0));
  KILN_CHECK(q.x_scale > 0 && std::isfinite(q.x_scale), n.describe(), ": x_scale must be positive and finite");
  q.act = activation_of(n);
  const float inf = std::numeric_limits<float>::infinity();
  q.pre_min = n.attr_f("pre_min", -inf);
  q.pre_max = n.attr_f("pre_max", inf);
  q.lo = -inf, q.hi = inf;
  switch (q.act.act) {
    case Activation::None: break;
    case Activation::Relu: q.lo = 0.f; break;
    case Activation::Clip: q.lo = q.act.alpha, q.hi = q.act.beta; break;
    default: q.clamp_only = false; break;
  }
  KILN_CHECK(q.clamp_only || q.out == QType::F32, n.describe(), ": activation ", activation_name(q.act.act),
             " on a quantized output (only Relu and Clip fold into the requantization)");
  return q;
}

namespace kiln_domain {

std::vector<AttrSpec> quant_attr_specs() {
  std::vector<AttrSpec> a = {{"x_scale", AttrKind::Float},      {"x_zero_point", AttrKind::Int},
                             {"out_dtype", AttrKind::String},   {"y_scale", AttrKind::Float},
                             {"y_zero_point", AttrKind::Int},   {"z_scale", AttrKind::Float},
                             {"z_zero_point", AttrKind::Int},   {"pre_min", AttrKind::Float},
                             {"pre_max", AttrKind::Float}};
  for (const AttrSpec& s : activation_attrs()) a.push_back(s);
  return a;
}

void infer_quantized_io(InferContext& c, const Shape& y, const std::optional<int64_t>& channels) {
  const Node& n = c.node();
  QuantAttrs q = quant_attrs(n);
  DType ws = c.in_dtype(2);
  if (ws != DType::undefined && ws != DType::f32) c.fail(str_cat("the weight scale must be f32, got ", dtype_name(ws)));
  const Shape& wss = c.in_shape(2);
  if (wss.rank_known && wss.rank() > 1) c.fail(str_cat("the weight scale must be 1-D, got ", wss.str()));
  std::optional<int64_t> wn = wss.numel();
  if (wn && channels && *wn != 1 && *wn != *channels)
    c.fail(str_cat("the weight scale has ", *wn, " entries for ", *channels, " channels"));
  if (c.has_input(3)) {
    DType b = c.in_dtype(3);
    if (b != DType::undefined && b != DType::i32 && b != DType::f32)
      c.fail(str_cat("the bias must be i32 (accumulator units) or f32, got ", dtype_name(b)));
    std::optional<int64_t> bn = c.in_shape(3).numel();
    if (bn && channels && *bn != *channels) c.fail(str_cat("the bias has ", *bn, " entries for ", *channels, " channels"));
  }
  if (c.has_input(4)) {
    DType z = c.in_dtype(4);
    if (z != DType::undefined && z != DType::u8 && z != DType::i8 && z != DType::f32)
      c.fail(str_cat("the residual Z must be u8, i8 or f32, got ", dtype_name(z)));
    const Shape& zs = c.in_shape(4);
    if (zs.rank_known && y.rank_known && zs.is_static() && y.is_static() && zs != y)
      c.fail(str_cat("the residual Z ", zs.str(), " must have the output's shape ", y.str()));
  }
  c.set_output(0, dtype_of(q.out), y);
}

std::vector<float> channel_scales(const KernelContext& c, float x_scale, const Tensor& w_scale, int64_t channels) {
  if (w_scale.dtype() != DType::f32) c.fail(str_cat("the weight scale must be f32, got ", dtype_name(w_scale.dtype())));
  if (w_scale.numel() != 1 && w_scale.numel() != channels)
    c.fail(str_cat("the weight scale has ", w_scale.numel(), " entries for ", channels, " channels"));
  std::vector<float> s(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) s[i] = x_scale * w_scale.data<float>()[w_scale.numel() == 1 ? 0 : i];
  return s;
}

Tensor quantized_output(const KernelContext& c, const QuantAttrs& q, const std::vector<int32_t>& acc,
                        const std::vector<int64_t>& ydims, const std::vector<float>& scales, int64_t channels,
                        int64_t inner) {
  kernels::int8::QEpilogue e;
  e.scale = scales.data();
  if (c.has_input(3)) {
    const Tensor& b = c.input(3);
    if (b.numel() != channels) c.fail(str_cat("the bias has ", b.numel(), " entries for ", channels, " channels"));
    if (b.dtype() == DType::i32) e.bias = b.data<int32_t>();
    else if (b.dtype() == DType::f32) e.bias_f = b.data<float>();
    else c.fail(str_cat("the bias must be i32 or f32, got ", dtype_name(b.dtype())));
  }
  const Tensor* z = c.has_input(4) ? &c.input(4) : nullptr;
  if (z) {
    if (z->dims() != ydims) c.fail(str_cat("the residual Z ", dims_str(z->dims()), " must have the output's shape ", dims_str(ydims)));
    e.residual = z->raw();
    e.residual_type = qtype_of(z->dtype());
    e.residual_scale = q.z_scale;
    e.residual_zp = q.z_zero_point;
    e.res_lo = q.pre_min, e.res_hi = q.pre_max;
  }
  e.lo = q.lo, e.hi = q.hi;
  e.out = q.out;
  e.out_inv_scale = 1.f / q.y_scale;
  e.out_zp = q.y_zero_point;
  Tensor y(dtype_of(q.out), ydims);
  const size_t osize = dtype_size(y.dtype()), zsize = z ? dtype_size(z->dtype()) : 0;
  char* yp = static_cast<char*>(y.raw());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t ch = (static_cast<int64_t>(i) / inner) % channels;
    const void* rp = z ? static_cast<const char*>(z->raw()) + i * zsize : nullptr;
    float v = kernels::int8::epilogue_real(e, acc[i], ch, rp);
    if (!q.clamp_only) v = apply_activation(q.act.act, v, q.act.alpha, q.act.beta);
    kernels::int8::store_output(e, v, yp + i * osize);
  }
  return y;
}

}  // namespace kiln_domain
}  // namespace kiln::ops

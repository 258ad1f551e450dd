// ConvInteger (i32 = conv(x - x_zp, w - w_zp)) and QLinearConv (the same accumulation plus an
// optional i32 bias, requantized: y = saturate(round_half_even(acc * x_scale * w_scale[m] /
// y_scale) + y_zp)). Attributes as Conv; x's zero point is per tensor, w's per tensor or
// per output channel.
#include "quant_util.h"

namespace kiln::ops {
namespace {

const std::vector<AttrSpec> kConvAttrs = {{"auto_pad", AttrKind::String}, {"dilations", AttrKind::Ints},
                                          {"group", AttrKind::Int},       {"kernel_shape", AttrKind::Ints},
                                          {"pads", AttrKind::Ints},       {"strides", AttrKind::Ints}};

template <typename Fn>
void for_each_q(const KernelContext& c, const Tensor& t, const char* what, Fn fn) {
  if (t.dtype() == DType::u8) fn(t.data<uint8_t>());
  else if (t.dtype() == DType::i8) fn(t.data<int8_t>());
  else c.fail(str_cat(what, " must be u8 or i8, got ", dtype_name(t.dtype())));
}

// x minus its (per-tensor) zero point, as int32.
std::vector<int32_t> shifted_x(const KernelContext& c, const Tensor& x, const Tensor* zp) {
  int32_t z = 0;
  if (zp) {
    quant::check_zp_dtype(c.node(), *zp, x.dtype(), "x_zero_point");
    if (zp->numel() != 1) c.fail(str_cat("x_zero_point must have one element, got ", dims_str(zp->dims())));
    z = quant::load_i32(*zp, 0);
  }
  std::vector<int32_t> out(static_cast<size_t>(x.numel()));
  for_each_q(c, x, "x", [&](const auto* p) {
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = static_cast<int32_t>(p[i]) - z;
  });
  return out;
}

// w [M, Kc] minus its per-tensor or per-output-channel zero point, as int32.
std::vector<int32_t> shifted_w(const KernelContext& c, const Tensor& w, const Tensor* zp, int64_t M) {
  quant::Param z;
  z.values = {0};
  if (zp) {
    quant::check_zp_dtype(c.node(), *zp, w.dtype(), "w_zero_point");
    z = quant::read_param(c.node(), zp, M, "w_zero_point", 0);
  }
  int64_t kc = M == 0 ? 0 : w.numel() / M;
  std::vector<int32_t> out(static_cast<size_t>(w.numel()));
  for_each_q(c, w, "w", [&](const auto* p) {
    for (int64_t m = 0; m < M; ++m) {
      int32_t zm = static_cast<int32_t>(z.get(m));
      for (int64_t k = 0; k < kc; ++k) out[m * kc + k] = static_cast<int32_t>(p[m * kc + k]) - zm;
    }
  });
  return out;
}

void check_q_infer(const InferContext& c, size_t i, const char* what) {
  DType dt = c.in_dtype(i);
  if (dt != DType::undefined && dt != DType::u8 && dt != DType::i8)
    c.fail(str_cat(what, " must be u8 or i8, got ", dtype_name(dt)));
}

void check_zp_infer(const InferContext& c, size_t zp, size_t data, const char* what) {
  if (!c.has_input(zp)) return;
  DType z = c.in_dtype(zp), d = c.in_dtype(data);
  if (z != DType::undefined && d != DType::undefined && z != d)
    c.fail(str_cat(what, " is ", dtype_name(z), " but its data is ", dtype_name(d), " (they must match)"));
}

// ---- ConvInteger: x, w, x_zero_point?, w_zero_point?
void infer_conv_integer(InferContext& c) {
  check_q_infer(c, 0, "x");
  check_q_infer(c, 1, "w");
  check_zp_infer(c, 2, 0, "x_zero_point");
  check_zp_infer(c, 3, 1, "w_zero_point");
  c.set_output(0, DType::i32, quant::conv_output_shape(c, 0, 1));
}

void kernel_conv_integer(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  quant::ConvGeom geo = quant::conv_geometry(c.node(), x.dims(), w.dims());
  std::vector<int32_t> xs = shifted_x(c, x, c.has_input(2) ? &c.input(2) : nullptr);
  std::vector<int32_t> ws = shifted_w(c, w, c.has_input(3) ? &c.input(3) : nullptr, geo.out_ch);
  std::vector<int32_t> acc = quant::conv_i32(geo, xs, ws);
  std::vector<int64_t> dims{geo.batch, geo.out_ch};
  dims.insert(dims.end(), geo.out.begin(), geo.out.end());
  Tensor& y = c.alloc_output(0, DType::i32, dims);
  std::copy(acc.begin(), acc.end(), y.data<int32_t>());
}

// ---- QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?
void infer_qlinear_conv(InferContext& c) {
  check_q_infer(c, 0, "x");
  check_q_infer(c, 3, "w");
  check_zp_infer(c, 2, 0, "x_zero_point");
  check_zp_infer(c, 5, 3, "w_zero_point");
  DType out = c.in_dtype(7);
  if (out != DType::undefined) quant::qrange(c.node(), out, "y_zero_point");
  if (c.has_input(8) && c.in_dtype(8) != DType::undefined && c.in_dtype(8) != DType::i32)
    c.fail(str_cat("bias B must be i32, got ", dtype_name(c.in_dtype(8))));
  c.set_output(0, out, quant::conv_output_shape(c, 0, 3));
}

void kernel_qlinear_conv(KernelContext& c) {
  const Node& n = c.node();
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(3);
  quant::ConvGeom geo = quant::conv_geometry(n, x.dims(), w.dims());
  int64_t M = geo.out_ch, P = geo.out_size();
  for (size_t i : {1, 4, 6})
    if (c.input(i).dtype() != DType::f32)
      c.fail(str_cat("scales must be f32, input ", i, " is ", dtype_name(c.input(i).dtype())));
  quant::Param x_scale = quant::read_param(n, &c.input(1), 1, "x_scale", 1.0);
  quant::Param w_scale = quant::read_param(n, &c.input(4), M, "w_scale", 1.0);
  quant::Param y_scale = quant::read_param(n, &c.input(6), 1, "y_scale", 1.0);
  const Tensor& y_zp = c.input(7);
  if (y_zp.numel() != 1) c.fail(str_cat("y_zero_point must have one element, got ", dims_str(y_zp.dims())));
  quant::QRange r = quant::qrange(n, y_zp.dtype(), "y_zero_point");
  int32_t yz = quant::load_i32(y_zp, 0);
  const int32_t* bias = nullptr;
  if (c.has_input(8)) {
    const Tensor& b = c.input(8);
    if (b.dtype() != DType::i32 || b.rank() != 1 || b.numel() != M)
      c.fail(str_cat("bias B must be i32 of shape [", M, "], got ", dtype_name(b.dtype()), dims_str(b.dims())));
    bias = b.data<int32_t>();
  }
  std::vector<int32_t> acc = quant::conv_i32(geo, shifted_x(c, x, &c.input(2)), shifted_w(c, w, &c.input(5), M));
  std::vector<int64_t> dims{geo.batch, M};
  dims.insert(dims.end(), geo.out.begin(), geo.out.end());
  Tensor& y = c.alloc_output(0, y_zp.dtype(), dims);
  float xs = static_cast<float>(x_scale.get(0)), ys = static_cast<float>(y_scale.get(0));
  for (int64_t img = 0; img < geo.batch; ++img)
    for (int64_t m = 0; m < M; ++m) {
      float mult = xs * static_cast<float>(w_scale.get(m)) / ys;
      int32_t b = bias ? bias[m] : 0;
      for (int64_t p = 0; p < P; ++p) {
        int64_t o = (img * M + m) * P + p;
        // Bias joins the int32 accumulator (wrapping like one) before requantization.
        int32_t a = static_cast<int32_t>(static_cast<uint32_t>(acc[o]) + static_cast<uint32_t>(b));
        quant::store_q(y, o, quant::round_add_saturate(static_cast<float>(a) * mult, yz, r));
      }
    }
}

}  // namespace

OpDef def_ConvInteger() {
  return {.name = "ConvInteger",
          .since = 10,
          .min_inputs = 2,
          .max_inputs = 4,
          .attrs = kConvAttrs,
          .infer = infer_conv_integer,
          .cost = [](const CostContext& c) { return quant::cost_conv(c, 0, 1); },
          .kernel = kernel_conv_integer,
          .doc = "i32 convolution of u8/i8 x and w minus their zero points"};
}

OpDef def_QLinearConv() {
  return {.name = "QLinearConv",
          .since = 10,
          .min_inputs = 8,
          .max_inputs = 9,
          .attrs = kConvAttrs,
          .infer = infer_qlinear_conv,
          .cost = [](const CostContext& c) { return quant::cost_conv(c, 0, 3); },
          .kernel = kernel_qlinear_conv,
          .doc = "quantized convolution: integer accumulation (+ i32 bias), requantized to y_scale/y_zero_point"};
}

}  // namespace kiln::ops

// kiln.QConv(X, W, W_scale, B?, Z?): an integer convolution of u8/i8 activations and symmetric
// i8 weights with the requantizing epilogue of include/kiln/ops/quantized.h. The reference
// kernel accumulates with quant::conv_i32 (ConvInteger's loops) and applies the epilogue per element.
#include "../quant/quant_util.h"
#include "quantized_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

void infer_qconv(InferContext& c) {
  DType x = c.in_dtype(0), w = c.in_dtype(1);
  if (x != DType::undefined && x != DType::u8 && x != DType::i8) c.fail(str_cat("X must be u8 or i8, got ", dtype_name(x)));
  if (w != DType::undefined && w != DType::i8) c.fail(str_cat("W must be i8, got ", dtype_name(w)));
  std::optional<int64_t> channels;
  const Shape& ws = c.in_shape(1);
  if (ws.rank_known && ws.rank() >= 1 && ws[0].is_static()) channels = ws[0].value;
  infer_quantized_io(c, quant::conv_output_shape(c, 0, 1), channels);
}

void qconv_kernel(KernelContext& c) {
  if (c.node().attr_i("x_nhwc", 0) != 0 || c.node().attr_i("y_nhwc", 0) != 0)
    c.fail("pixel-major (NHWC) activations run only on the compiled INT8 kernels, which declined this node; "
           "recompile the model");
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  if (x.dtype() != DType::u8 && x.dtype() != DType::i8) c.fail(str_cat("X must be u8 or i8, got ", dtype_name(x.dtype())));
  if (w.dtype() != DType::i8) c.fail(str_cat("W must be i8, got ", dtype_name(w.dtype())));
  QuantAttrs q = quant_attrs(c.node());
  quant::QRange xr = quant::qrange(c.node(), x.dtype(), "x_zero_point");
  if (q.x_zero_point < xr.lo || q.x_zero_point > xr.hi)
    c.fail(str_cat("x_zero_point ", q.x_zero_point, " is outside ", dtype_name(x.dtype()), "'s range"));
  quant::ConvGeom geo = quant::conv_geometry(c.node(), x.dims(), w.dims());
  std::vector<int32_t> xs(static_cast<size_t>(x.numel())), ws(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xs[i] = quant::load_i32(x, i) - q.x_zero_point;
  for (int64_t i = 0; i < w.numel(); ++i) ws[i] = w.data<int8_t>()[i];
  std::vector<int32_t> acc = quant::conv_i32(geo, xs, ws);
  std::vector<int64_t> ydims = {geo.batch, geo.out_ch};
  ydims.insert(ydims.end(), geo.out.begin(), geo.out.end());
  std::vector<float> scales = channel_scales(c, q.x_scale, c.input(2), geo.out_ch);
  c.set_output(0, quantized_output(c, q, acc, ydims, scales, geo.out_ch, geo.out_size()));
}

std::vector<AttrSpec> qconv_attrs() {
  std::vector<AttrSpec> a = {{"auto_pad", AttrKind::String}, {"dilations", AttrKind::Ints}, {"group", AttrKind::Int},
                             {"kernel_shape", AttrKind::Ints}, {"pads", AttrKind::Ints}, {"strides", AttrKind::Ints}};
  for (const AttrSpec& s : quant_attr_specs()) a.push_back(s);
  a.push_back({"tactic", AttrKind::String});  // set by lowering: the INT8 path it takes (profiles show it)
  // set by lowering (lower/int8_nhwc_layout.cpp): X, or Y and Z, are [N, H, W, C] bytes
  a.push_back({"x_nhwc", AttrKind::Int});
  a.push_back({"y_nhwc", AttrKind::Int});
  return a;
}

}  // namespace

OpDef def_QConv() {
  return {.name = "QConv",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 3,
          .max_inputs = 5,
          .attrs = qconv_attrs(),
          .infer = infer_qconv,
          .cost = [](const CostContext& c) { return quant::cost_conv(c, 0, 1); },
          .kernel = qconv_kernel,
          .doc = "int8 Conv (u8/i8 x, symmetric i8 w) with bias, residual, Relu/Clip and requantization fused"};
}

}  // namespace kiln::ops

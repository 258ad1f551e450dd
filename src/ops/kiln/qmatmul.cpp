// kiln.QMatMul(A, B, B_scale, Bias?, Z?): A [..., M, K] (u8/i8 with x_scale/x_zero_point, or f32
// quantized per run like DynamicQuantizeLinear) times symmetric i8 B [K, N], with the
// requantizing epilogue of include/kiln/ops/quantized.h.
#include "../quant/quant_util.h"
#include "quantized_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

void infer_qmatmul(InferContext& c) {
  DType a = c.in_dtype(0), b = c.in_dtype(1);
  if (a != DType::undefined && a != DType::u8 && a != DType::i8 && a != DType::f32)
    c.fail(str_cat("A must be u8, i8 or f32 (dynamic), got ", dtype_name(a)));
  if (b != DType::undefined && b != DType::i8) c.fail(str_cat("B must be i8, got ", dtype_name(b)));
  const Shape& bs = c.in_shape(1);
  if (bs.rank_known && bs.rank() != 2) c.fail(str_cat("B must be a [K, N] matrix, got ", bs.str()));
  std::optional<int64_t> channels;
  if (bs.rank_known && bs[1].is_static()) channels = bs[1].value;
  infer_quantized_io(c, quant::matmul_output_shape(c, 0, 1), channels);
}

void qmatmul_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  if (b.dtype() != DType::i8 || b.rank() != 2) c.fail(str_cat("B must be an i8 [K, N] matrix, got ", dtype_name(b.dtype()), dims_str(b.dims())));
  QuantAttrs q = quant_attrs(c.node());
  float x_scale = q.x_scale;
  int32_t x_zp = q.x_zero_point;
  std::vector<int32_t> as(static_cast<size_t>(a.numel()));
  if (a.dtype() == DType::f32) {
    const float* ap = a.data<float>();
    float lo = 0.f, hi = 0.f;
    for (int64_t i = 0; i < a.numel(); ++i) lo = std::min(lo, ap[i]), hi = std::max(hi, ap[i]);
    kernels::int8::DynamicQParams p = kernels::int8::dynamic_qparams(lo, hi);
    x_scale = p.scale, x_zp = p.zero_point;
    for (int64_t i = 0; i < a.numel(); ++i) as[i] = kernels::int8::quantize_dynamic(ap[i], p) - x_zp;
  } else if (a.dtype() == DType::u8 || a.dtype() == DType::i8) {
    quant::QRange r = quant::qrange(c.node(), a.dtype(), "x_zero_point");
    if (x_zp < r.lo || x_zp > r.hi) c.fail(str_cat("x_zero_point ", x_zp, " is outside ", dtype_name(a.dtype()), "'s range"));
    for (int64_t i = 0; i < a.numel(); ++i) as[i] = quant::load_i32(a, i) - x_zp;
  } else {
    c.fail(str_cat("A must be u8, i8 or f32, got ", dtype_name(a.dtype())));
  }
  quant::MatMulGeom geo = quant::matmul_geometry(c.node(), a.dims(), b.dims());
  const int64_t M = geo.M, N = geo.N, K = geo.K, batches = numel_of(geo.batch);
  const int8_t* bp = b.data<int8_t>();
  std::vector<int32_t> acc(static_cast<size_t>(batches * M * N));
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int32_t* ab = as.data() + geo.a_index(bi) * M * K;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += ab[m * K + k] * bp[k * N + n];
        acc[(bi * M + m) * N + n] = s;
      }
  }
  std::vector<float> scales = channel_scales(c, x_scale, c.input(2), N);
  c.set_output(0, quantized_output(c, q, acc, geo.out, scales, N, 1));
}

}  // namespace

OpDef def_QMatMul() {
  return {.name = "QMatMul",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 3,
          .max_inputs = 5,
          .attrs = quant_attr_specs(),
          .infer = infer_qmatmul,
          .cost = [](const CostContext& c) { return quant::cost_matmul(c, 0, 1); },
          .kernel = qmatmul_kernel,
          .doc = "int8 MatMul (u8/i8 or per-run quantized f32 A, symmetric i8 B) with bias, residual, activation, requantization"};
}

}  // namespace kiln::ops

// MatMulInteger (i32 = (a - a_zp) x (b - b_zp)) and QLinearMatMul (the same product,
// requantized: y = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zp)).
// Both broadcast batch dims like MatMul; zero points/scales of a are per tensor or per
// row, those of b per tensor or per column.
#include "quant_util.h"

namespace kiln::ops {
namespace {

void check_q_dtype(const InferContext& c, size_t i, const char* what) {
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

// Integer product of every batch: calls emit(out_batch, acc [M*N]).
template <typename Emit>
void batched_product(const KernelContext& c, const Tensor& a, const Tensor& b, const Tensor* a_zp,
                     const Tensor* b_zp, const quant::MatMulGeom& geo, Emit emit) {
  for (const Tensor* t : {&a, &b})
    if (t->dtype() != DType::u8 && t->dtype() != DType::i8)
      c.fail(str_cat("operands must be u8 or i8, got ", dtype_name(t->dtype())));
  quant::MatZp az = quant::read_mat_zp(c.node(), a_zp, a.dims(), geo, true, a.dtype(), "a_zero_point");
  quant::MatZp bz = quant::read_mat_zp(c.node(), b_zp, b.dims(), geo, false, b.dtype(), "b_zero_point");
  std::vector<int32_t> as, bt, acc(static_cast<size_t>(geo.M * geo.N));
  int64_t batches = numel_of(geo.batch);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t ab = geo.a_index(i), bb = geo.b_index(i);
    quant::shifted_a(a, geo, ab, az, as);
    quant::shifted_bt(b, geo, bb, bz, bt);
    quant::gemm_i32(geo.M, geo.N, geo.K, as.data(), bt.data(), acc.data());
    emit(i, acc);
  }
}

void infer_matmul_integer(InferContext& c) {
  check_q_dtype(c, 0, "A");
  check_q_dtype(c, 1, "B");
  check_zp_infer(c, 2, 0, "a_zero_point");
  check_zp_infer(c, 3, 1, "b_zero_point");
  c.set_output(0, DType::i32, quant::matmul_output_shape(c, 0, 1));
}

void kernel_matmul_integer(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  quant::MatMulGeom geo = quant::matmul_geometry(c.node(), a.dims(), b.dims());
  Tensor& y = c.alloc_output(0, DType::i32, geo.out);
  int32_t* yp = y.data<int32_t>();
  batched_product(c, a, b, c.has_input(2) ? &c.input(2) : nullptr, c.has_input(3) ? &c.input(3) : nullptr, geo,
                  [&](int64_t i, const std::vector<int32_t>& acc) {
                    std::copy(acc.begin(), acc.end(), yp + i * geo.M * geo.N);
                  });
}

// QLinearMatMul inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
void infer_qlinear_matmul(InferContext& c) {
  check_q_dtype(c, 0, "a");
  check_q_dtype(c, 3, "b");
  check_zp_infer(c, 2, 0, "a_zero_point");
  check_zp_infer(c, 5, 3, "b_zero_point");
  DType out = c.in_dtype(7);
  if (out != DType::undefined) quant::qrange(c.node(), out, "y_zero_point");
  c.set_output(0, out, quant::matmul_output_shape(c, 0, 3));
}

void kernel_qlinear_matmul(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(3);
  quant::MatMulGeom geo = quant::matmul_geometry(c.node(), a.dims(), b.dims());
  const Node& n = c.node();
  for (size_t i : {1, 4, 6})
    if (c.input(i).dtype() != DType::f32) c.fail(str_cat("scales must be f32, input ", i, " is ", dtype_name(c.input(i).dtype())));
  quant::Param a_scale = quant::read_param(n, &c.input(1), geo.M, "a_scale", 1.0);
  quant::Param b_scale = quant::read_param(n, &c.input(4), geo.N, "b_scale", 1.0);
  quant::Param y_scale = quant::read_param(n, &c.input(6), 1, "y_scale", 1.0);
  const Tensor& y_zp = c.input(7);
  if (y_zp.numel() != 1) c.fail(str_cat("y_zero_point must have one element, got ", dims_str(y_zp.dims())));
  quant::QRange r = quant::qrange(n, y_zp.dtype(), "y_zero_point");
  int32_t yz = quant::load_i32(y_zp, 0);
  Tensor& y = c.alloc_output(0, y_zp.dtype(), geo.out);
  float ys = static_cast<float>(y_scale.get(0));
  batched_product(c, a, b, &c.input(2), &c.input(5), geo, [&](int64_t i, const std::vector<int32_t>& acc) {
    for (int64_t m = 0; m < geo.M; ++m)
      for (int64_t j = 0; j < geo.N; ++j) {
        float mult = static_cast<float>(a_scale.get(m)) * static_cast<float>(b_scale.get(j)) / ys;
        float v = static_cast<float>(acc[m * geo.N + j]) * mult;
        quant::store_q(y, (i * geo.M + m) * geo.N + j, quant::round_add_saturate(v, yz, r));
      }
  });
}

}  // namespace

OpDef def_MatMulInteger() {
  return {.name = "MatMulInteger",
          .since = 10,
          .min_inputs = 2,
          .max_inputs = 4,
          .infer = infer_matmul_integer,
          .cost = [](const CostContext& c) { return quant::cost_matmul(c, 0, 1); },
          .kernel = kernel_matmul_integer,
          .doc = "i32 matrix product of u8/i8 operands minus their zero points"};
}

OpDef def_QLinearMatMul() {
  return {.name = "QLinearMatMul",
          .since = 10,
          .min_inputs = 8,
          .max_inputs = 8,
          .infer = infer_qlinear_matmul,
          .cost = [](const CostContext& c) { return quant::cost_matmul(c, 0, 3); },
          .kernel = kernel_qlinear_matmul,
          .doc = "quantized matrix product: integer accumulation, then requantized to y_scale/y_zero_point"};
}

}  // namespace kiln::ops

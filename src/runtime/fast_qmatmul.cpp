// kiln.QMatMul on the INT8 GEMM (kernels/int8.h): all rows of A (batch dims flattened) times the
// i8 weight, packed as the cols operand when the step is prepared. A static u8/i8 input is packed
// as the rows operand per run; an f32 input (dynamic quantization) is first reduced to its range,
// quantized to u8 exactly like DynamicQuantizeLinear and packed, and the per-run scale and
// zero-point compensation go into the epilogue. Activations other than Relu/Clip (f32 output)
// are applied after the GEMM by the float kernels' epilogue (their vectorised accuracy).
#include <algorithm>

#include "fast_quantized.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::runtime {
namespace {

struct QMatMulState {
  const kernels::int8::QKernels* k = nullptr;
  int64_t M = 0, N = 0, K = 0;
  bool dynamic = false;
  uint8_t flip = 0;
  std::vector<uint8_t> packed_b;
  std::vector<int32_t> col_sums;
  QuantizedConstants constants;
  QuantizedEpilogue epi;           // static: complete; dynamic: rebuilt per run into the workspace
  size_t rows_bytes = 0;
  kernels::Act post_act = kernels::Act::None;  // applied after the int8 epilogue (f32 output)
  float post_alpha = 0, post_beta = 0;
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  if (!a->shape.is_static() || a->shape.rank() < 1 || !b->shape.is_static() || b->shape.rank() != 2) return false;
  if (a->dtype != DType::u8 && a->dtype != DType::i8 && a->dtype != DType::f32) return false;
  auto st = std::make_shared<QMatMulState>();
  const std::vector<int64_t> ad = a->shape.static_dims(), bd = b->shape.static_dims();
  st->K = bd[0], st->N = bd[1];
  if (ad.back() != st->K) return false;
  st->M = 1;
  for (size_t i = 0; i + 1 < ad.size(); ++i) st->M *= ad[i];
  std::optional<QuantizedConstants> c = quantized_constants(n, st->N);
  if (!c) return false;
  if (const Value* z = n.input(4); z && z->shape != n.outputs[0]->shape) return false;
  ops::QuantAttrs q = ops::quant_attrs(n);
  st->k = &kernels::int8::qkernels_for_signed(c->w->data<int8_t>(), c->w->numel());
  st->constants = *c;
  st->packed_b.resize(kernels::int8::packed_cols_bytes(*st->k, st->K, st->N));
  kernels::int8::pack_cols(*st->k, reinterpret_cast<const uint8_t*>(c->w->data<int8_t>()), st->N, false, st->K, st->N,
                           st->packed_b.data());
  st->col_sums.assign(st->N, 0);
  const int8_t* w = c->w->data<int8_t>();
  for (int64_t kk = 0; kk < st->K; ++kk)
    for (int64_t j = 0; j < st->N; ++j) st->col_sums[j] += w[kk * st->N + j];
  st->dynamic = a->dtype == DType::f32;
  st->flip = a->dtype == DType::i8 ? 0x80 : 0;
  const int32_t zp = q.x_zero_point + (st->flip ? 128 : 0);
  build_epilogue(n, *c, st->col_sums, zp, q.x_scale, st->epi);
  st->epi.e.per_row = false;
  st->epi.e.ldr = st->N;
  if (!q.clamp_only) {
    st->post_act = static_cast<kernels::Act>(q.act.act);
    st->post_alpha = q.act.alpha, st->post_beta = q.act.beta;
  }
  st->rows_bytes = kernels::int8::packed_rows_bytes(*st->k, st->M, st->K);
  int64_t ws = static_cast<int64_t>((st->rows_bytes + 63) / 64 * 64);
  if (st->dynamic) ws += (st->M * st->K + 63) / 64 * 64 + st->N * 8;  // quantized A, per-run bias and scales
  ctx.workspace_bytes = ws;
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const QMatMulState& st = *static_cast<const QMatMulState*>(ctx.state.get());
  const auto& k = *st.k;
  uint8_t* rows = static_cast<uint8_t*>(ctx.workspace);
  kernels::int8::QEpilogue e = st.epi.e;
  const int threads = ctx.threads;
  if (!st.dynamic) {
    kernels::int8::pack_rows(k, static_cast<const uint8_t*>(ctx.in(0).raw()), st.K, st.M, st.K, st.flip, rows);
  } else {
    // Range, parameters and quantization of A, as DynamicQuantizeLinear.
    const float* a = ctx.in(0).data<float>();
    const int64_t total = st.M * st.K;
    const int qt = std::min(64, kernels::threads_for_work(static_cast<double>(total) * 4, threads));
    float part_lo[64], part_hi[64];  // per worker (threads <= 64)
    kernels::parallel_for(qt, qt, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        float lo = 0.f, hi = 0.f;
        for (int64_t i = total * t / qt; i < total * (t + 1) / qt; ++i) lo = std::min(lo, a[i]), hi = std::max(hi, a[i]);
        part_lo[t] = lo, part_hi[t] = hi;
      }
    });
    float lo = 0.f, hi = 0.f;
    for (int t = 0; t < qt; ++t) lo = std::min(lo, part_lo[t]), hi = std::max(hi, part_hi[t]);
    const kernels::int8::DynamicQParams p = kernels::int8::dynamic_qparams(lo, hi);
    uint8_t* aq = rows + (st.rows_bytes + 63) / 64 * 64;
    kernels::parallel_for(st.M, kernels::threads_for_work(static_cast<double>(total), threads), [&](int64_t b, int64_t en) {
      for (int64_t i = b * st.K; i < en * st.K; ++i) aq[i] = static_cast<uint8_t>(kernels::int8::quantize_dynamic(a[i], p));
    });
    kernels::int8::pack_rows(k, aq, st.K, st.M, st.K, 0, rows);
    int32_t* bias = reinterpret_cast<int32_t*>(aq + (total + 63) / 64 * 64);
    float* scale = reinterpret_cast<float*>(bias + st.N);
    for (int64_t j = 0; j < st.N; ++j) {
      const Tensor* b = st.constants.bias;
      bias[j] = (b && b->dtype() == DType::i32 ? b->data<int32_t>()[j] : 0) - p.zero_point * st.col_sums[j];
      scale[j] = p.scale * st.constants.w_scale[j];
    }
    e.bias = bias;
    e.scale = scale;
  }
  if (ctx.inputs.size() > 4 && ctx.inputs[4]) e.residual = ctx.in(4).raw();
  void* y = ctx.out(0).raw();
  kernels::int8::qgemm_packed(k, false, st.M, st.N, st.K, rows, st.packed_b.data(), e, y, st.N, threads);
  if (st.post_act != kernels::Act::None) {
    const kernels::KernelTable& t = kernels::kernel_table();
    kernels::TileEpilogue te;
    te.act = st.post_act;
    te.act_alpha = st.post_alpha, te.act_beta = st.post_beta;
    float* yf = static_cast<float*>(y);
    kernels::parallel_for(st.M, kernels::threads_for_work(static_cast<double>(st.M) * st.N * 8, threads),
                          [&](int64_t b, int64_t en) { t.epilogue_tile(yf + b * st.N, st.N, en - b, st.N, te); });
  }
}

}  // namespace

FastKernel fast_QMatMul() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

// kiln.HalfMatMul: a matrix product whose constant weight [K, N] (or [N, K] with trans_b) is bf16
// or f16 (compress's precision passes). All rows of A form one GEMM.
//   bf16 weight, CPU with AVX512-BF16: the weight packed once into bf16 pairs (cols operand), A
//     rounded to bf16 while it is packed on each run, vdpbf16ps with f32 accumulation.
//   otherwise: the weight widened to f32 once and packed for the f32 GEMM (the honest fallback).
// Bias per output column, residual and activation in the epilogue. Declines (reference runs)
// non-static shapes, biases not per column, residuals not of the output's shape.
#include <vector>

#include "fast_common.h"
#include "kiln/kernels/bf16.h"
#include "kiln/kernels/gemm_packed.h"

namespace kiln::runtime {
namespace {

struct HalfMatMulState {
  const kernels::bf16::BKernels* k = nullptr;  // nullptr: the f32 path
  int64_t M = 0, N = 0, K = 0;
  std::vector<uint32_t> packed_bf16;
  std::vector<float> packed_f32;
  kernels::Epilogue epi;
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* a = n.input(0);
  const Value* w = n.input(1);
  const Value* y = n.outputs[0];
  if (a->dtype != DType::f32 || !a->shape.is_static() || !y->shape.is_static() || a->shape.rank() < 1 ||
      !w->is_constant())
    return false;
  const Tensor& wt = *w->initializer;
  if ((wt.dtype() != DType::bf16 && wt.dtype() != DType::f16) || wt.rank() != 2) return false;
  const bool trans_b = n.attr_i("trans_b", 0) != 0;
  auto st = std::make_shared<HalfMatMulState>();
  st->K = trans_b ? wt.dim(1) : wt.dim(0);
  st->N = trans_b ? wt.dim(0) : wt.dim(1);
  std::vector<int64_t> ad = a->shape.static_dims();
  if (ad.back() != st->K) return false;
  st->M = dims_product(ad, 0, ad.size() - 1);
  if (const Value* bias = n.input(2)) {
    auto bd = bias->shape.static_dims();
    if (dims_product(bd, 0, bd.size()) != st->N || (!bd.empty() && bd.back() != st->N)) return false;
  }
  if (const Value* z = n.input(3); z && z->shape != y->shape) return false;
  st->epi = epilogue_of(n);
  st->k = wt.dtype() == DType::bf16 ? kernels::bf16::runtime_kernels() : nullptr;
  const int64_t ldw = wt.dim(1);
  if (st->k) {
    st->packed_bf16.resize(kernels::bf16::packed_cols_words(*st->k, st->K, st->N));
    kernels::bf16::pack_cols_bf16(*st->k, static_cast<const uint16_t*>(wt.raw()), ldw, trans_b, st->K, st->N,
                                  st->packed_bf16.data());
    ctx.workspace_bytes = static_cast<int64_t>(kernels::bf16::packed_rows_words(*st->k, st->M, st->K) * 4);
  } else {
    Tensor wf = wt.cast(DType::f32);
    st->packed_f32.resize(kernels::packed_b_floats(st->K, st->N));
    kernels::pack_b(wf.data<float>(), ldw, trans_b, st->K, st->N, st->packed_f32.data());
  }
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const HalfMatMulState& st = *static_cast<const HalfMatMulState*>(ctx.state.get());
  kernels::Epilogue epi = st.epi;
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) epi.bias = ctx.in(2).data<float>();
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) epi.residual = ctx.in(3).data<float>(), epi.ldr = st.N;
  if (st.k) {
    auto* rows = static_cast<uint32_t*>(ctx.workspace);
    kernels::bf16::pack_rows_f32(*st.k, ctx.in(0).data<float>(), st.K, st.M, st.K, rows, ctx.threads);
    kernels::bf16::gemm_packed(*st.k, st.M, st.N, st.K, rows, st.packed_bf16.data(), ctx.out(0).data<float>(), st.N, epi,
                               ctx.threads);
  } else {
    kernels::gemm_packed_b(st.M, st.N, st.K, ctx.in(0).data<float>(), st.K, st.packed_f32.data(),
                           ctx.out(0).data<float>(), st.N, epi, ctx.threads);
  }
}

}  // namespace

FastKernel fast_HalfMatMul() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

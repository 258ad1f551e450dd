// kiln.FusedMatMul: with a packed constant weight (the lowering's `packed-b` tactic) one GEMM
// over all rows of A with bias/residual/activation in the tile epilogue; with two activation
// operands (attention scores, unfused) a batched GEMM, parallel over the batch when each
// product is too small to split, followed by the epilogue.
#include "fast_common.h"
#include "kiln/kernels/gemm.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/parallel.h"
#include "kiln/kernels/rows.h"

namespace kiln::runtime {
namespace {

struct MatMulState {
  bool packed = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;      // per product (M = all rows of A when packed)
  int64_t batch = 1;                // products (unpacked)
  bool b_broadcast = false;         // unpacked: one B for every product
  kernels::Epilogue epi;
  bool needs_epilogue = false;      // unpacked: anything beyond alpha
};

int64_t last(const std::vector<int64_t>& d, size_t k) { return d[d.size() - k]; }

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  const Value* y = n.outputs[0];
  if (a->dtype != DType::f32 || !a->shape.is_static() || !y->shape.is_static() || a->shape.rank() < 2) return false;
  auto st = std::make_shared<MatMulState>();
  st->epi = epilogue_of(n);
  std::vector<int64_t> ad = a->shape.static_dims(), yd = y->shape.static_dims();
  st->packed = n.has_attr("packed");
  if (const Value* bias = n.input(2)) {
    // Bias per output column: any shape whose elements all lie along the last dim.
    auto bd = bias->shape.static_dims();
    if (dims_product(bd, 0, bd.size()) != last(yd, 1) || (!bd.empty() && bd.back() != last(yd, 1))) {
      KILN_CHECK(!st->packed, n.describe(), ": packed GEMM needs a bias of ", last(yd, 1), " values per column, got ",
                 bias->shape.str());
      return false;
    }
  }
  if (const Value* z = n.input(3)) {
    if (z->shape != y->shape) {
      KILN_CHECK(!st->packed, n.describe(), ": packed GEMM needs a residual of the output's shape");
      return false;
    }
  }
  if (st->packed) {
    auto w = n.attr_ints("w_shape", {});
    KILN_CHECK(w.size() == 2, n.describe(), ": packed weight without its logical [K, N] shape");
    KILN_CHECK(n.attr_s("isa", "") == kernels::gemm_isa(), n.describe(), ": weight packed for ", n.attr_s("isa", "?"),
               ", but this CPU's micro-kernel is ", kernels::gemm_isa(), "; compile the model again here");
    st->K = w[0], st->N = w[1];
    st->M = dims_product(ad, 0, ad.size() - 1);
    KILN_CHECK(last(ad, 1) == st->K, n.describe(), ": A has ", last(ad, 1), " columns, the packed weight ", st->K, " rows");
  } else {
    if (b->dtype != DType::f32 || !b->shape.is_static() || b->shape.rank() < 2) return false;
    std::vector<int64_t> bd = b->shape.static_dims();
    st->trans_b = n.attr_i("trans_b", 0) != 0;
    st->M = last(ad, 2), st->K = last(ad, 1);
    st->N = st->trans_b ? last(bd, 2) : last(bd, 1);
    int64_t a_batch = dims_product(ad, 0, ad.size() - 2), b_batch = dims_product(bd, 0, bd.size() - 2);
    int64_t y_batch = dims_product(yd, 0, yd.size() - 2);
    // Same batch on both sides (in the same order), or one B for all: other broadcasts run the reference.
    if (a_batch != y_batch || !(b_batch == y_batch || b_batch == 1)) return false;
    if (b_batch == y_batch && b_batch > 1 &&
        !std::equal(bd.begin(), bd.end() - 2, yd.end() - 2 - (bd.size() - 2)))
      return false;
    st->batch = y_batch;
    st->b_broadcast = b_batch == 1;
    st->needs_epilogue = n.input(2) || n.input(3) || st->epi.act != kernels::Act::None;
  }
  ctx.state = st;
  return true;
}

void run_packed(StepContext& ctx, const MatMulState& st) {
  kernels::Epilogue epi = st.epi;
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) epi.bias = ctx.in(2).data<float>();
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) epi.residual = ctx.in(3).data<float>(), epi.ldr = st.N;
  kernels::gemm_packed_b(st.M, st.N, st.K, ctx.in(0).data<float>(), st.K, ctx.in(1).data<float>(),
                         ctx.out(0).data<float>(), st.N, epi, ctx.threads);
}

void run_batched(StepContext& ctx, const MatMulState& st) {
  const float* A = ctx.in(0).data<float>();
  const float* B = ctx.in(1).data<float>();
  float* Y = ctx.out(0).data<float>();
  const int64_t a_step = st.M * st.K, b_step = st.b_broadcast ? 0 : st.K * st.N, y_step = st.M * st.N;
  const int64_t ldb = st.trans_b ? st.K : st.N;
  kernels::Epilogue epi = st.epi;
  epi.alpha = 1.f;  // alpha goes into the GEMM
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) epi.bias = ctx.in(2).data<float>();
  const float* Z = ctx.inputs.size() > 3 && ctx.inputs[3] ? ctx.in(3).data<float>() : nullptr;
  struct Args {
    const MatMulState* st;
    const float *A, *B, *Z;
    float* Y;
    int64_t a_step, b_step, y_step, ldb;
    kernels::Epilogue epi;
    int inner_threads;
  } args{&st, A, B, Z, Y, a_step, b_step, y_step, ldb, epi, 1};
  // Products big enough to split run one after the other on all threads; small ones (attention
  // heads) go one per thread.
  const double macs = static_cast<double>(st.M) * st.N * st.K;
  const bool per_product_threads = st.batch == 1 || macs >= 128.0 * 128 * 128;
  args.inner_threads = per_product_threads ? ctx.threads : 1;
  auto body = [&args](int64_t b0, int64_t b1) {
    const MatMulState& s = *args.st;
    for (int64_t b = b0; b < b1; ++b) {
      float* y = args.Y + b * args.y_step;
      kernels::sgemm(false, s.trans_b, s.M, s.N, s.K, s.epi.alpha, args.A + b * args.a_step, s.K,
                     args.B + b * args.b_step, args.ldb, 0.f, y, s.N, args.inner_threads);
      if (s.needs_epilogue) {
        kernels::Epilogue e = args.epi;
        if (args.Z) e.residual = args.Z + b * args.y_step, e.ldr = s.N;
        kernels::apply_epilogue(y, s.N, s.M, s.N, e, args.inner_threads);
      }
    }
  };
  if (per_product_threads) body(0, st.batch);
  else kernels::parallel_for(st.batch, kernels::threads_for_work(macs * st.batch, ctx.threads), body);
}

void run(StepContext& ctx) {
  const MatMulState& st = *static_cast<const MatMulState*>(ctx.state.get());
  if (st.packed) run_packed(ctx, st);
  else run_batched(ctx, st);
}

// A packed one-row product (gemm_packed_b's GEMV) reads each weight once for one FMA lane: the
// weights are what it waits for.
const void* cold_weights(const StepContext& ctx, int64_t& bytes) {
  const MatMulState& st = *static_cast<const MatMulState*>(ctx.state.get());
  bytes = 0;
  if (!st.packed || st.M != 1 || ctx.inputs.size() < 2 || !ctx.inputs[1]) return nullptr;
  bytes = static_cast<int64_t>(ctx.in(1).nbytes());
  return ctx.in(1).raw();
}

}  // namespace

FastKernel fast_FusedMatMul() {
  FastKernel k{prepare, run};
  k.cold_weights = cold_weights;
  return k;
}

}  // namespace kiln::runtime

// kiln.LayerNorm over the last axis (what transformers use) with the vectorised row kernel;
// other axes run the reference kernel.
#include "fast_common.h"
#include "kiln/kernels/rows.h"

namespace kiln::runtime {
namespace {

struct LnState {
  int64_t rows = 0, n = 0;
  float eps = 1e-5f;
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  if (!x || x->dtype != DType::f32 || !x->shape.is_static() || x->shape.rank() == 0) return false;
  auto d = x->shape.static_dims();
  int64_t axis = n.attr_i("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  if (axis != static_cast<int64_t>(d.size()) - 1) return false;
  auto st = std::make_shared<LnState>();
  st->n = d.back();
  st->rows = dims_product(d, 0, d.size() - 1);
  st->eps = n.attr_f("epsilon", 1e-5f);
  for (size_t i = 1; i < 3; ++i)
    if (const Value* p = n.input(i))
      if (p->dtype != DType::f32 || !p->shape.is_static() || p->shape.static_dims() != std::vector<int64_t>{st->n})
        return false;  // scale/bias that broadcast otherwise: reference
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const LnState& st = *static_cast<const LnState*>(ctx.state.get());
  const float* bias = ctx.inputs.size() > 2 && ctx.inputs[2] ? ctx.in(2).data<float>() : nullptr;
  kernels::layer_norm_rows(ctx.in(0).data<float>(), st.n, ctx.in(1).data<float>(), bias, st.eps,
                           ctx.out(0).data<float>(), st.n, st.rows, st.n, ctx.threads);
}

}  // namespace

FastKernel fast_LayerNorm() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

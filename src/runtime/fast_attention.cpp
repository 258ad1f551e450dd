// kiln.Attention through the tiled online-softmax kernel (kernels/rows.h): the Sq x Sk scores
// are never materialised. The additive mask broadcasts over [B, H, Sq, Sk] by strides, and Q, K,
// V and Y may be strided views of other tensors (q_view..y_view, kiln_ops.h).
#include <array>

#include "fast_common.h"
#include "kiln/kernels/rows.h"
#include "kiln/ops/kiln_ops.h"

namespace kiln::runtime {
namespace {

struct AttnState {
  kernels::AttentionArgs args;  // shapes, strides, scale, causal, mask strides; pointers bound per run
  std::array<int64_t, 3> offsets{};  // where the views of Q, K and V start in their tensors
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  for (size_t i = 0; i < 3; ++i) {
    const Value* v = n.input(i);
    if (!v || v->dtype != DType::f32 || !v->shape.is_static()) return false;
    if (v->shape.rank() != 4 && !ops::attention_has_view(n, i)) return false;
  }
  const Value* out = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!out || !out->shape.is_static()) return false;
  // Each operand as a [B,H,S,D] view (kiln_ops.h): its tensor itself, or a view into a wider one.
  ops::AttentionView view[4];
  for (size_t i = 0; i < 3; ++i) view[i] = ops::attention_view(n, i, n.input(i)->shape.static_dims());
  view[3] = ops::attention_view(n, 3, out->shape.static_dims());
  const int64_t *q = view[0].dims, *k = view[1].dims, *v = view[2].dims;
  // Batch and head dims must match exactly (broadcast K/V, e.g. grouped heads, run the reference).
  if (q[0] != k[0] || q[1] != k[1] || k[0] != v[0] || k[1] != v[1] || k[2] != v[2] || q[3] != k[3]) return false;
  auto st = std::make_shared<AttnState>();
  kernels::AttentionArgs& a = st->args;
  a.B = q[0], a.H = q[1], a.Sq = q[2], a.Sk = k[2], a.D = q[3], a.Dv = v[3];
  for (int d = 0; d < 3; ++d) {
    a.q_strides[d] = view[0].strides[d], a.k_strides[d] = view[1].strides[d];
    a.v_strides[d] = view[2].strides[d], a.y_strides[d] = view[3].strides[d];
  }
  st->offsets = {view[0].offset, view[1].offset, view[2].offset};
  a.scale = n.attr_f("scale", 1.f);
  a.causal = n.attr_i("causal", 0) != 0;
  if (const Value* m = n.input(3)) {
    if (m->dtype != DType::f32 || !m->shape.is_static() || m->shape.rank() > 4) return false;
    auto md = m->shape.static_dims();
    const int64_t full[4] = {a.B, a.H, a.Sq, a.Sk};
    // Right-aligned broadcast: a dim of 1 (or a missing leading dim) gets stride 0.
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      int mi = i - (4 - static_cast<int>(md.size()));
      int64_t size = mi >= 0 ? md[mi] : 1;
      if (size != 1 && size != full[i]) return false;
      a.mask_strides[i] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const AttnState& st = *static_cast<const AttnState*>(ctx.state.get());
  kernels::AttentionArgs a = st.args;
  a.q = ctx.in(0).data<float>() + st.offsets[0];
  a.k = ctx.in(1).data<float>() + st.offsets[1];
  a.v = ctx.in(2).data<float>() + st.offsets[2];
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) a.mask = ctx.in(3).data<float>();
  a.y = ctx.out(0).data<float>();
  kernels::attention(a, ctx.threads);
}

}  // namespace

FastKernel fast_Attention() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

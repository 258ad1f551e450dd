// LSTM with constant weights (Silero VAD's decoder, one step a frame): per direction, W and R
// side by side as one weight [input + hidden, 4·hidden] packed once per shape for the packed-B
// GEMM, the two biases summed into its epilogue; each step is one GEMM of [x_t, h] (a row per
// batch entry) and the gates through the vectorised sigmoid and tanh of the row kernels. The
// reference kernel ran two unpacked GEMMs a step over weights transposed on the fly and scalar
// std::exp / std::tanh (0.028 ms of Silero VAD v5's 0.078).
//
// Declines (the reference kernel runs it, with its messages) anything but the common form: f32,
// static shapes, constant W / R / B, the default activations (sigmoid, tanh, tanh), no clip, no
// input_forget, no peepholes, no sequence_lens. Numerics: the same sums in another order and the
// row kernels' sigmoid / tanh (<= 2 ulp, docs/kernels.md) instead of std's.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/rows.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct LstmState {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false;  // direction "reverse"
  std::vector<std::vector<float>> packed, bias;  // per direction
  // Per-run scratch, sized here so that a run allocates nothing: [x_t, h] rows, gates, c, tanh(c).
  std::vector<float> xh, gates, c, tc;
};

const Tensor* constant_f32(const Value* v) {
  return v && v->initializer && v->initializer->dtype() == DType::f32 ? &*v->initializer : nullptr;
}

bool default_activations(const Node& n, int64_t dirs) {
  const Attribute* a = n.find_attr("activations");
  if (!a) return true;
  const std::vector<std::string>& names = a->strings();
  if (static_cast<int64_t>(names.size()) != 3 * dirs) return false;
  for (int64_t d = 0; d < dirs; ++d)
    if (names[3 * d] != "Sigmoid" || names[3 * d + 1] != "Tanh" || names[3 * d + 2] != "Tanh") return false;
  return true;
}

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Tensor* w = constant_f32(n.input(1));
  const Tensor* r = constant_f32(n.input(2));
  if (!x || x->dtype != DType::f32 || !x->shape.is_static() || x->shape.rank() != 3 || !w || !r) return false;
  if (n.input(3) && !constant_f32(n.input(3))) return false;
  if (n.input(4) || n.input(7) || n.attr_i("layout", 0) != 0 || n.attr_i("input_forget", 0) != 0 ||
      n.has_attr("clip"))
    return false;
  for (size_t i : {size_t{5}, size_t{6}})
    if (const Value* v = n.input(i); v && (v->dtype != DType::f32 || !v->shape.is_static())) return false;
  for (const Value* o : n.outputs)
    if (o && (o->dtype != DType::f32 || !o->shape.is_static())) return false;
  const std::string dir = n.attr_s("direction", "forward");
  auto st = std::make_shared<LstmState>();
  st->dirs = dir == "bidirectional" ? 2 : 1;
  st->reverse_only = dir == "reverse";
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return false;
  if (!default_activations(n, st->dirs)) return false;
  const std::vector<int64_t> xd = x->shape.static_dims();
  st->seq = xd[0], st->batch = xd[1], st->input = xd[2];
  if (r->rank() != 3) return false;
  st->hidden = n.attr_i("hidden_size", r->dim(2));
  const int64_t I = st->input, H = st->hidden, G = 4 * H, K = I + H;
  if (w->dims() != std::vector<int64_t>{st->dirs, G, I} || r->dims() != std::vector<int64_t>{st->dirs, G, H}) return false;
  const Tensor* b = constant_f32(n.input(3));
  if (b && b->dims() != std::vector<int64_t>{st->dirs, 2 * G}) return false;
  for (size_t i : {size_t{5}, size_t{6}})
    if (const Value* v = n.input(i); v && v->shape.static_dims() != std::vector<int64_t>{st->dirs, st->batch, H})
      return false;
  std::vector<float> wr(static_cast<size_t>(G * K));
  for (int64_t d = 0; d < st->dirs; ++d) {
    // Row j of [W | R]: gate unit j's weights over [x_t, h].
    for (int64_t j = 0; j < G; ++j) {
      std::memcpy(&wr[j * K], w->data<float>() + (d * G + j) * I, sizeof(float) * I);
      std::memcpy(&wr[j * K + I], r->data<float>() + (d * G + j) * H, sizeof(float) * H);
    }
    st->packed.emplace_back(kernels::packed_b_floats(K, G));
    kernels::pack_b(wr.data(), K, /*trans_b=*/true, K, G, st->packed.back().data());
    std::vector<float> bias(G, 0.f);
    if (b)
      for (int64_t j = 0; j < G; ++j) bias[j] = b->data<float>()[d * 2 * G + j] + b->data<float>()[d * 2 * G + G + j];
    st->bias.push_back(std::move(bias));
  }
  st->xh.resize(st->batch * K);
  st->gates.resize(st->batch * G);
  st->c.resize(st->batch * H);
  st->tc.resize(st->batch * H);
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  auto& s = *static_cast<LstmState*>(ctx.state.get());
  const Node& n = *ctx.node;
  const int64_t I = s.input, H = s.hidden, G = 4 * H, K = I + H, B = s.batch;
  const float* x = ctx.in(0).data<float>();
  const Tensor* h0 = n.input(5) ? ctx.inputs[5] : nullptr;
  const Tensor* c0 = n.input(6) ? ctx.inputs[6] : nullptr;
  float* y = n.outputs.size() > 0 && n.outputs[0] ? ctx.out(0).data<float>() : nullptr;
  float* yh = n.outputs.size() > 1 && n.outputs[1] ? ctx.out(1).data<float>() : nullptr;
  float* yc = n.outputs.size() > 2 && n.outputs[2] ? ctx.out(2).data<float>() : nullptr;
  kernels::Epilogue sigmoid, tanh_act;
  sigmoid.act = kernels::Act::Sigmoid;
  tanh_act.act = kernels::Act::Tanh;
  for (int64_t d = 0; d < s.dirs; ++d) {
    const bool reverse = s.reverse_only || d == 1;
    // h lives in the [x_t, h] rows between steps; c in s.c.
    for (int64_t b = 0; b < B; ++b) {
      float* hrow = &s.xh[b * K + I];
      if (h0) std::memcpy(hrow, h0->data<float>() + (d * B + b) * H, sizeof(float) * H);
      else std::fill(hrow, hrow + H, 0.f);
    }
    if (c0) std::memcpy(s.c.data(), c0->data<float>() + d * B * H, sizeof(float) * B * H);
    else std::fill(s.c.begin(), s.c.end(), 0.f);
    kernels::Epilogue epi;
    epi.bias = s.bias[d].data();
    for (int64_t step = 0; step < s.seq; ++step) {
      const int64_t t = reverse ? s.seq - 1 - step : step;
      for (int64_t b = 0; b < B; ++b) std::memcpy(&s.xh[b * K], x + (t * B + b) * I, sizeof(float) * I);
      kernels::gemm_packed_b(B, G, K, s.xh.data(), K, s.packed[d].data(), s.gates.data(), G, epi, ctx.threads);
      // Gates i, o, f through the sigmoid, the candidate through tanh (ONNX order i, o, f, c).
      kernels::apply_epilogue(s.gates.data(), G, B, 3 * H, sigmoid, 1);
      kernels::apply_epilogue(s.gates.data() + 3 * H, G, B, H, tanh_act, 1);
      for (int64_t b = 0; b < B; ++b) {
        const float* g = &s.gates[b * G];
        float* c = &s.c[b * H];
        for (int64_t j = 0; j < H; ++j) c[j] = g[2 * H + j] * c[j] + g[j] * g[3 * H + j];
      }
      std::memcpy(s.tc.data(), s.c.data(), sizeof(float) * B * H);
      kernels::apply_epilogue(s.tc.data(), H, B, H, tanh_act, 1);
      for (int64_t b = 0; b < B; ++b) {
        const float* o = &s.gates[b * G + H];
        const float* tc = &s.tc[b * H];
        float* h = &s.xh[b * K + I];
        for (int64_t j = 0; j < H; ++j) h[j] = o[j] * tc[j];
        if (y) std::memcpy(y + ((t * s.dirs + d) * B + b) * H, h, sizeof(float) * H);
      }
    }
    for (int64_t b = 0; b < B; ++b)
      if (yh) std::memcpy(yh + (d * B + b) * H, &s.xh[b * K + I], sizeof(float) * H);
    if (yc) std::memcpy(yc + d * B * H, s.c.data(), sizeof(float) * B * H);
  }
}

}  // namespace

FastKernel fast_Lstm() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

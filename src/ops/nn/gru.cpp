// GRU. Gates z (update), r (reset), h (candidate), in that order in W, R and B:
//   z = f(X Wz + H Rz + Wbz + Rbz),  r = f(X Wr + H Rr + Wbr + Rbr)
//   h~ = g(X Wh + (r . H) Rh + Rbh + Wbh)            linear_before_reset = 0
//   h~ = g(X Wh + r . (H Rh + Rbh) + Wbh)            linear_before_reset = 1
//   H' = (1 - z) . h~ + z . H
#include "kiln/kernels/gemm.h"
#include "recurrent.h"

namespace kiln::ops {
namespace {

void gru_kernel(KernelContext& c) {
  nn::RecurrentSetup s = nn::setup_recurrent(c, 3);
  auto act = nn::read_activations(c.node(), s.dirs, {"Sigmoid", "Tanh"});
  bool lbr = c.node().attr_i("linear_before_reset", 0) != 0;
  int64_t H = s.hidden, Bt = s.batch, G = 3 * H;
  Tensor Y(DType::f32, {s.seq, s.dirs, Bt, H}), Yh(DType::f32, {s.dirs, Bt, H});
  for (int64_t d = 0; d < s.dirs; ++d) {
    const nn::Activation &f = act[2 * d], &g = act[2 * d + 1];
    const float* R = s.R.data<float>() + d * G * H;
    const float* Rbh = s.B.data<float>() + d * 2 * G + G + 2 * H;
    std::vector<float> xw = s.xw(d, c.threads());
    // xw holds Wb + Rb for every gate; the h gate's Rb must sit inside r . (...) when
    // linear_before_reset, so take it out of xw there.
    if (lbr)
      for (int64_t r = 0; r < s.seq * Bt; ++r)
        for (int64_t j = 0; j < H; ++j) xw[r * G + 2 * H + j] -= Rbh[j];
    std::vector<float> h(s.init_h.data<float>() + d * Bt * H, s.init_h.data<float>() + (d + 1) * Bt * H);
    std::vector<float> hr(Bt * G), rh(Bt * H), z(Bt * H), hh(Bt * H);
    for (int64_t step = 0; step < s.seq; ++step) {
      // z and r (and with lbr the h gate) from H R^T.
      int64_t cols = lbr ? G : 2 * H;
      kernels::sgemm(false, true, Bt, cols, H, 1.f, h.data(), H, R, H, 0.f, hr.data(), G, c.threads());
      for (int64_t b = 0; b < Bt; ++b) {
        int64_t t = s.time_of(d, step, b);
        if (t < 0) continue;
        const float* x = &xw[(t * Bt + b) * G];
        for (int64_t j = 0; j < H; ++j) {
          z[b * H + j] = f(nn::clip_to(x[j] + hr[b * G + j], s.clip));
          float r = f(nn::clip_to(x[H + j] + hr[b * G + H + j], s.clip));
          if (lbr) hh[b * H + j] = x[2 * H + j] + r * (hr[b * G + 2 * H + j] + Rbh[j]);
          else rh[b * H + j] = r * h[b * H + j];
        }
      }
      if (!lbr) {
        // (r . H) Rh^T, then add the x part (which already holds Wbh + Rbh).
        kernels::sgemm(false, true, Bt, H, H, 1.f, rh.data(), H, R + 2 * H * H, H, 0.f, hh.data(), H, c.threads());
        for (int64_t b = 0; b < Bt; ++b) {
          int64_t t = s.time_of(d, step, b);
          if (t < 0) continue;
          for (int64_t j = 0; j < H; ++j) hh[b * H + j] += xw[(t * Bt + b) * G + 2 * H + j];
        }
      }
      for (int64_t b = 0; b < Bt; ++b) {
        int64_t t = s.time_of(d, step, b);
        if (t < 0) continue;
        for (int64_t j = 0; j < H; ++j) {
          float cand = g(nn::clip_to(hh[b * H + j], s.clip)), zz = z[b * H + j];
          float v = (1.f - zz) * cand + zz * h[b * H + j];
          h[b * H + j] = v;
          Y.data<float>()[((t * s.dirs + d) * Bt + b) * H + j] = v;
        }
      }
    }
    std::copy(h.begin(), h.end(), Yh.data<float>() + d * Bt * H);
  }
  if (c.has_output(0)) nn::set_result(c, 0, Y.cast(s.dtype), s.dtype);
  if (c.has_output(1)) nn::set_result(c, 1, Yh.cast(s.dtype), s.dtype);
}

}  // namespace

OpDef def_GRU() {
  return {.name = "GRU",
          .since = 1,
          .min_inputs = 3,
          .max_inputs = 6,
          .min_outputs = 0,
          .max_outputs = 2,
          .attrs = nn::recurrent_attrs({{"linear_before_reset", AttrKind::Int}}),
          .infer = [](InferContext& c) { nn::infer_recurrent(c, 3); },
          .cost = [](const CostContext& c) { return nn::cost_recurrent(c, 3); },
          .kernel = gru_kernel,
          .doc = "gated recurrent unit over a sequence; outputs all hidden states Y and the last Y_h"};
}

}  // namespace kiln::ops

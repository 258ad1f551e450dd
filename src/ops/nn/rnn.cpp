// RNN (simple recurrent layer): H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb), f = Tanh by default.
#include "kiln/kernels/gemm.h"
#include "recurrent.h"

namespace kiln::ops {
namespace {

void rnn_kernel(KernelContext& c) {
  nn::RecurrentSetup s = nn::setup_recurrent(c, 1);
  auto act = nn::read_activations(c.node(), s.dirs, {"Tanh"});
  int64_t H = s.hidden, Bt = s.batch;
  Tensor Y(DType::f32, {s.seq, s.dirs, Bt, H}), Yh(DType::f32, {s.dirs, Bt, H});
  for (int64_t d = 0; d < s.dirs; ++d) {
    std::vector<float> xw = s.xw(d, c.threads());
    std::vector<float> h(s.init_h.data<float>() + d * Bt * H, s.init_h.data<float>() + (d + 1) * Bt * H);
    std::vector<float> hr(Bt * H);
    for (int64_t step = 0; step < s.seq; ++step) {
      kernels::sgemm(false, true, Bt, H, H, 1.f, h.data(), H, s.R.data<float>() + d * H * H, H, 0.f, hr.data(), H,
                     c.threads());
      for (int64_t b = 0; b < Bt; ++b) {
        int64_t t = s.time_of(d, step, b);
        if (t < 0) continue;
        for (int64_t j = 0; j < H; ++j) {
          float v = act[d](nn::clip_to(xw[(t * Bt + b) * H + j] + hr[b * H + j], s.clip));
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

OpDef def_RNN() {
  return {.name = "RNN",
          .since = 1,
          .min_inputs = 3,
          .max_inputs = 6,
          .min_outputs = 0,
          .max_outputs = 2,
          .attrs = nn::recurrent_attrs(),
          .infer = [](InferContext& c) { nn::infer_recurrent(c, 1); },
          .cost = [](const CostContext& c) { return nn::cost_recurrent(c, 1); },
          .kernel = rnn_kernel,
          .doc = "simple recurrent layer over a sequence; outputs all hidden states Y and the last Y_h"};
}

}  // namespace kiln::ops

// LSTM. Gates i (input), o (output), f (forget), c (cell), in that order in W, R and B;
// peepholes P = [Pi, Po, Pf]:
//   i = f(X Wi + H Ri + Pi . C + Wbi + Rbi)     f_ = f(X Wf + H Rf + Pf . C + Wbf + Rbf)
//   c~ = g(X Wc + H Rc + Wbc + Rbc)             C' = f_ . C + i . c~
//   o = f(X Wo + H Ro + Po . C' + Wbo + Rbo)    H' = o . h(C')
// input_forget couples the gates: f_ = 1 - i.
#include "kiln/kernels/gemm.h"
#include "recurrent.h"

namespace kiln::ops {
namespace {

void lstm_kernel(KernelContext& c) {
  const Node& n = c.node();
  nn::RecurrentSetup s = nn::setup_recurrent(c, 4);
  auto act = nn::read_activations(n, s.dirs, {"Sigmoid", "Tanh", "Tanh"});
  bool couple = n.attr_i("input_forget", 0) != 0;
  int64_t H = s.hidden, Bt = s.batch, G = 4 * H;
  auto f32 = [](const Tensor& t) { return t.dtype() == DType::f32 ? t : t.cast(DType::f32); };
  Tensor C0(DType::f32, {s.dirs, Bt, H}), P(DType::f32, {s.dirs, 3 * H});
  if (c.has_input(6)) {
    C0 = f32(c.input(6));
    KILN_CHECK(C0.dims() == std::vector<int64_t>({s.dirs, Bt, H}), n.describe(), ": initial_c ",
               dims_str(C0.dims()), " must be [", s.dirs, ",", Bt, ",", H, "]");
  }
  if (c.has_input(7)) {
    P = f32(c.input(7));
    KILN_CHECK(P.dims() == std::vector<int64_t>({s.dirs, 3 * H}), n.describe(), ": P ", dims_str(P.dims()),
               " must be [", s.dirs, ",", 3 * H, "]");
  }
  Tensor Y(DType::f32, {s.seq, s.dirs, Bt, H}), Yh(DType::f32, {s.dirs, Bt, H}), Yc(DType::f32, {s.dirs, Bt, H});
  for (int64_t d = 0; d < s.dirs; ++d) {
    const nn::Activation &fa = act[3 * d], &ga = act[3 * d + 1], &ha = act[3 * d + 2];
    const float* pi = P.data<float>() + d * 3 * H;
    const float *po = pi + H, *pf = pi + 2 * H;
    std::vector<float> xw = s.xw(d, c.threads());
    std::vector<float> h(s.init_h.data<float>() + d * Bt * H, s.init_h.data<float>() + (d + 1) * Bt * H);
    std::vector<float> cs(C0.data<float>() + d * Bt * H, C0.data<float>() + (d + 1) * Bt * H);
    std::vector<float> hr(Bt * G);
    for (int64_t step = 0; step < s.seq; ++step) {
      kernels::sgemm(false, true, Bt, G, H, 1.f, h.data(), H, s.R.data<float>() + d * G * H, H, 0.f, hr.data(), G,
                     c.threads());
      for (int64_t b = 0; b < Bt; ++b) {
        int64_t t = s.time_of(d, step, b);
        if (t < 0) continue;
        const float* x = &xw[(t * Bt + b) * G];
        const float* r = &hr[b * G];
        for (int64_t j = 0; j < H; ++j) {
          float cprev = cs[b * H + j];
          float ig = fa(nn::clip_to(x[j] + r[j] + pi[j] * cprev, s.clip));
          float fg = couple ? 1.f - ig : fa(nn::clip_to(x[2 * H + j] + r[2 * H + j] + pf[j] * cprev, s.clip));
          float cand = ga(nn::clip_to(x[3 * H + j] + r[3 * H + j], s.clip));
          float cnew = fg * cprev + ig * cand;
          float og = fa(nn::clip_to(x[H + j] + r[H + j] + po[j] * cnew, s.clip));
          float hnew = og * ha(cnew);
          cs[b * H + j] = cnew;
          h[b * H + j] = hnew;
          Y.data<float>()[((t * s.dirs + d) * Bt + b) * H + j] = hnew;
        }
      }
    }
    std::copy(h.begin(), h.end(), Yh.data<float>() + d * Bt * H);
    std::copy(cs.begin(), cs.end(), Yc.data<float>() + d * Bt * H);
  }
  if (c.has_output(0)) nn::set_result(c, 0, Y.cast(s.dtype), s.dtype);
  if (c.has_output(1)) nn::set_result(c, 1, Yh.cast(s.dtype), s.dtype);
  if (c.has_output(2)) nn::set_result(c, 2, Yc.cast(s.dtype), s.dtype);
}

}  // namespace

OpDef def_LSTM() {
  return {.name = "LSTM",
          .since = 1,
          .min_inputs = 3,
          .max_inputs = 8,
          .min_outputs = 0,
          .max_outputs = 3,
          .attrs = nn::recurrent_attrs({{"input_forget", AttrKind::Int}}),
          .infer = [](InferContext& c) { nn::infer_recurrent(c, 4); },
          .cost = [](const CostContext& c) { return nn::cost_recurrent(c, 4); },
          .kernel = lstm_kernel,
          .doc = "long short-term memory layer over a sequence; outputs Y, last Y_h and last cell Y_c"};
}

}  // namespace kiln::ops

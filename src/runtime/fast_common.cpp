#include "fast_common.h"

namespace kiln::runtime {

// kernels::Act mirrors ops::Activation value for value (kernels depend on nothing of ours).
static_assert(static_cast<int>(kernels::Act::GeluTanh) == static_cast<int>(ops::Activation::GeluTanh));
static_assert(static_cast<int>(kernels::Act::Clip) == static_cast<int>(ops::Activation::Clip));

kernels::Epilogue epilogue_of(const Node& n) {
  kernels::Epilogue e;
  e.alpha = n.attr_f("alpha", 1.f);
  ops::ActivationSpec a = ops::activation_of(n);
  e.act = static_cast<kernels::Act>(a.act);
  e.act_alpha = a.alpha;
  e.act_beta = a.beta;
  return e;
}

kernels::ConvTactic conv_tactic_of(const Node& n) {
  std::string t = n.attr_s("tactic", "");
  for (auto c : {kernels::ConvTactic::Gemm, kernels::ConvTactic::Pointwise, kernels::ConvTactic::Depthwise,
                 kernels::ConvTactic::PixelGemm, kernels::ConvTactic::Direct})
    if (t == kernels::conv_tactic_name(c)) return c;
  throw Error(str_cat(n.describe(), ": unknown convolution tactic '", t, "'"));
}

void check_channel_means_output(const Node& n) {
  const Value* m = n.outputs.size() > 1 ? n.outputs[1] : nullptr;
  if (!m) return;
  const Shape& y = n.outputs[0]->shape;
  KILN_CHECK(m->dtype == DType::f32 && y.is_static() && m->shape.is_static() && m->shape.rank() == 4 &&
                 m->shape[0] == y[0] && m->shape[1] == y[1] && m->shape[2].value == 1 && m->shape[3].value == 1,
             n.describe(), ": the averages ", m->shape.str(), " must be f32 [N, K, 1, 1] of the output ", y.str());
}

int64_t dims_product(const std::vector<int64_t>& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < d.size(); ++i) p *= d[i];
  return p;
}

}  // namespace kiln::runtime

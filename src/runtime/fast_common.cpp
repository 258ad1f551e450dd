#include "fast_common.h"

#include "kiln/ir/error.h"
#include "kiln/kernels/gemm_packed.h"

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

std::vector<int64_t> banded_conv_input_dims(const Node& n, const char* what) {
  KILN_CHECK(n.has_attr("packed"), n.describe(), ": the ", what, " node needs the lowering's packed weights");
  KILN_CHECK(n.attr_s("isa", "") == kernels::gemm_isa(), n.describe(), ": weights packed for ", n.attr_s("isa", "?"),
             ", but this CPU's micro-kernel is ", kernels::gemm_isa(), "; compile the model again here");
  const Value* x = n.input(0);
  KILN_CHECK(x && x->dtype == DType::f32 && x->shape.is_static() && x->shape.rank() == 4, n.describe(),
             ": needs a static f32 NCHW input, got ", x ? dtype_name(x->dtype) : "nothing",
             x ? x->shape.str() : std::string());
  return x->shape.static_dims();
}

void depthwise_project_epilogues(const Node& n, size_t z_input, kernels::Epilogue& depthwise,
                                 kernels::Epilogue& project) {
  if (const Value* z = n.input(z_input))
    KILN_CHECK(z->shape == n.outputs[0]->shape, n.describe(), ": residual ", z->shape.str(),
               " must have the output's shape ", n.outputs[0]->shape.str());
  depthwise = epilogue_of(ops::depthwise_half(n));
  depthwise.bias_per_row = true;
  project = epilogue_of(n);
  project.bias_per_row = true;
}

int64_t dims_product(const std::vector<int64_t>& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < d.size(); ++i) p *= d[i];
  return p;
}

}  // namespace kiln::runtime

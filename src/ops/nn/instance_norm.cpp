// InstanceNormalization: y = scale[c] * (x - mean) / sqrt(var + eps) + B[c], with mean and
// (population) variance taken over the spatial dims of each (image, channel).
#include <cmath>

#include "kiln/kernels/parallel.h"
#include "nn_common.h"

namespace kiln::ops {
namespace {

void infer_instance_norm(InferContext& c) {
  const Shape& x = c.in_shape(0);
  if (x.rank_known && x.rank() < 3) c.fail(str_cat("input must have rank >= 3, got ", x.str()));
  for (size_t i = 1; i < 3; ++i) {
    const Shape& p = c.in_shape(i);
    if (x.rank_known && p.rank_known &&
        (p.rank() != 1 || (p[0].is_static() && x[1].is_static() && p[0].value != x[1].value)))
      c.fail(str_cat("channel mismatch: input ", i, " has shape ", p.str(), ", X has ", x[1].str(), " channels"));
  }
  c.set_output(0, c.in_dtype(0), x);
}

void instance_norm_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  KILN_CHECK(X.rank() >= 3, n.describe(), ": input ", dims_str(X.dims()), " must have rank >= 3");
  int64_t N = X.dim(0), C = X.dim(1), S = N * C == 0 ? 0 : X.numel() / (N * C);
  const Tensor &scale = c.input(1), &bias = c.input(2);
  KILN_CHECK(scale.numel() == C && bias.numel() == C, n.describe(), ": channel mismatch: scale ",
             dims_str(scale.dims()), " and B ", dims_str(bias.dims()), " must have ", C, " values");
  double eps = n.attr_f("epsilon", 1e-5f);
  Tensor Y(X.dtype(), X.dims());
  KILN_DISPATCH_FLOAT(X.dtype(), n.describe(), {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    kernels::parallel_for(N * C, c.threads(), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = x + p * S;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < S; ++i) mean += xp[i];
        mean /= static_cast<double>(S);
        for (int64_t i = 0; i < S; ++i) var += (xp[i] - mean) * (xp[i] - mean);
        var /= static_cast<double>(S);
        double a = scale.as_double(p % C) / std::sqrt(var + eps), sh = bias.as_double(p % C) - mean * a;
        for (int64_t i = 0; i < S; ++i) y[p * S + i] = static_cast<T>(xp[i] * a + sh);
      }
    });
  });
  nn::set_result(c, 0, Y, dt);
}

}  // namespace

OpDef def_InstanceNormalization() {
  return {.name = "InstanceNormalization",
          .since = 1,
          .min_inputs = 3,
          .max_inputs = 3,
          .attrs = {{"epsilon", AttrKind::Float}},
          .infer = infer_instance_norm,
          .cost = nn::cost_per_input<5>,
          .kernel = instance_norm_kernel,
          .doc = "normalises each (image, channel) over its spatial dims, then per-channel scale and shift"};
}

}  // namespace kiln::ops

// LRN (local response normalisation across channels):
// y = x / (bias + alpha / size * sum of x^2 over the `size` neighbouring channels)^beta,
// the window spanning floor((size-1)/2) channels before and ceil((size-1)/2) after.
#include <algorithm>
#include <cmath>

#include "nn_common.h"

namespace kiln::ops {
namespace {

void infer_lrn(InferContext& c) {
  const Shape& x = c.in_shape(0);
  if (x.rank_known && x.rank() < 3) c.fail(str_cat("input must have rank >= 3, got ", x.str()));
  if (c.node().attr_i("size", 0) < 1) c.fail("attribute 'size' must be >= 1");
  c.set_output(0, c.in_dtype(0), x);
}

void lrn_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  KILN_CHECK(X.rank() >= 3, n.describe(), ": input ", dims_str(X.dims()), " must have rank >= 3");
  int64_t size = n.attr_i("size", 0);
  KILN_CHECK(size >= 1, n.describe(), ": attribute 'size' must be >= 1");
  double alpha = n.attr_f("alpha", 1e-4f), beta = n.attr_f("beta", 0.75f), bias = n.attr_f("bias", 1.0f);
  int64_t N = X.dim(0), C = X.dim(1), S = N * C == 0 ? 0 : X.numel() / (N * C);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor Y(X.dtype(), X.dims());
  KILN_DISPATCH_FLOAT(X.dtype(), n.describe(), {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t b = 0; b < N; ++b)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < S; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(C - 1, ch + after); ++k) {
            double v = x[(b * C + k) * S + i];
            sq += v * v;
          }
          int64_t at = (b * C + ch) * S + i;
          y[at] = static_cast<T>(x[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
  });
  nn::set_result(c, 0, Y, dt);
}

}  // namespace

OpDef def_LRN() {
  return {.name = "LRN",
          .since = 1,
          .min_inputs = 1,
          .max_inputs = 1,
          .attrs = {{"alpha", AttrKind::Float},
                    {"beta", AttrKind::Float},
                    {"bias", AttrKind::Float},
                    {"size", AttrKind::Int, true}},
          .infer = infer_lrn,
          .cost = nn::cost_per_input<8>,
          .kernel = lrn_kernel,
          .doc = "local response normalisation across neighbouring channels"};
}

}  // namespace kiln::ops

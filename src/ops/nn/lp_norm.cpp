// LpNormalization: x divided by its L1 or L2 norm along one axis.
#include <cmath>

#include "nn_common.h"

namespace kiln::ops {
namespace {

void lp_norm_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  int64_t axis = normalize_axis(n.attr_i("axis", -1), static_cast<int64_t>(X.rank()), n);
  int64_t p = n.attr_i("p", 2);
  KILN_CHECK(p == 1 || p == 2, n.describe(), ": p must be 1 or 2, got ", p);
  int64_t len = X.dim(axis), inner = numel_of(std::vector<int64_t>(X.dims().begin() + axis + 1, X.dims().end()));
  int64_t outer = len * inner == 0 ? 0 : X.numel() / (len * inner);
  Tensor Y(X.dtype(), X.dims());
  KILN_DISPATCH_FLOAT(X.dtype(), n.describe(), {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        double norm = 0;
        for (int64_t k = 0; k < len; ++k) {
          double v = x[base + k * inner];
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < len; ++k) y[base + k * inner] = static_cast<T>(x[base + k * inner] / norm);
      }
  });
  nn::set_result(c, 0, Y, dt);
}

}  // namespace

OpDef def_LpNormalization() {
  return {.name = "LpNormalization",
          .since = 1,
          .min_inputs = 1,
          .max_inputs = 1,
          .attrs = {{"axis", AttrKind::Int}, {"p", AttrKind::Int}},
          .infer = infer_same_as_input0,
          .cost = nn::cost_per_input<3>,
          .kernel = lp_norm_kernel,
          .doc = "x / ||x||_p along axis (p = 1 or 2)"};
}

}  // namespace kiln::ops

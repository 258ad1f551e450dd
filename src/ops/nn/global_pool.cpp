// GlobalAveragePool and GlobalMaxPool: one value per (image, channel) over all spatial dims.
#include <algorithm>

#include "kiln/kernels/parallel.h"
#include "nn_common.h"

namespace kiln::ops {
namespace {

void infer_global_pool(InferContext& c) {
  const Shape& x = c.in_shape(0);
  if (!x.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  if (x.rank() < 2) c.fail(str_cat("input must have rank >= 2 (N, C, spatial...), got ", x.str()));
  std::vector<Dim> out = {x[0], x[1]};
  out.resize(x.rank(), Dim(1));
  c.set_output(0, c.in_dtype(0), Shape(out));
}

void global_pool_kernel(KernelContext& c) {
  const Node& n = c.node();
  // Set by lowering for the compiled runtime's kernels (channel-blocked or pixel-major input):
  // these loops read NCHW.
  if (n.attr_i("x_blocked", 0) != 0 || n.attr_i("x_nhwc", 0) != 0)
    c.fail("a channel-blocked or pixel-major input runs only on the compiled kernels; recompile the model");
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  KILN_CHECK(X.rank() >= 2, n.describe(), ": input ", dims_str(X.dims()), " must have rank >= 2");
  std::vector<int64_t> ydims = {X.dim(0), X.dim(1)};
  ydims.resize(X.rank(), 1);
  int64_t planes = X.dim(0) * X.dim(1), S = planes == 0 ? 0 : X.numel() / planes;
  KILN_CHECK(S > 0 || planes == 0, n.describe(), ": empty spatial extent");
  bool is_max = n.op == "GlobalMaxPool";
  Tensor Y(X.dtype(), ydims);
  KILN_DISPATCH_FLOAT(X.dtype(), n.describe(), {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    kernels::parallel_for(planes, c.threads(), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = x + p * S;
        if (is_max) {
          y[p] = *std::max_element(xp, xp + S);
        } else {
          double s = 0;
          for (int64_t i = 0; i < S; ++i) s += xp[i];
          y[p] = static_cast<T>(s / static_cast<double>(S));
        }
      }
    });
  });
  nn::set_result(c, 0, Y, dt);
}

OpDef global_pool_def(std::string_view name, std::string_view doc) {
  return {.name = name,
          .since = 1,
          .min_inputs = 1,
          .max_inputs = 1,
          .infer = infer_global_pool,
          .cost = nn::cost_per_input<1>,
          .kernel = global_pool_kernel,
          .doc = doc};
}

}  // namespace

OpDef def_GlobalAveragePool() {
  return global_pool_def("GlobalAveragePool", "mean over all spatial dims of each (image, channel)");
}
OpDef def_GlobalMaxPool() {
  return global_pool_def("GlobalMaxPool", "maximum over all spatial dims of each (image, channel)");
}

}  // namespace kiln::ops

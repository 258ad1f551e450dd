// LayerNormalization (opset 17): normalises over the trailing dims from `axis` on, then
// applies Scale and B (broadcast to those dims). Optional outputs Mean and InvStdDev have
// X's leading dims and 1s for the normalised ones.
#include <cmath>

#include "kiln/kernels/parallel.h"
#include "nn_common.h"

namespace kiln::ops {
namespace {

DType stash_dtype(const Node& n) {
  int64_t st = n.attr_i("stash_type", 1);
  KILN_CHECK(st == 1, n.describe(), ": stash_type ", st, " is not supported (only 1 = float)");
  return DType::f32;
}

void infer_layer_norm(InferContext& c) {
  const Shape& x = c.in_shape(0);
  c.set_output(0, c.in_dtype(0), x);
  DType st = stash_dtype(c.node());
  if (!x.rank_known) {
    c.set_output(1, st, Shape::unknown_rank());
    c.set_output(2, st, Shape::unknown_rank());
    return;
  }
  int64_t axis = normalize_axis(c.node().attr_i("axis", -1), static_cast<int64_t>(x.rank()), c.node());
  Shape stat = x;
  for (size_t i = axis; i < x.rank(); ++i) stat[i] = Dim(1);
  c.set_output(1, st, stat);
  c.set_output(2, st, stat);
}

// Expands a Scale/B tensor to one value per element of the normalised dims `norm`
// (numpy broadcasting towards `norm`; leading extra dims must be 1).
std::vector<double> expand_param(const Tensor& t, const std::vector<int64_t>& norm, const Node& n) {
  std::vector<int64_t> td = t.dims();
  while (td.size() > norm.size()) {
    KILN_CHECK(td.front() == 1, n.describe(), ": Scale/B ", dims_str(t.dims()), " does not broadcast to ",
               dims_str(norm));
    td.erase(td.begin());
  }
  td.insert(td.begin(), norm.size() - td.size(), 1);
  for (size_t i = 0; i < norm.size(); ++i)
    KILN_CHECK(td[i] == norm[i] || td[i] == 1, n.describe(), ": Scale/B ", dims_str(t.dims()),
               " does not broadcast to the normalised dims ", dims_str(norm));
  std::vector<int64_t> ts = strides_of(td);
  int64_t total = numel_of(norm);
  std::vector<double> out(total);
  std::vector<int64_t> idx(norm.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < norm.size(); ++d) off += td[d] == 1 ? 0 : idx[d] * ts[d];
    out[i] = t.as_double(off);
    for (int64_t d = static_cast<int64_t>(norm.size()) - 1; d >= 0; --d) {
      if (++idx[d] < norm[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void layer_norm_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  int64_t axis = normalize_axis(n.attr_i("axis", -1), static_cast<int64_t>(X.rank()), n);
  DType st = stash_dtype(n);
  std::vector<int64_t> norm(X.dims().begin() + axis, X.dims().end());
  int64_t D = numel_of(norm), rows = D == 0 ? 0 : X.numel() / D;
  std::vector<double> scale = expand_param(c.input(1), norm, n);
  std::vector<double> bias = c.has_input(2) ? expand_param(c.input(2), norm, n) : std::vector<double>(D, 0.0);
  double eps = n.attr_f("epsilon", 1e-5f);
  std::vector<int64_t> stat_dims = X.dims();
  for (size_t i = axis; i < stat_dims.size(); ++i) stat_dims[i] = 1;
  Tensor Y(X.dtype(), X.dims()), mean_t(st, stat_dims), inv_t(st, stat_dims);
  float* mean_out = mean_t.data<float>();
  float* inv_out = inv_t.data<float>();
  KILN_DISPATCH_FLOAT(X.dtype(), n.describe(), {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    kernels::parallel_for(rows, c.threads(), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * D;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < D; ++i) mean += xr[i];
        mean /= static_cast<double>(D);
        for (int64_t i = 0; i < D; ++i) var += (xr[i] - mean) * (xr[i] - mean);
        var /= static_cast<double>(D);
        double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < D; ++i) y[r * D + i] = static_cast<T>((xr[i] - mean) * inv * scale[i] + bias[i]);
        mean_out[r] = static_cast<float>(mean);
        inv_out[r] = static_cast<float>(inv);
      }
    });
  });
  nn::set_result(c, 0, Y, dt);
  if (c.has_output(1)) c.set_output(1, mean_t);
  if (c.has_output(2)) c.set_output(2, inv_t);
}

}  // namespace

OpDef def_LayerNormalization() {
  return {.name = "LayerNormalization",
          .since = 17,
          .min_inputs = 2,
          .max_inputs = 3,
          .min_outputs = 1,
          .max_outputs = 3,
          .attrs = {{"axis", AttrKind::Int}, {"epsilon", AttrKind::Float}, {"stash_type", AttrKind::Int}},
          .infer = infer_layer_norm,
          .cost = nn::cost_per_input<5>,
          .kernel = layer_norm_kernel,
          .doc = "normalises over the dims from axis on, then elementwise Scale and optional B"};
}

}  // namespace kiln::ops

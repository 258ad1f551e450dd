// BatchNormalization. Inference: y = scale * (x - mean) / sqrt(var + eps) + B per channel.
// training_mode (opset 14+) normalises with the batch statistics and also returns the
// updated running mean and variance. Opsets 7-8 accept `spatial`: with spatial=0 the
// parameters hold one value per (channel, spatial position).
#include <cmath>

#include "kiln/kernels/parallel.h"
#include "nn_common.h"

namespace kiln::ops {
namespace {

bool training(const Node& n, int64_t opset) { return opset >= 14 && n.attr_i("training_mode", 0) != 0; }

void infer_batch_norm(InferContext& c) {
  const Shape& x = c.in_shape(0);
  if (x.rank_known && x.rank() < 2) c.fail(str_cat("input must have rank >= 2, got ", x.str()));
  for (size_t i = 1; i < 5; ++i) {
    const Shape& p = c.in_shape(i);
    if (c.opset() >= 9 && x.rank_known && p.rank_known &&
        (p.rank() != 1 || (p[0].is_static() && x[1].is_static() && p[0].value != x[1].value)))
      c.fail(str_cat("channel mismatch: input ", i, " has shape ", p.str(), ", X has ", x[1].str(), " channels"));
  }
  if (c.opset() < 14 && c.num_outputs() > 1 && c.has_output(1))
    c.fail("training outputs of opsets before 14 are not supported (inference only)");
  c.set_output(0, c.in_dtype(0), x);
  Shape ch = x.rank_known ? Shape(std::vector<Dim>{x[1]}) : Shape::unknown_rank();
  c.set_output(1, c.in_dtype(3), ch);
  c.set_output(2, c.in_dtype(4), ch);
}

// A parameter expanded to `n` doubles (C values, or C*S with spatial=0).
std::vector<double> param(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.as_double(i);
  return v;
}

template <typename T>
void batch_norm(KernelContext& c, const Tensor& X, DType dt) {
  const Node& n = c.node();
  KILN_CHECK(X.rank() >= 2, n.describe(), ": input ", dims_str(X.dims()), " must have rank >= 2");
  int64_t N = X.dim(0), C = X.dim(1), S = C == 0 || N == 0 ? 0 : X.numel() / (N * C);
  std::vector<double> scale = param(c.input(1)), bias = param(c.input(2)), mean = param(c.input(3)),
                      var = param(c.input(4));
  // spatial=0 (opsets 7-8): one parameter per (channel, position).
  bool per_position = c.opset() < 9 && n.attr_i("spatial", 1) == 0;
  size_t want = per_position ? static_cast<size_t>(C * S) : static_cast<size_t>(C);
  for (const auto* p : {&scale, &bias, &mean, &var})
    KILN_CHECK(p->size() == want, n.describe(), ": channel mismatch: parameter has ", p->size(), " values, expected ",
               want, " for X ", dims_str(X.dims()));
  double eps = n.attr_f("epsilon", 1e-5f);
  bool train = training(n, c.opset());
  if (train) {
    double momentum = n.attr_f("momentum", 0.9f);
    std::vector<double> bm(C, 0), bv(C, 0);
    const T* x = X.data<T>();
    for (int64_t ch = 0; ch < C; ++ch) {
      double s = 0, s2 = 0;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t i = 0; i < S; ++i) {
          double v = x[(b * C + ch) * S + i];
          s += v, s2 += v * v;
        }
      double cnt = static_cast<double>(N * S);
      bm[ch] = s / cnt;
      bv[ch] = s2 / cnt - bm[ch] * bm[ch];
    }
    for (size_t o = 1; o <= 2; ++o) {
      if (!c.has_output(o)) continue;
      const std::vector<double>& run = o == 1 ? mean : var;
      const std::vector<double>& cur = o == 1 ? bm : bv;
      Tensor r(DType::f64, {C});
      for (int64_t ch = 0; ch < C; ++ch) r.data<double>()[ch] = run[ch] * momentum + cur[ch] * (1 - momentum);
      c.set_output(o, r.cast(c.input(2 + o).dtype()));
    }
    mean = bm, var = bv;
  }
  // Fold into y = x * a + b per parameter slot.
  std::vector<double> a(want), bb(want);
  for (size_t i = 0; i < want; ++i) {
    a[i] = scale[i] / std::sqrt(var[i] + eps);
    bb[i] = bias[i] - mean[i] * a[i];
  }
  Tensor Y(X.dtype(), X.dims());
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  kernels::parallel_for(N * C, c.threads(), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      int64_t ch = p % C;
      for (int64_t i = 0; i < S; ++i) {
        size_t k = per_position ? static_cast<size_t>(ch * S + i) : static_cast<size_t>(ch);
        y[p * S + i] = static_cast<T>(x[p * S + i] * a[k] + bb[k]);
      }
    }
  });
  nn::set_result(c, 0, Y, dt);
}

void batch_norm_kernel(KernelContext& c) {
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  if (c.opset() < 14) KILN_CHECK(!c.has_output(1), c.node().describe(), ": training outputs of opsets before 14 are not supported");
  KILN_DISPATCH_FLOAT(X.dtype(), c.node().describe(), batch_norm<T>(c, X, dt));
}

}  // namespace

OpDef def_BatchNormalization() {
  return {.name = "BatchNormalization",
          .since = 1,
          .min_inputs = 5,
          .max_inputs = 5,
          .min_outputs = 1,
          .max_outputs = 5,
          .attrs = {{"epsilon", AttrKind::Float},
                    {"momentum", AttrKind::Float},
                    {"spatial", AttrKind::Int},
                    {"training_mode", AttrKind::Int},
                    {"is_test", AttrKind::Int},
                    {"consumed_inputs", AttrKind::Ints}},
          .infer = infer_batch_norm,
          .cost = nn::cost_per_input<2>,
          .kernel = batch_norm_kernel,
          .doc = "per-channel normalisation with given (or batch) mean and variance, then scale and shift"};
}

}  // namespace kiln::ops

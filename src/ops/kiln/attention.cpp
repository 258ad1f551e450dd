// kiln.Attention(Q, K, V, Mask?) = softmax(scale * Q Kᵀ + Mask) V, row-wise over the keys,
// made by fuse-attention from MatMul → scale → mask → Softmax → MatMul chains.
// Q [B,H,Sq,D], K [B,H,Sk,D], V [B,H,Sk,Dv] -> [B,H,Sq,Dv]; Mask is additive and broadcasts
// to [B,H,Sq,Sk]; `causal` = 1 masks key j > i + (Sk - Sq) for query i (the KV-cache
// alignment); `scale` defaults to 1/sqrt(D). The reference kernel is the naive loop with the
// numerically stable softmax of the Softmax op (max subtracted, sum in double), so a row whose
// keys are all masked gives NaN exactly as the unfused graph does.
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "kiln/kernels/parallel.h"
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

constexpr const char* kOperands[] = {"Q", "K", "V"};

void infer_attention(InferContext& c) {
  const Shape &q = c.in_shape(0), &k = c.in_shape(1), &v = c.in_shape(2);
  for (size_t i = 0; i < 3; ++i) {
    const Shape& s = c.in_shape(i);
    if (s.rank_known && s.rank() != 4) c.fail(str_cat(kOperands[i], " must be [B,H,S,D], got ", s.str()));
  }
  auto clash = [](const Dim& a, const Dim& b) { return a.is_static() && b.is_static() && a.value != b.value; };
  if (q.rank_known && k.rank_known && (clash(q[0], k[0]) || clash(q[1], k[1]) || clash(q[3], k[3])))
    c.fail(str_cat("Q ", q.str(), " and K ", k.str(), " differ in batch, heads or head size"));
  if (k.rank_known && v.rank_known && (clash(k[0], v[0]) || clash(k[1], v[1]) || clash(k[2], v[2])))
    c.fail(str_cat("K ", k.str(), " and V ", v.str(), " differ in batch, heads or key length"));
  if (!q.rank_known || !v.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  if (c.has_input(3) && k.rank_known) check_broadcasts_into(c, Shape({q[0], q[1], q[2], k[2]}), 3, "Mask");
  c.set_output(0, c.in_dtype(0), Shape({q[0], q[1], q[2], v[3]}));
}

Cost cost_attention(const CostContext& c) {
  const auto &q = c.in_dims[0], &k = c.in_dims[1], &v = c.in_dims[2];
  std::vector<int64_t> scores = {q[0], q[1], q[2], k[2]};
  double n_scores = static_cast<double>(numel_of(scores));
  CostContext softmax{c.node, {scores}, {DType::f32}, {scores}, {DType::f32}};
  Cost cost;
  cost.flops = 2 * n_scores * static_cast<double>(q[3])    // Q Kᵀ
               + n_scores * (c.node.input(3) ? 2 : 1)       // scale, mask
               + onnx_op("Softmax").cost(softmax).flops     // softmax
               + 2 * n_scores * static_cast<double>(v[3]);  // P V
  cost.bytes_read = c.io_bytes_read();
  cost.bytes_written = c.io_bytes_written();
  return cost;
}

// Element strides of a mask broadcast to [B,H,Sq,Sk] (0 along broadcast dims).
std::array<int64_t, 4> mask_strides(const KernelContext& c, const Tensor& m, const std::array<int64_t, 4>& to) {
  KILN_CHECK(m.rank() <= 4, c.node().describe(), ": Mask ", dims_str(m.dims()), " has rank > 4");
  std::array<int64_t, 4> st{0, 0, 0, 0};
  int64_t stride = 1;
  for (size_t i = 0; i < m.rank(); ++i) {
    size_t d = m.rank() - 1 - i, o = 3 - i;
    KILN_CHECK(m.dim(d) == to[o] || m.dim(d) == 1, c.node().describe(), ": Mask ", dims_str(m.dims()),
               " does not broadcast to [", to[0], ",", to[1], ",", to[2], ",", to[3], "]");
    st[o] = m.dim(d) == 1 ? 0 : stride;
    stride *= m.dim(d);
  }
  return st;
}

void attention_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor q = f32_input(c, 0), k = f32_input(c, 1), v = f32_input(c, 2);
  KILN_CHECK(q.rank() == 4 && k.rank() == 4 && v.rank() == 4, n.describe(), ": Q ", dims_str(q.dims()), ", K ",
             dims_str(k.dims()), " and V ", dims_str(v.dims()), " must all be [B,H,S,D]");
  const int64_t B = q.dim(0), H = q.dim(1), Sq = q.dim(2), D = q.dim(3), Sk = k.dim(2), Dv = v.dim(3);
  KILN_CHECK(k.dim(0) == B && k.dim(1) == H && k.dim(3) == D && v.dim(0) == B && v.dim(1) == H && v.dim(2) == Sk,
             n.describe(), ": Q ", dims_str(q.dims()), ", K ", dims_str(k.dims()), " and V ", dims_str(v.dims()),
             " do not agree on batch, heads, key length and head size");
  std::optional<Tensor> mask;
  std::array<int64_t, 4> ms{0, 0, 0, 0};
  if (c.has_input(3)) {
    mask = f32_input(c, 3);
    ms = mask_strides(c, *mask, {B, H, Sq, Sk});
  }
  const float scale = n.attr_f("scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))));
  const bool causal = n.attr_i("causal", 0) != 0;
  Tensor y(DType::f32, {B, H, Sq, Dv});
  const float *qp = q.data<float>(), *kp = k.data<float>(), *vp = v.data<float>();
  const float* mp = mask ? mask->data<float>() : nullptr;
  float* yp = y.data<float>();
  kernels::parallel_for(B * H, c.threads(), [&](int64_t begin, int64_t end) {
    std::vector<float> s(static_cast<size_t>(Sk));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const float* qb = qp + bh * Sq * D;
      const float* kb = kp + bh * Sk * D;
      const float* vb = vp + bh * Sk * Dv;
      for (int64_t i = 0; i < Sq; ++i) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < Sk; ++j) {
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qb[i * D + d] * kb[j * D + d];
          s[j] = scale * dot;
          if (mp) s[j] += mp[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
          if (causal && j > i + (Sk - Sq)) s[j] = -std::numeric_limits<float>::infinity();
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < Sk; ++j) {
          s[j] = std::exp(s[j] - m);
          sum += s[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        float* yr = yp + (bh * Sq + i) * Dv;
        for (int64_t e = 0; e < Dv; ++e) yr[e] = 0;
        for (int64_t j = 0; j < Sk; ++j) {
          const float p = s[j] * inv;
          for (int64_t e = 0; e < Dv; ++e) yr[e] += p * vb[j * Dv + e];
        }
      }
    }
  });
  c.set_output(0, from_f32(y, dt));
}

}  // namespace

OpDef def_Attention() {
  return {.name = "Attention",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 3,
          .max_inputs = 4,
          .attrs = {{"scale", AttrKind::Float}, {"causal", AttrKind::Int}},
          .infer = infer_attention,
          .cost = cost_attention,
          .kernel = attention_kernel,
          .doc = "softmax(scale * Q K^T + Mask) V over the keys, optionally causal (Q,K,V as [B,H,S,D])"};
}

}  // namespace kiln::ops

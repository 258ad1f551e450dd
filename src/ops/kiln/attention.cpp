// kiln.Attention(Q, K, V, Mask?) = softmax(scale * Q Kᵀ + Mask) V, row-wise over the keys,
// made by fuse-attention from MatMul → scale → mask → Softmax → MatMul chains.
// Q [B,H,Sq,D], K [B,H,Sk,D], V [B,H,Sk,Dv] -> [B,H,Sq,Dv]; Mask is additive and broadcasts
// to [B,H,Sq,Sk]; `causal` = 1 masks key j > i + (Sk - Sq) for query i (the KV-cache
// alignment); `scale` defaults to 1/sqrt(D). The reference kernel is the naive loop with the
// numerically stable softmax of the Softmax op (max subtracted, sum in double), so a row whose
// keys are all masked gives NaN exactly as the unfused graph does. With views (q_view, ...,
// y_view: kiln_ops.h) the operands are gathered into [B,H,S,D] tensors first and Y is scattered
// into its `y_shape` output after.
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "kiln/kernels/parallel.h"
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

constexpr const char* kOperands[] = {"Q", "K", "V", "Y"};
constexpr const char* kViewAttrs[] = {"q_view", "k_view", "v_view", "y_view"};

// Shape inference with views: the operands' tensors must be static (fold-attention-views only
// makes views of those); Y takes `y_shape`.
void infer_attention_views(InferContext& c) {
  const Node& n = c.node();
  AttentionView v[3];
  for (size_t i = 0; i < 3; ++i) {
    const Shape& s = c.in_shape(i);
    if (!s.is_static()) c.fail(str_cat(kOperands[i], " ", s.str(), " is not static, as a view needs"));
    try {
      v[i] = attention_view(n, i, s.static_dims());
    } catch (const Error& e) {
      c.fail(e.what());
    }
  }
  const AttentionView &q = v[0], &k = v[1], &vv = v[2];
  if (q.dims[0] != k.dims[0] || q.dims[1] != k.dims[1] || q.dims[3] != k.dims[3])
    c.fail("the views of Q and K differ in batch, heads or head size");
  if (k.dims[0] != vv.dims[0] || k.dims[1] != vv.dims[1] || k.dims[2] != vv.dims[2])
    c.fail("the views of K and V differ in batch, heads or key length");
  std::vector<int64_t> y_dims = {q.dims[0], q.dims[1], q.dims[2], vv.dims[3]};
  if (n.has_attr("y_view")) {
    y_dims = n.attr_ints("y_shape", {});
    AttentionView y;
    try {
      y = attention_view(n, 3, y_dims);
    } catch (const Error& e) {
      c.fail(e.what());
    }
    if (y.dims[0] != q.dims[0] || y.dims[1] != q.dims[1] || y.dims[2] != q.dims[2] || y.dims[3] != vv.dims[3])
      c.fail("the view of Y is not [B, H, Sq, Dv] of Q and V");
  }
  if (c.has_input(3)) check_broadcasts_into(c, Shape({q.dims[0], q.dims[1], q.dims[2], k.dims[2]}), 3, "Mask");
  c.set_output(0, c.in_dtype(0), Shape::of(y_dims));
}

void infer_attention(InferContext& c) {
  const Node& n = c.node();
  for (const char* a : kViewAttrs)
    if (n.has_attr(a)) return infer_attention_views(c);
  if (n.has_attr("y_shape")) c.fail("y_shape without y_view");
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

std::vector<int64_t> view_dims(const Node& n, size_t i, const std::vector<int64_t>& tensor) {
  const AttentionView v = attention_view(n, i, tensor);
  return {v.dims[0], v.dims[1], v.dims[2], v.dims[3]};
}

Cost cost_attention(const CostContext& c) {
  const std::vector<int64_t> q = view_dims(c.node, 0, c.in_dims[0]), k = view_dims(c.node, 1, c.in_dims[1]),
                             v = view_dims(c.node, 2, c.in_dims[2]);
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

// Operand i of the node as the contiguous [B,H,S,D] tensor its view reads.
Tensor gather_view(const KernelContext& c, size_t i, const Tensor& t) {
  const AttentionView v = attention_view(c.node(), i, t.dims());
  Tensor out(DType::f32, {v.dims[0], v.dims[1], v.dims[2], v.dims[3]});
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t b = 0; b < v.dims[0]; ++b)
    for (int64_t h = 0; h < v.dims[1]; ++h)
      for (int64_t s = 0; s < v.dims[2]; ++s, dst += v.dims[3]) {
        const float* row = src + v.offset + b * v.strides[0] + h * v.strides[1] + s * v.strides[2];
        std::copy(row, row + v.dims[3], dst);
      }
  return out;
}

void attention_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor q = f32_input(c, 0), k = f32_input(c, 1), v = f32_input(c, 2);
  if (attention_has_view(n, 0)) q = gather_view(c, 0, q);
  if (attention_has_view(n, 1)) k = gather_view(c, 1, k);
  if (attention_has_view(n, 2)) v = gather_view(c, 2, v);
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
  if (attention_has_view(n, 3)) {  // scattered through the view into the y_shape output
    const std::vector<int64_t> shape = n.attr_ints("y_shape", {});
    const AttentionView w = attention_view(n, 3, shape);
    Tensor out(DType::f32, shape);
    const float* src = y.data<float>();
    float* dst = out.data<float>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Sq; ++i, src += Dv)
          std::copy(src, src + Dv, dst + w.offset + b * w.strides[0] + h * w.strides[1] + i * w.strides[2]);
    y = std::move(out);
  }
  c.set_output(0, from_f32(y, dt));
}

}  // namespace

const char* attention_view_attr(size_t operand) {
  KILN_CHECK(operand < 4, "attention_view_attr: operand ", operand);
  return kViewAttrs[operand];
}

bool attention_has_view(const Node& n, size_t operand) { return n.has_attr(attention_view_attr(operand)); }

AttentionView attention_view(const Node& n, size_t operand, const std::vector<int64_t>& tensor) {
  KILN_CHECK(operand < 4, "attention_view: operand ", operand);
  AttentionView v;
  int64_t numel = 1;
  for (int64_t d : tensor) numel *= d;
  if (!n.has_attr(kViewAttrs[operand])) {
    KILN_CHECK(tensor.size() == 4, n.describe(), ": ", kOperands[operand], " ", dims_str(tensor),
               " must be [B,H,S,D]");
    for (int i = 0; i < 4; ++i) v.dims[i] = tensor[i];
    v.strides[2] = tensor[3], v.strides[1] = tensor[2] * tensor[3], v.strides[0] = tensor[1] * v.strides[1];
    return v;
  }
  // Q, K, V: offset, 4 dims, 3 strides; Y: 4 dims, 3 strides (it starts at element 0).
  const std::vector<int64_t> a = n.attr_ints(kViewAttrs[operand], {});
  const bool y = operand == 3;
  KILN_CHECK(a.size() == (y ? 7u : 8u), n.describe(), ": ", kViewAttrs[operand], " needs ", y ? 7 : 8,
             " ints (", y ? "" : "offset, ", "B, H, S, D, strides of B, H, S), got ", a.size());
  const int64_t* p = a.data();
  if (!y) v.offset = *p++;
  for (int i = 0; i < 4; ++i) v.dims[i] = *p++;
  for (int i = 0; i < 3; ++i) v.strides[i] = *p++;
  int64_t last = v.offset + v.dims[3] - 1, count = v.dims[3];
  bool ok = v.offset >= 0 && v.dims[3] > 0;
  for (int i = 0; i < 3; ++i) {
    ok = ok && v.dims[i] > 0 && v.strides[i] >= 0;
    last += (v.dims[i] - 1) * v.strides[i];
    count *= v.dims[i];
  }
  KILN_CHECK(ok && last < numel, n.describe(), ": ", kViewAttrs[operand], " [", dims_str(a), "] reaches past its ",
             dims_str(tensor), " tensor or has a dim below 1 or a negative stride");
  // Y must cover its tensor: as many elements as it has, and no two rows on the same ones (rows
  // whose strides step over whole rows: checked by the sorted strides).
  if (y) {
    std::array<std::pair<int64_t, int64_t>, 3> st = {{{v.strides[0], v.dims[0]}, {v.strides[1], v.dims[1]},
                                                      {v.strides[2], v.dims[2]}}};
    std::sort(st.begin(), st.end());
    int64_t span = v.dims[3];
    bool disjoint = true;
    for (const auto& [stride, dim] : st) {
      if (dim == 1) continue;
      disjoint = disjoint && stride >= span;
      span = stride * dim;
    }
    KILN_CHECK(count == numel && disjoint, n.describe(), ": y_view [", dims_str(a), "] does not cover its ",
               dims_str(tensor), " output exactly once");
  }
  return v;
}

OpDef def_Attention() {
  return {.name = "Attention",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 3,
          .max_inputs = 4,
          .attrs = {{"scale", AttrKind::Float},
                    {"causal", AttrKind::Int},
                    {"q_view", AttrKind::Ints},
                    {"k_view", AttrKind::Ints},
                    {"v_view", AttrKind::Ints},
                    {"y_view", AttrKind::Ints},
                    {"y_shape", AttrKind::Ints}},
          .infer = infer_attention,
          .cost = cost_attention,
          .kernel = attention_kernel,
          .doc = "softmax(scale * Q K^T + Mask) V over the keys, optionally causal (Q,K,V as [B,H,S,D])"};
}

}  // namespace kiln::ops

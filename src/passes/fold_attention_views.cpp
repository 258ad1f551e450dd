// fold-attention-views: kiln.Attention reads Q, K and V where the projection left them and
// writes Y where the output projection reads it, instead of the copies in between.
//
//   qkv = MatMul(x, W)                       [S, 1, 3E]      (torch's nn.MultiheadAttention)
//   q = Slice(qkv, 0:E) -> Reshape [S, H, D] -> Transpose [H, S, D] -> Unsqueeze [1, H, S, D]
//   k, v: the same at E:2E, 2E:3E
//   y = kiln.Attention(q, k, v, mask?)       [1, H, S, D]
//   Squeeze -> Transpose [S, H, D] -> Reshape [S, E]
//   -> Y = kiln.Attention(qkv, qkv, qkv, mask?) {q_view, k_view, v_view, y_view, y_shape}
//
// Each operand's chain of data-movement ops (Slice, Split, Transpose, Reshape, Squeeze,
// Unsqueeze, Flatten) back to the tensor that feeds it is a strided view of that tensor when
// every step is: slices and splits move the offset, transposes permute the strides, and a
// reshape splits dims or merges dims that are contiguous in the tensor. The output's chain of
// Transposes and reshapes forward to the value the next op reads is inverted the same way.
// The attention kernel takes strides for its rows (kernels::AttentionArgs), so the copies go:
// BERT-base's 36 Slices and 48 Transposes (1.7 of 116 ms at 2 threads), GPT-2's Splits and
// Transposes. Shapes must be static; a value read elsewhere ends its chain (the copy stays for
// that reader), and so does a step that is not a view (then the chain from there on is used).
#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "fuse_match.h"
#include "fuse_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "kiln/ops/views.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr std::string_view kName = "fold-attention-views";

// Element (i0, ..) of a value at offset + sum i_d * strides[d] of a base tensor's elements.
using View = ops::StridedView;

// op (a view over the linear index of a value whose view in the base is `in`) as a view of the
// base: each of op's strides must step along one dim of `in` without carrying into the next,
// so that op's linear offsets decode digit by digit.
std::optional<View> compose(const View& in, const ops::StridedView& op) {
  View m = ops::merged_view(in);
  if (m.dims.empty()) m.dims = {1}, m.strides = {0};
  const std::vector<int64_t> cs = ops::contiguous_view(m.dims).strides;
  const size_t n = m.dims.size();
  View out;
  out.offset = m.offset;
  std::vector<int64_t> last(n);  // the highest digit reached along each dim of m
  int64_t rest = op.offset;
  for (size_t a = 0; a < n; ++a) {
    last[a] = rest / cs[a];
    rest %= cs[a];
    out.offset += last[a] * m.strides[a];
  }
  if (last[0] >= m.dims[0]) return std::nullopt;
  for (size_t d = 0; d < op.dims.size(); ++d) {
    const int64_t s = op.strides[d];
    out.dims.push_back(op.dims[d]);
    if (op.dims[d] == 1 || s == 0) {
      out.strides.push_back(0);
      continue;
    }
    // The one dim a of m with cs[a] <= s < cs[a] * dims[a] (cs grows outwards).
    size_t a = n;
    for (size_t i = 0; i < n; ++i)
      if (cs[i] <= s && s < cs[i] * m.dims[i]) a = i;
    if (a == n || s % cs[a] != 0) return std::nullopt;
    last[a] += s / cs[a] * (op.dims[d] - 1);
    out.strides.push_back(s / cs[a] * m.strides[a]);
  }
  for (size_t a = 0; a < n; ++a)
    if (last[a] >= m.dims[a]) return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> static_dims(const Value* v) {
  if (!v || !v->shape.is_static()) return std::nullopt;
  return v->shape.static_dims();
}

bool reshapes(const Node& n) {
  return fuse::is_onnx(n, "Reshape") || fuse::is_onnx(n, "Squeeze") || fuse::is_onnx(n, "Unsqueeze") ||
         fuse::is_onnx(n, "Flatten");
}

// Output `out` of data-movement node n as a view over the linear index of its input 0, or
// nothing (not such an op, parameters unknown here, or not static).
std::optional<ops::StridedView> op_view(const Node& n, const Value* out, int64_t opset) {
  auto x = static_dims(n.input(0));
  auto y = static_dims(out);
  if (!x || !y) return std::nullopt;
  try {
    if (reshapes(n)) return ops::contiguous_view(*y);
    if (fuse::is_onnx(n, "Transpose")) return ops::transpose_view(n, *x);
    auto constant = [&n](size_t i) -> const Tensor* { return fuse::constant_value(n.input(i)); };
    if (fuse::is_onnx(n, "Slice"))
      return ops::slice_view(n, opset, *x, constant, [&n](size_t i) { return n.input(i) != nullptr; });
    if (fuse::is_onnx(n, "Split")) {
      if (n.input(1) && !constant(1)) return std::nullopt;
      const auto views = ops::split_views(n, opset, *x, constant(1), n.outputs.size());
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (n.outputs[i] == out) return views[i];
    }
  } catch (const std::exception&) {
    // Parameters the op's kernel would reject: no view; the op stays and says so when run.
  }
  return std::nullopt;
}

// [offset,] B, H, S, D, then the strides of B, H, S: when the view is a rank-4 one whose last
// dim is contiguous.
std::optional<std::vector<int64_t>> view_attr(const View& v, bool with_offset) {
  if (v.dims.size() != 4 || (v.dims[3] > 1 && v.strides[3] != 1)) return std::nullopt;
  std::vector<int64_t> a;
  if (with_offset) a.push_back(v.offset);
  a.insert(a.end(), v.dims.begin(), v.dims.end());
  a.insert(a.end(), v.strides.begin(), v.strides.begin() + 3);
  return a;
}

struct Operand {
  Value* base = nullptr;
  std::vector<int64_t> view;  // the attribute
  std::vector<Node*> absorbed;
};

// Operand `x` of the attention: the furthest tensor up its chain that it is a view of.
std::optional<Operand> fold_operand(Value* x, const Node& att, int64_t opset) {
  // The chain back: nodes[i] produces values[i] from values[i + 1]; values[0] = x.
  std::vector<Node*> nodes;
  std::vector<Value*> values = {x};
  const Node* reader = &att;
  for (Value* cur = x; cur->producer && nodes.size() < 16;) {
    Node* p = cur->producer;
    const bool movement = reshapes(*p) || fuse::is_onnx(*p, "Transpose") || fuse::is_onnx(*p, "Slice") ||
                          fuse::is_onnx(*p, "Split");
    // The attention may read one value as several operands (K and V alike): it is then its
    // only reader still.
    if (!movement || !p->input(0) || fuse::single_user(cur) != reader) break;
    nodes.push_back(p);
    values.push_back(p->inputs[0]);
    reader = p;
    cur = p->inputs[0];
  }
  // The furthest base whose chain composes all the way.
  for (size_t len = nodes.size(); len > 0; --len) {
    auto base_dims = static_dims(values[len]);
    if (!base_dims) continue;
    std::optional<View> v = ops::contiguous_view(*base_dims);
    for (size_t i = len; i-- > 0 && v;) {
      auto op = op_view(*nodes[i], values[i], opset);
      v = op ? compose(*v, *op) : std::nullopt;
    }
    if (!v) continue;
    auto attr = view_attr(*v, true);
    if (!attr) continue;
    return Operand{values[len], *attr, std::vector<Node*>(nodes.begin(), nodes.begin() + len)};
  }
  return std::nullopt;
}

struct Output {
  Value* target = nullptr;  // the value the attention then writes
  std::vector<int64_t> view, shape;
  std::vector<Node*> absorbed;
};

// The attention's output y: the furthest value down its chain of Transposes and reshapes that y
// is a view of (read backwards from that value, contiguous).
std::optional<Output> fold_output(Value* y) {
  std::vector<Node*> nodes;  // nodes[i] reads values[i] and writes values[i + 1]
  std::vector<Value*> values = {y};
  for (Value* cur = y; nodes.size() < 16;) {
    Node* u = fuse::single_user(cur);
    if (!u || u->input(0) != cur || u->outputs.size() != 1 || !(reshapes(*u) || fuse::is_onnx(*u, "Transpose")))
      break;
    nodes.push_back(u);
    values.push_back(u->outputs[0]);
    cur = u->outputs[0];
  }
  for (size_t len = nodes.size(); len > 0; --len) {
    auto target_dims = static_dims(values[len]);
    if (!target_dims) continue;
    std::optional<View> v = ops::contiguous_view(*target_dims);
    for (size_t i = len; i-- > 0 && v;) {  // from node i's output back to its input
      const Node& n = *nodes[i];
      auto in_dims = static_dims(values[i]);
      if (!in_dims) {
        v = std::nullopt;
      } else if (reshapes(n)) {
        v = compose(*v, ops::contiguous_view(*in_dims));
      } else {  // Transpose: output dim d is input dim perm[d]
        std::vector<int64_t> perm = n.attr_ints("perm", {});
        if (perm.empty())
          for (size_t d = in_dims->size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
        if (perm.size() != v->dims.size()) {
          v = std::nullopt;
          continue;
        }
        View in{v->offset, std::vector<int64_t>(perm.size()), std::vector<int64_t>(perm.size())};
        for (size_t d = 0; d < perm.size(); ++d) {
          in.dims[perm[d]] = v->dims[d];
          in.strides[perm[d]] = v->strides[d];
        }
        v = in;
      }
    }
    if (!v || v->offset != 0) continue;
    auto attr = view_attr(*v, false);
    if (!attr) continue;
    return Output{values[len], *attr, *target_dims, std::vector<Node*>(nodes.begin(), nodes.begin() + len)};
  }
  return std::nullopt;
}

class FoldAttentionViews : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "kiln.Attention reads Q, K, V and writes Y as strided views: Slice/Split/Transpose/Reshape copies go";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    const int64_t opset = m.opset("");
    for_each_compiled_graph(*m.graph, [&](Graph& g) { changed |= run_graph(g, opset, ctx); });
    if (changed) ops::infer_shapes(m, ctx.bindings);
    return changed;
  }

 private:
  static bool run_graph(Graph& g, int64_t opset, PassContext& ctx) {
    std::vector<Node*> atts;
    for (const auto& n : g.nodes())
      if (n->domain == ops::kKilnDomain && n->op == "Attention") atts.push_back(n.get());
    bool changed = false;
    for (Node* att : atts) {
      bool has_view = false;
      for (size_t i = 0; i < 4; ++i) has_view |= ops::attention_has_view(*att, i);
      if (has_view || att->inputs.size() < 3 || !att->outputs[0] || att->outputs[0]->dtype != DType::f32) {
        if (!has_view) ctx.decline(kName, *att, Decision::no("not an f32 attention"));
        continue;
      }
      std::vector<Node*> absorbed = {att};
      std::vector<Value*> inputs = att->inputs;
      std::map<std::string, Attribute> attrs = att->attrs;
      std::string what;
      for (size_t i = 0; i < 3; ++i) {
        auto op = fold_operand(att->inputs[i], *att, opset);
        if (!op) continue;
        inputs[i] = op->base;
        attrs[ops::attention_view_attr(i)] = Attribute(op->view);
        absorbed.insert(absorbed.end(), op->absorbed.begin(), op->absorbed.end());
        what += str_cat(what.empty() ? "" : ", ", std::string(1, "QKV"[i]), " (", op->absorbed.size(), " ops)");
      }
      Value* result = att->outputs[0];
      if (auto out = fold_output(att->outputs[0])) {
        attrs[ops::attention_view_attr(3)] = Attribute(out->view);
        attrs["y_shape"] = Attribute(out->shape);
        result = out->target;
        absorbed.insert(absorbed.end(), out->absorbed.begin(), out->absorbed.end());
        what += str_cat(what.empty() ? "" : ", ", "Y (", out->absorbed.size(), " ops)");
      }
      if (absorbed.size() == 1) {
        bool all_static = att->outputs[0]->shape.is_static();
        for (size_t i = 0; i < 3; ++i) all_static = all_static && att->inputs[i]->shape.is_static();
        ctx.decline(kName, *att,
                    Decision::no(all_static ? "no operand or output is a view of another tensor"
                                            : "shapes are not static (views need static strides)"));
        continue;
      }
      // A new node takes over the value the next op reads; the old one, its output chain (now
      // writing an unused value) and the input chains no one else reads go.
      const std::string name = att->name;
      Node* folded = fuse::insert_before(g, att, "Attention", inputs, {g.unique_name(result->name + ".views")},
                                         std::move(attrs), "", std::string(ops::kKilnDomain));
      fuse::take_over(folded, 0, result);
      fuse::remove_dead(g, absorbed);
      folded->name = name;
      att = folded;
      ctx.applied(kName, *att, "views for " + what);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_attention_views() { return std::make_unique<FoldAttentionViews>(); }

}  // namespace kiln::passes

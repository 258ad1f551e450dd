// fold-qdq: QDQ patterns (QuantizeLinear/DequantizeLinear pairs around float ops, the format ONNX
// Runtime's quantizer and `kiln quantize --format qdq` write) become kiln's quantized ops, so int8
// flows from one quantized kernel to the next without a round trip to float.
//
//   DQ(xq) -> Conv(., DQ(wq), b) [-> Relu|Clip] [-> Q]     -> kiln.QConv(xq, wq, w_scale, b)
//   DQ(xq) -> MatMul(., DQ(wq)) / Gemm(., DQ(wq), c) ...   -> kiln.QMatMul(xq, wq [K,N], w_scale, c)
//   Q(Relu?(DQ(QConv/QMatMul(..)) + DQ(zq)))               -> the residual zq and the Relu folded
//                                                             into that QConv/QMatMul's epilogue
//   Q(MaxPool|Reshape|Flatten|Squeeze|Unsqueeze|Transpose(DQ(xq))), equal parameters
//                                                          -> the op on xq itself
//   Q(DQ(xq)) with equal parameters                        -> xq
//
// Requirements (else the pattern is left as it is, and --explain says why): activations
// quantized per tensor (constant scalar scale and zero point), weights i8 with zero point 0,
// per tensor or per output channel (Conv: axis 0; MatMul [K,N]: axis 1; Gemm: the N axis), a
// bias that is DQ(i32) at scale x_scale * w_scale or a float constant, Gemm with alpha = beta = 1
// and transA = 0. Without a Q after it the quantized op outputs f32 and may take any activation.
//
// Numerics: the folded ops compute what the QDQ graph computes except that an intermediate
// rounding disappears where a residual Add is folded (the conv output is clamped to the range
// its quantization had, `pre_min`/`pre_max`, but not rounded before the add), and float products
// are int32 sums (exact, where the QDQ graph's float convolution rounds). Outputs agree to about
// one quantization step.
#include <algorithm>
#include <cmath>

#include "builtin_passes.h"
#include "fuse_activation.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/passes/rewrite.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr std::string_view kName = "fold-qdq";

bool is_op(const Node* n, std::string_view op) { return n && n->domain.empty() && n->op == op; }
bool is_quantized(const Node* n) {
  return n && n->domain == ops::kKilnDomain && (n->op == "QConv" || n->op == "QMatMul");
}

// A per-tensor QuantizeLinear / DequantizeLinear: constant scalar scale and zero point.
struct PerTensor {
  float scale = 1;
  int32_t zero_point = 0;
  DType type = DType::u8;  // the quantized side's dtype
  bool operator==(const PerTensor& o) const {
    return scale == o.scale && zero_point == o.zero_point && type == o.type;
  }
};

std::optional<PerTensor> per_tensor(const Node* qdq) {
  if (!qdq || !(is_op(qdq, "QuantizeLinear") || is_op(qdq, "DequantizeLinear"))) return std::nullopt;
  const Tensor* s = constant_of(qdq->input(1));
  if (!s || s->dtype() != DType::f32 || s->numel() != 1) return std::nullopt;
  PerTensor p;
  p.scale = s->data<float>()[0];
  if (const Value* zv = qdq->input(2)) {
    const Tensor* z = constant_of(zv);
    if (!z || z->numel() != 1) return std::nullopt;
    p.zero_point = static_cast<int32_t>(z->as_int64(0));
    p.type = z->dtype();
  } else {
    p.type = qdq->op == "DequantizeLinear" ? qdq->inputs[0]->dtype : DType::u8;
  }
  if (p.type != DType::u8 && p.type != DType::i8) return std::nullopt;
  return p;
}

// Sets the attributes of quantized input / output parameters on a kiln quantized op.
void set_params(Node& n, const std::string& prefix, const PerTensor& p) {
  n.attrs[prefix + "_scale"] = p.scale;
  n.attrs[prefix + "_zero_point"] = int64_t{p.zero_point};
}

// The quantized weight of a compute node: DQ(constant i8, zero point 0), per tensor or along
// `axis` of a weight of rank `rank`.
struct Weight {
  const Tensor* q = nullptr;
  Value* value = nullptr;
  Tensor scale;  // f32 [channels] or [1]
};

Decision match_weight(const Value* w, int64_t axis, Weight& out) {
  const Node* dq = w ? w->producer : nullptr;
  if (!is_op(dq, "DequantizeLinear")) return Decision::no("the weight is not DequantizeLinear output");
  const Tensor* q = constant_of(dq->input(0));
  if (!q || q->dtype() != DType::i8) return Decision::no("the weight is not a constant i8 tensor");
  const Tensor* s = constant_of(dq->input(1));
  if (!s || s->dtype() != DType::f32) return Decision::no("the weight scale is not a constant f32");
  if (const Value* zv = dq->input(2)) {
    const Tensor* z = constant_of(zv);
    if (!z) return Decision::no("the weight zero point is not constant");
    for (int64_t i = 0; i < z->numel(); ++i)
      if (z->as_int64(i) != 0) return Decision::no("the weight zero point is not 0 (asymmetric weights)");
  }
  if (s->numel() != 1) {
    int64_t dq_axis = dq->attr_i("axis", 1);
    if (dq_axis < 0) dq_axis += static_cast<int64_t>(q->rank());
    if (dq_axis != axis || s->numel() != q->dim(static_cast<size_t>(axis)))
      return Decision::no(str_cat("the weight is quantized along axis ", dq_axis, ", not the output channels (",
                                  axis, ")"));
  }
  out.q = q;
  out.value = dq->inputs[0];
  out.scale = s->clone().reshaped({s->numel()});
  return Decision::yes();
}

// The bias: DQ(i32) whose scale is x_scale * w_scale (stays i32), or a float constant (f32).
Decision match_bias(Rewriter& rw, const Value* b, float x_scale, const Tensor& w_scale, int64_t channels,
                    Value*& out) {
  if (!b) return Decision::yes();
  const Node* dq = b->producer;
  if (is_op(dq, "DequantizeLinear")) {
    const Tensor* q = constant_of(dq->input(0));
    const Tensor* s = constant_of(dq->input(1));
    if (!q || q->dtype() != DType::i32 || q->numel() != channels || !s || s->dtype() != DType::f32)
      return Decision::no("the bias is not DQ of a constant i32 vector");
    if (const Tensor* z = constant_of(dq->input(2)))
      for (int64_t i = 0; i < z->numel(); ++i)
        if (z->as_int64(i) != 0) return Decision::no("the bias zero point is not 0");
    for (int64_t c = 0; c < channels; ++c) {
      double want = static_cast<double>(x_scale) * w_scale.data<float>()[w_scale.numel() == 1 ? 0 : c];
      double got = s->data<float>()[s->numel() == 1 ? 0 : c];
      if (std::abs(got - want) > 1e-5 * want) return Decision::no("the bias scale is not x_scale * w_scale");
    }
    out = rw.constant(b->name + ".i32", q->clone().reshaped({channels}));
    return Decision::yes();
  }
  const Tensor* f = constant_of(b);
  if (!f || f->dtype() != DType::f32 || (f->numel() != channels && f->numel() != 1))
    return Decision::no("the bias is neither DQ(i32) nor a per-channel f32 constant");
  Tensor t(DType::f32, {channels});
  for (int64_t c = 0; c < channels; ++c) t.data<float>()[c] = f->data<float>()[f->numel() == 1 ? 0 : c];
  out = rw.constant(b->name + ".f32", std::move(t));
  return Decision::yes();
}

// [N, K] -> [K, N] for an i8 matrix.
Tensor transpose_i8(const Tensor& w) {
  const int64_t n = w.dim(0), k = w.dim(1);
  Tensor t(DType::i8, {k, n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) t.data<int8_t>()[j * n + i] = w.data<int8_t>()[i * k + j];
  return t;
}

class FoldQdq : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "QDQ patterns -> kiln.QConv / kiln.QMatMul (int8 between quantized ops), residual and pooling folded";
  }
  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    Graph& g = *m.graph;  // the main graph only: quantized models have no QDQ in subgraphs
    bool any = false;
    for (const auto& n : g.nodes()) any |= is_op(n.get(), "DequantizeLinear");
    if (!any) return false;
    {
      Rewriter rw(m, g, nullptr);
      for (Node* n : node_list(g))
        if (!rw.was_erased(n) && (is_op(n, "Conv") || is_op(n, "MatMul") || is_op(n, "Gemm")))
          changed |= fold_compute(m, *n, rw, ctx);
    }
    {
      Rewriter rw(m, g, nullptr);
      for (Node* n : node_list(g))
        if (!rw.was_erased(n) && is_op(n, "QuantizeLinear")) changed |= fold_requantize(*n, rw, ctx);
    }
    {
      Rewriter rw(m, g, nullptr);
      for (Node* n : node_list(g))
        if (!rw.was_erased(n) && is_op(n, "Add")) changed |= fold_residual(g, *n, rw, ctx);
    }
    if (changed) m.opsets[std::string(ops::kKilnDomain)] = ops::kKilnOpsetVersion;
    return changed;
  }

 private:
  // Conv / MatMul / Gemm with DQ inputs -> QConv / QMatMul.
  bool fold_compute(Model& m, Node& n, Rewriter& rw, PassContext& ctx) {
    const Node* dqx = n.input(0) ? n.input(0)->producer : nullptr;
    if (!is_op(dqx, "DequantizeLinear")) return false;  // a float op: not ours to mention
    auto decline = [&](const Decision& d) {
      ctx.decline(kName, n, d);
      return false;
    };
    std::optional<PerTensor> xp = per_tensor(dqx);
    if (!xp) return decline(Decision::no("the input is not quantized per tensor (constant scalar scale/zero point)"));
    const bool conv = n.op == "Conv";
    bool trans_b = false;
    if (n.op == "Gemm") {
      if (n.attr_i("transA", 0) != 0) return decline(Decision::no("Gemm with transA"));
      if (n.attr_f("alpha", 1.f) != 1.f || (n.input(2) && n.attr_f("beta", 1.f) != 1.f))
        return decline(Decision::no("Gemm with alpha or beta other than 1"));
      trans_b = n.attr_i("transB", 0) != 0;
    }
    const Value* w = n.input(1);
    if (!w || !w->shape.rank_known) return decline(Decision::no("the weight's rank is unknown"));
    const int64_t rank = static_cast<int64_t>(w->shape.rank());
    if (!conv && rank != 2) return decline(Decision::no("the weight is not a matrix"));
    const int64_t axis = conv || trans_b ? 0 : 1;
    Weight wt;
    if (Decision d = match_weight(w, axis, wt); !d) return decline(d);
    const int64_t channels = wt.q->dim(static_cast<size_t>(axis));
    rw.set_insertion_point(&n);
    Value* bias = nullptr;
    if (Decision d = match_bias(rw, n.input(2), xp->scale, wt.scale, channels, bias); !d) return decline(d);

    // What follows: an activation, then a QuantizeLinear (quantized output).
    Value* y = n.outputs[0];
    std::optional<fuse::ActivationMatch> act = fuse::match_activation(y, m.opset());
    Value* t = act ? act->out : y;
    std::vector<Node*> q_users = has_single_use(t) ? users_of(t) : std::vector<Node*>{};
    std::optional<PerTensor> yp;
    if (q_users.size() == 1 && is_op(q_users[0], "QuantizeLinear") && !is_graph_output(q_users[0]->outputs[0]))
      yp = per_tensor(q_users[0]);
    const bool clamp = !act || act->act == ops::Activation::Relu || act->act == ops::Activation::Clip;
    if (yp && !clamp) yp.reset();  // only a clamp folds into requantization: output f32, Q stays

    std::map<std::string, Attribute> attrs;
    if (conv)
      for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
        if (const Attribute* v = n.find_attr(a)) attrs[a] = *v;
    attrs["x_scale"] = xp->scale;
    attrs["x_zero_point"] = int64_t{xp->zero_point};
    if (act) {
      attrs["activation"] = std::string(ops::activation_name(act->act));
      attrs["act_alpha"] = act->alpha;
      attrs["act_beta"] = act->beta;
    }
    Value* replaced = t;
    if (yp) {
      attrs["out_dtype"] = std::string(yp->type == DType::u8 ? "u8" : "i8");
      attrs["y_scale"] = yp->scale;
      attrs["y_zero_point"] = int64_t{yp->zero_point};
      replaced = q_users[0]->outputs[0];
    } else {
      attrs["out_dtype"] = std::string("f32");
    }
    Value* wq = wt.value;
    if (!conv && trans_b) wq = rw.constant(wt.value->name + ".t", transpose_i8(*wt.q));
    Value* ws = rw.constant(w->name + ".scale", wt.scale);
    std::vector<Value*> inputs = {dqx->inputs[0], wq, ws};
    if (bias) inputs.push_back(bias);
    Node* q = rw.create(conv ? "QConv" : "QMatMul", inputs, std::move(attrs), 1, std::string(ops::kKilnDomain));
    q->name = n.name;
    ctx.applied(kName, n,
                str_cat("-> kiln.", q->op, " (", xp->type == DType::u8 ? "u8" : "i8", " in, ",
                        yp ? (yp->type == DType::u8 ? "u8" : "i8") : "f32", " out",
                        act ? str_cat(", ", ops::activation_name(act->act)) : "", ")"));
    rw.replace(replaced, q->outputs[0]);
    rw.erase_if_dead(yp ? q_users[0] : (act ? act->nodes.back() : &n));
    if (!rw.was_erased(&n)) rw.erase_if_dead(&n);
    return true;
  }

  // Q(op(DQ(x))) with equal parameters for ops that commute with per-tensor quantization, and Q(DQ(x)).
  bool fold_requantize(Node& q, Rewriter& rw, PassContext& ctx) {
    std::optional<PerTensor> qp = per_tensor(&q);
    Value* in = q.input(0);
    Node* p = in ? in->producer : nullptr;
    if (!qp || !p || !has_single_use(in) || is_graph_output(q.outputs[0])) return false;
    if (is_op(p, "DequantizeLinear")) {
      if (per_tensor(p) != qp) return false;
      ctx.applied(kName, q, "Q(DQ(x)) with equal parameters -> x");
      rw.replace(q.outputs[0], p->inputs[0]);
      rw.erase_if_dead(&q);
      return true;
    }
    static const char* kMovers[] = {"MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"};
    if (!std::any_of(std::begin(kMovers), std::end(kMovers), [&](const char* op) { return is_op(p, op); })) return false;
    if (p->outputs.size() > 1 && p->outputs[1]) return false;  // MaxPool's indices
    Node* dq = p->input(0) ? p->input(0)->producer : nullptr;
    if (!is_op(dq, "DequantizeLinear") || per_tensor(dq) != qp) return false;
    rw.set_insertion_point(p);
    std::vector<Value*> inputs = p->inputs;
    inputs[0] = dq->inputs[0];
    Node* moved = rw.create(p->op, inputs, p->attrs, 1);
    moved->name = p->name;
    ctx.applied(kName, *p, str_cat(p->op, " runs on the quantized tensor (", qp->type == DType::u8 ? "u8" : "i8", ")"));
    rw.replace(q.outputs[0], moved->outputs[0]);
    rw.erase_if_dead(&q);
    return true;
  }

  // Q(Relu?(DQ(a) + DQ(b))) where a comes from a QConv/QMatMul with no residual or activation yet:
  // that node moves down to the Add (so b is computed before it) and takes b as its residual.
  bool fold_residual(Graph& g, Node& add, Rewriter& rw, PassContext& ctx) {
    Node* dq[2] = {add.input(0) ? add.input(0)->producer : nullptr, add.input(1) ? add.input(1)->producer : nullptr};
    if (!is_op(dq[0], "DequantizeLinear") || !is_op(dq[1], "DequantizeLinear") || dq[0] == dq[1]) return false;
    Value* out = add.outputs[0];
    Node* relu = nullptr;
    if (has_single_use(out) && is_op(users_of(out)[0], "Relu")) {
      relu = users_of(out)[0];
      out = relu->outputs[0];
    }
    if (!has_single_use(out)) return false;
    Node* q = users_of(out)[0];
    std::optional<PerTensor> qp = per_tensor(q);
    if (!is_op(q, "QuantizeLinear") || !qp || is_graph_output(q->outputs[0])) return false;
    auto& nodes = g.mutable_nodes();
    auto position = [&](const Node* n) {
      return std::find_if(nodes.begin(), nodes.end(), [&](const auto& up) { return up.get() == n; }) - nodes.begin();
    };
    // Either side may take the residual; the later producer moves the least.
    Node* best = nullptr;
    int side = -1;
    for (int s = 0; s < 2; ++s) {
      Value* a = dq[s]->inputs[0];
      Node* p = a->producer;
      if (!is_quantized(p) || p->input(4) || p->attr_s("activation", "") != "" || p->attr_s("out_dtype", "f32") == "f32")
        continue;
      if (!has_single_use(a) || !has_single_use(dq[s]->outputs[0]) || !per_tensor(dq[s]) || !per_tensor(dq[1 - s]))
        continue;
      if (!best || position(p) > position(best)) best = p, side = s;
    }
    if (!best) {
      ctx.decline(kName, add, Decision::no("neither input comes from a quantized op that can take the residual"));
      return false;
    }
    // Move `best` to just before the Add: its inputs are defined earlier still, its only reader was dq[side].
    const auto from = position(best), to = position(&add);
    std::rotate(nodes.begin() + from, nodes.begin() + from + 1, nodes.begin() + to);
    PerTensor zp = *per_tensor(dq[1 - side]);
    // The product was quantized before the Add: keep its saturation as a clamp (its rounding goes).
    const float a_scale = best->attr_f("y_scale", 1.f);
    const int64_t a_zp = best->attr_i("y_zero_point", 0);
    const bool a_u8 = best->attr_s("out_dtype", "") == "u8";
    best->attrs["pre_min"] = static_cast<float>((a_u8 ? 0 : -128) - a_zp) * a_scale;
    best->attrs["pre_max"] = static_cast<float>((a_u8 ? 255 : 127) - a_zp) * a_scale;
    best->inputs.resize(5, nullptr);
    best->inputs[4] = dq[1 - side]->inputs[0];
    set_params(*best, "z", zp);
    if (relu) best->attrs["activation"] = std::string("Relu");
    set_params(*best, "y", *qp);
    best->attrs["out_dtype"] = std::string(qp->type == DType::u8 ? "u8" : "i8");
    best->outputs[0]->dtype = qp->type;
    ctx.applied(kName, add, str_cat("residual Add", relu ? " + Relu" : "", " folded into ", best->describe()));
    rw.replace(q->outputs[0], best->outputs[0]);
    rw.erase_if_dead(q);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_qdq() { return std::make_unique<FoldQdq>(); }

}  // namespace kiln::passes

// fuse-epilogue: Conv / MatMul / Gemm followed by a constant bias Add, a residual Add and an
// activation becomes one kiln.FusedConv / kiln.FusedMatMul, so the output is written once.
//
//   y = Conv(x, w, b?) [+ c] [+ z] [act]      -> FusedConv(x, w, b', z) {activation}
//   y = MatMul(a, b)   [+ c] [+ z] [act]      -> FusedMatMul(a, b, c', z) {activation}
//   y = Gemm(a, b, C)  [+ c] [+ z] [act]      -> FusedMatMul(a, b, ..) {trans_b, alpha}
//
// c is a constant bias per output channel (Conv: [C], [C,1,1], [1,C,1,1]; a scalar too) or per
// output feature (MatMul: [N], [1,..,N]); it is folded into the node's bias (summed with Conv's
// own b). z is a non-constant tensor of exactly the output's shape (the residual of ResNet and
// transformer blocks). Activations: see fuse_activation.h. Each step needs the intermediate to
// have a single reader; otherwise the chain stops there and --explain says why.
//
// Gemm with transA = 0 always becomes FusedMatMul: transB -> trans_b, alpha kept, beta·C
// folded into Bias when C is a per-feature constant (or C taken as Z when it has the output's
// shape). Declined: transA = 1, f64/integer dtypes, a non-constant C with beta != 1, and C of
// other shapes. A Conv/MatMul with nothing to fuse is left as it is.
//
// Roots are visited last to first, so in Add(conv_a, conv_b) the later conv takes the Add as
// its residual and the earlier one's output becomes z.
#include <algorithm>

#include "fuse_activation.h"
#include "fuse_match.h"
#include "fuse_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "walk.h"

namespace kiln::passes {
namespace {

using fuse::ActivationMatch;

constexpr std::string_view kName = "fuse-epilogue";

// What the fused node will be made of, built up step by step.
struct Epilogue {
  Node* root = nullptr;
  bool conv = false;
  Value* a = nullptr;  // X or A
  Value* w = nullptr;  // W or B
  std::map<std::string, Attribute> attrs;
  Value* bias = nullptr;             // Conv's B, Gemm's C or an added [C]/[N] constant, as it is
  std::optional<Tensor> new_bias;    // or a bias computed here (folded, scaled, reshaped)
  Value* residual = nullptr;
  ActivationMatch act;
  std::vector<Node*> nodes;  // everything replaced, root first
  Value* out = nullptr;      // the value the fused node takes over
};

// A bias constant as one value per channel/feature: `c`'s dims must be all 1 except `axis`
// counted from the right (`from_right`), or c has one element (broadcast to `count`).
std::optional<std::vector<float>> per_channel(const Tensor& c, size_t from_right, int64_t count) {
  std::vector<float> out;
  if (c.numel() == 1 && count > 0) return std::vector<float>(count, static_cast<float>(c.as_double(0)));
  size_t r = c.rank();
  for (size_t i = 0; i < r; ++i) {
    bool is_axis = r - 1 - i == from_right;
    if (!is_axis && c.dim(i) != 1) return std::nullopt;
    if (is_axis && c.dim(i) != count) return std::nullopt;
  }
  if (from_right >= r) return std::nullopt;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<float>(c.as_double(i)));
  return out;
}

class FuseEpilogue : public Pass {
 public:
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "Conv/MatMul/Gemm + bias + residual Add + activation -> kiln.FusedConv / kiln.FusedMatMul";
  }

  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_compiled_graph(*m.graph, [&](Graph& g) { changed |= run_graph(m, g, ctx); });
    return changed;
  }

 private:
  static bool run_graph(Model& m, Graph& g, PassContext& ctx) {
    std::vector<Node*> roots;
    for (const auto& n : g.nodes())
      if (fuse::is_onnx(*n, "Conv") || fuse::is_onnx(*n, "MatMul") || fuse::is_onnx(*n, "Gemm")) roots.push_back(n.get());
    int64_t opset = m.opset("");
    bool changed = false;
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) {
      Node* root = *it;
      Epilogue e;
      Decision d = start(*root, e);
      if (!d) {
        ctx.decline(kName, *root, d);
        continue;
      }
      grow(e, opset, ctx);
      if (e.nodes.size() == 1 && !fuse::is_onnx(*root, "Gemm")) continue;  // nothing to fuse
      fuse::import_kiln_domain(m);
      rewrite(g, e, ctx);  // the root is gone after this
      changed = true;
    }
    return changed;
  }

  // The root itself: operands, attributes and (Gemm) its C.
  static Decision start(Node& root, Epilogue& e) {
    e.root = &root;
    e.nodes = {&root};
    e.out = root.outputs[0];
    e.a = root.inputs[0];
    e.w = root.inputs[1];
    if (!fuse::is_fusable_float(e.out->dtype))
      return Decision::no(str_cat("dtype ", dtype_name(e.out->dtype), ": fused ops compute in f32 (f16/bf16)"));
    if (fuse::is_onnx(root, "Conv")) {
      e.conv = true;
      e.attrs = root.attrs;
      e.bias = root.input(2);
      return Decision::yes();
    }
    if (fuse::is_onnx(root, "MatMul")) {
      if (!e.w->shape.rank_known || e.w->shape.rank() < 2) return Decision::no("B is not a matrix (rank < 2)");
      return Decision::yes();
    }
    // Gemm
    if (root.attr_i("transA", 0) != 0) return Decision::no("Gemm with transA = 1 has no FusedMatMul form");
    if (root.attr_i("transB", 0) != 0) e.attrs["trans_b"] = int64_t{1};
    float alpha = root.attr_f("alpha", 1.f), beta = root.attr_f("beta", 1.f);
    if (alpha != 1.f) e.attrs["alpha"] = alpha;
    Value* c = root.input(2);
    if (!c || beta == 0.f) return Decision::yes();
    const Shape& y = e.out->shape;
    if (const Tensor* t = fuse::constant_value(c)) {
      int64_t n = y.rank_known && y.rank() == 2 && y[1].is_static() ? y[1].value : -1;
      if (auto v = per_channel(*t, 0, n)) {
        if (beta == 1.f && is_vector_of(*t, n)) {
          e.bias = c;
          return Decision::yes();
        }
        for (float& x : *v) x *= beta;
        e.new_bias = Tensor::from_vector<float>({static_cast<int64_t>(v->size())}, *v);
        return Decision::yes();
      }
    }
    if (beta != 1.f) return Decision::no("Gemm C is not a per-feature constant and beta != 1");
    if (c->shape == y && fuse::fully_known(y)) {
      e.residual = c;
      return Decision::yes();
    }
    const Shape& cs = c->shape;
    bool per_feature = cs.rank_known && cs.rank() >= 1 && cs.rank() <= 2 && (cs.rank() == 1 || cs[0] == Dim(1)) &&
                       y.rank_known && cs[cs.rank() - 1] == y[1];
    if (!per_feature) return Decision::no(str_cat("Gemm C ", cs.str(), " is neither per-feature nor the output's shape"));
    e.bias = c;
    return Decision::yes();
  }

  // Extends the chain from e.out: bias, residual, activation, each optional, in that order.
  static void grow(Epilogue& e, int64_t opset, PassContext& ctx) {
    Node* add = next_add(e);
    if (add && fuse::is_constant(fuse::other_operand(*add, e.out))) {
      if (!take_bias(e, *fuse::constant_value(fuse::other_operand(*add, e.out)), ctx, *add)) return;
      advance(e, add);
      add = next_add(e);
    }
    if (add) {
      Decision d = residual_ok(e, fuse::other_operand(*add, e.out));
      if (!d) return ctx.decline(kName, *e.root, d);
      e.residual = fuse::other_operand(*add, e.out);
      advance(e, add);
    }
    if (auto act = fuse::match_activation(e.out, opset)) {
      e.act = *act;
      e.nodes.insert(e.nodes.end(), act->nodes.begin(), act->nodes.end());
      e.out = act->out;
      return;
    }
    explain_multiple_readers(e, ctx);
  }

  static void advance(Epilogue& e, Node* n) {
    e.nodes.push_back(n);
    e.out = n->outputs[0];
  }

  // The Add reading e.out when it is e.out's only reader.
  static Node* next_add(const Epilogue& e) {
    Node* u = fuse::single_user(e.out);
    if (!u || !fuse::is_onnx(*u, "Add") || !fuse::other_operand(*u, e.out)) return nullptr;
    return u;
  }

  static bool take_bias(Epilogue& e, const Tensor& c, PassContext& ctx, const Node& add) {
    const Shape& y = e.out->shape;
    if (!y.rank_known) return false;
    size_t from_right = e.conv ? y.rank() - 2 : 0;
    const Dim& channels = e.conv ? y[1] : y[y.rank() - 1];
    if (!channels.is_static() || c.rank() > y.rank()) return false;
    auto v = per_channel(c, from_right, channels.value);
    if (!v) {
      ctx.decline(kName, *e.root,
                  Decision::no(str_cat("constant ", dims_str(c.dims()), " added by ", add.describe(),
                                       " is not one value per output ", e.conv ? "channel" : "feature")));
      return false;
    }
    const Tensor* old = e.new_bias ? &*e.new_bias : fuse::constant_value(e.bias);
    if (e.bias && !old) {
      ctx.decline(kName, *e.root, Decision::no("the node already has a non-constant bias"));
      return false;
    }
    if (!old && is_vector_of(c, channels.value)) {  // already [C] f32: used as it is
      e.bias = fuse::other_operand(add, e.out);
      return true;
    }
    if (old)
      for (int64_t i = 0; i < channels.value; ++i) (*v)[i] += static_cast<float>(old->as_double(i));
    e.new_bias = Tensor::from_vector<float>({channels.value}, *v);
    return true;
  }

  // An f32 vector of n elements (usable as Bias without a copy).
  static bool is_vector_of(const Tensor& t, int64_t n) {
    return t.dtype() == DType::f32 && t.rank() == 1 && t.dim(0) == n;
  }

  static Decision residual_ok(const Epilogue& e, const Value* z) {
    if (e.residual) return Decision::no("a second residual Add (the node already has one)");
    if (z->dtype != e.out->dtype) return Decision::no("residual dtype differs");
    if (!(z->shape == e.out->shape) || !fuse::fully_known(z->shape))
      return Decision::no(str_cat("residual ", z->shape.str(), " is not of the output's shape ", e.out->shape.str()));
    return Decision::yes();
  }

  // Says why the chain stopped when e.out has several readers one of which could have fused.
  static void explain_multiple_readers(const Epilogue& e, PassContext& ctx) {
    std::vector<Node*> readers = fuse::users(e.out);
    if (readers.size() < 2 && !fuse::is_graph_output(e.out)) return;
    bool fusable = std::any_of(readers.begin(), readers.end(), [](const Node* n) {
      for (const char* op : {"Add", "Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu"})
        if (fuse::is_onnx(*n, op)) return true;
      return false;
    });
    if (fusable)
      ctx.decline(kName, *e.root,
                  Decision::no(str_cat("'", e.out->name, "' has ", readers.size(), " readers",
                                       fuse::is_graph_output(e.out) ? " and is a graph output" : "",
                                       ": it must stay in memory, the epilogue stops before it")));
  }

  static void rewrite(Graph& g, Epilogue& e, PassContext& ctx) {
    Value* bias = e.bias;
    if (e.new_bias) bias = g.add_initializer(g.unique_name(e.root->name + ".bias"), std::move(*e.new_bias));
    std::vector<Value*> ins = {e.a, e.w, bias, e.residual};
    while (!ins.empty() && ins.back() == nullptr) ins.pop_back();
    std::map<std::string, Attribute> attrs = e.attrs;
    if (e.act.act != ops::Activation::None) {
      attrs["activation"] = std::string(ops::activation_name(e.act.act));
      if (e.act.act == ops::Activation::LeakyRelu || e.act.act == ops::Activation::Clip ||
          e.act.act == ops::Activation::HardSigmoid)
        attrs["act_alpha"] = e.act.alpha;
      if (e.act.act == ops::Activation::Clip || e.act.act == ops::Activation::HardSigmoid)
        attrs["act_beta"] = e.act.beta;
    }
    std::string op = e.conv ? "FusedConv" : "FusedMatMul";
    std::string what = str_cat(e.nodes.size(), " nodes -> ", op, bias ? " +bias" : "", e.residual ? " +residual" : "",
                               e.act.act != ops::Activation::None ? " +" + std::string(ops::activation_name(e.act.act)) : "");
    Node* fused = fuse::replace_group(g, e.nodes, e.out, op, ins, std::move(attrs), std::string(ops::kKilnDomain), *e.root);
    ctx.applied(kName, *fused, what);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_epilogue() { return std::make_unique<FuseEpilogue>(); }

}  // namespace kiln::passes

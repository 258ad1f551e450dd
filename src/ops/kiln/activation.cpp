// Activations of the fused ops (the `activation` attribute) and the helpers every kiln op
// shares: calling ONNX reference kernels from the table, f32 conversion, the bias/residual
// adds and the activation of the epilogue.
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <string>

#include "kiln_common.h"

namespace kiln::ops {
namespace {

struct ActivationInfo {
  Activation act;
  std::string_view name;
};
constexpr ActivationInfo kActivations[] = {
    {Activation::None, ""},          {Activation::Relu, "Relu"},
    {Activation::LeakyRelu, "LeakyRelu"}, {Activation::Clip, "Clip"},
    {Activation::Sigmoid, "Sigmoid"}, {Activation::Tanh, "Tanh"},
    {Activation::Silu, "Silu"},      {Activation::HardSigmoid, "HardSigmoid"},
    {Activation::HardSwish, "HardSwish"}, {Activation::Gelu, "Gelu"},
    {Activation::GeluTanh, "GeluTanh"},
};

float sigmoid(float x) {
  if (x >= 0.f) return 1.f / (1.f + std::exp(-x));
  const float e = std::exp(x);  // exp(-x) would overflow for very negative x
  return e / (1.f + e);
}

float hard_sigmoid(float x, float alpha, float beta) { return std::max(0.f, std::min(1.f, alpha * x + beta)); }

}  // namespace

Activation parse_activation(std::string_view name) {
  for (const auto& a : kActivations)
    if (a.name == name) return a.act;
  std::string known;
  for (const auto& a : kActivations)
    if (!a.name.empty()) known += (known.empty() ? "" : ", ") + std::string(a.name);
  throw Error(str_cat("unknown activation '", name, "' (known: ", known, ", or \"\" for none)"));
}

std::string_view activation_name(Activation a) {
  for (const auto& k : kActivations)
    if (k.act == a) return k.name;
  throw Error(str_cat("activation code ", static_cast<int>(a), " is not a known activation"));
}

float apply_activation(Activation a, float x, float alpha, float beta) {
  switch (a) {
    case Activation::None: return x;
    case Activation::Relu: return x < 0.f ? 0.f : x;  // keeps NaN, like the Relu op
    case Activation::LeakyRelu: return x < 0.f ? alpha * x : x;
    case Activation::Clip: return x < alpha ? alpha : (x > beta ? beta : x);
    case Activation::Sigmoid: return sigmoid(x);
    case Activation::Tanh: return std::tanh(x);
    case Activation::Silu: return x * sigmoid(x);
    case Activation::HardSigmoid: return hard_sigmoid(x, alpha, beta);
    case Activation::HardSwish: return x * hard_sigmoid(x, 1.f / 6.f, 0.5f);
    case Activation::Gelu: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case Activation::GeluTanh: {
      const float k = 0.7978845608028654f;  // sqrt(2 / pi)
      return 0.5f * x * (1.f + std::tanh(k * (x + 0.044715f * x * x * x)));
    }
  }
  throw Error(str_cat("activation code ", static_cast<int>(a), " is not a known activation"));
}

ActivationSpec activation_of(const Node& n) {
  ActivationSpec s;
  s.act = parse_activation(n.attr_s("activation", ""));
  // Defaults are those of the ONNX op each activation stands for.
  float alpha = 0, beta = 0;
  switch (s.act) {
    case Activation::LeakyRelu: alpha = 0.01f; break;
    case Activation::Clip:
      alpha = -std::numeric_limits<float>::infinity();
      beta = std::numeric_limits<float>::infinity();
      break;
    case Activation::HardSigmoid: alpha = 0.2f, beta = 0.5f; break;
    default: break;
  }
  s.alpha = n.attr_f("act_alpha", alpha);
  s.beta = n.attr_f("act_beta", beta);
  return s;
}

namespace kiln_domain {

const OpDef& onnx_op(std::string_view name) {
  const OpDef* d = find_op("", name);
  KILN_CHECK(d != nullptr, "kiln ops: ONNX op '", name, "' is missing from the op table");
  return *d;
}

Tensor run_onnx_kernel(const KernelContext& c, std::string_view name, std::vector<const Tensor*> inputs) {
  KernelContext inner(c.node(), c.opset(), std::move(inputs), nullptr, c.threads());
  onnx_op(name).kernel(inner);
  KILN_CHECK(!inner.outputs().empty() && inner.outputs()[0].defined(), c.node().describe(), ": ", name,
             " produced no output");
  return std::move(inner.outputs()[0]);
}

double activation_flops(Activation a) {
  auto per_element = [](std::string_view op) {
    // One element through the op's own cost function.
    Node probe;
    probe.op = std::string(op);
    const OpDef& d = onnx_op(op);
    CostContext c{probe, {{1}}, {DType::f32}, {{1}}, {DType::f32}};
    return d.cost ? d.cost(c).flops : cost_elementwise(c).flops;
  };
  switch (a) {
    case Activation::None: return 0;
    case Activation::Silu: return per_element("Sigmoid") + per_element("Mul");
    case Activation::GeluTanh: return per_element("Gelu");
    default: return per_element(activation_name(a));
  }
}

std::vector<AttrSpec> activation_attrs() {
  return {{"activation", AttrKind::String}, {"act_alpha", AttrKind::Float}, {"act_beta", AttrKind::Float}};
}

Tensor f32_input(const KernelContext& c, size_t i) {
  const Tensor& t = c.input(i);
  DType dt = t.dtype();
  KILN_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, c.node().describe(), ": input ", i, " is ",
             dtype_name(dt), "; kiln fused ops compute in f32 (f16/bf16 through f32)");
  return to_f32(t);
}

std::vector<AttrSpec> lowering_attrs() {
  return {{"packed", AttrKind::Int}, {"isa", AttrKind::String}, {"tactic", AttrKind::String},
          {"w_shape", AttrKind::Ints}, {"x_blocked", AttrKind::Int}, {"y_blocked", AttrKind::Int}};
}

std::optional<Node> logical_weight_node(const Node& n, Value& standin) {
  if (!n.has_attr("packed") || !n.input(1)) return std::nullopt;
  KILN_CHECK(n.has_attr("w_shape"), n.describe(), ": a packed weight needs its logical shape (attribute w_shape)");
  standin.name = n.inputs[1]->name;
  standin.dtype = n.inputs[1]->dtype;
  standin.shape = Shape::of(n.attr_ints("w_shape", {}));
  Node copy = n;
  copy.inputs[1] = &standin;
  return copy;
}

CostContext logical_weight_cost(const CostContext& c) {
  CostContext k = c;
  if (c.node.has_attr("packed") && k.in_dims.size() > 1) k.in_dims[1] = c.node.attr_ints("w_shape", {});
  return k;
}

void refuse_packed(const KernelContext& c) {
  KILN_CHECK(!c.node().has_attr("packed"), c.node().describe(),
             ": has a pre-packed weight (attribute 'packed') that only the compiled runtime can run; the "
             "reference interpreter needs the graph from before lowering");
}

void add_into(const KernelContext& c, Tensor& y, const Tensor& t, const char* what) {
  Tensor sum = run_onnx_kernel(c, "Add", {&y, &t});
  KILN_CHECK(sum.dims() == y.dims(), c.node().describe(), ": ", what, " ", dims_str(t.dims()),
             " would broadcast the output ", dims_str(y.dims()), " to ", dims_str(sum.dims()));
  y = std::move(sum);
}

void activate(Tensor& y, const ActivationSpec& a) {
  if (a.act == Activation::None) return;
  float* p = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = apply_activation(a.act, p[i], a.alpha, a.beta);
}

void infer_channel_means_output(InferContext& c) {
  if (!c.has_output(1)) return;
  const Shape& y = c.node().outputs[0]->shape;
  if (!y.rank_known) return c.set_output(1, c.node().outputs[0]->dtype, Shape::unknown_rank());
  std::vector<Dim> m = {y[0], y[1]};
  m.resize(y.rank(), Dim(1));
  c.set_output(1, c.node().outputs[0]->dtype, Shape(m));
}

void check_broadcasts_into(const InferContext& c, const Shape& out, size_t input, const char* what) {
  if (!c.has_input(input) || !out.rank_known || !c.in_shape(input).rank_known) return;
  const Shape& s = c.in_shape(input);
  auto b = broadcast_shapes(out, s);
  if (!b || b->rank() != out.rank())
    c.fail(str_cat(what, " ", s.str(), " does not broadcast to the output ", out.str()));
  for (size_t i = 0; i < out.rank(); ++i)
    if (out[i].is_static() && (*b)[i].is_static() && out[i].value != (*b)[i].value)
      c.fail(str_cat(what, " ", s.str(), " would grow the output ", out.str()));
}

std::vector<AttrSpec> prefixed_attrs(std::string_view prefix, const std::vector<AttrSpec>& specs) {
  static std::mutex mu;
  static std::deque<std::string> names;  // never moves its strings
  std::lock_guard<std::mutex> lock(mu);
  std::vector<AttrSpec> out;
  for (const AttrSpec& s : specs) {
    names.push_back(std::string(prefix) + std::string(s.name));
    out.push_back({names.back(), s.kind});
  }
  return out;
}

Node prefixed_part(const Node& n, std::string_view prefix, const char* op, const char* part) {
  Node d;
  d.op = op, d.domain = kKilnDomain, d.name = n.name + ":" + part;
  for (const auto& [k, v] : n.attrs)
    if (k.rfind(prefix, 0) == 0) d.attrs[k.substr(prefix.size())] = v;
  return d;
}

}  // namespace kiln_domain
}  // namespace kiln::ops

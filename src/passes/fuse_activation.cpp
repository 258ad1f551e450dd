#include "fuse_activation.h"

#include <cmath>
#include <limits>

#include "fuse_match.h"

namespace kiln::passes::fuse {
namespace {

using ops::Activation;

ActivationMatch single(Activation act, Node* n, float alpha = 0, float beta = 0) {
  return ActivationMatch{act, alpha, beta, n->outputs[0], {n}};
}

// Clip's bounds: constant inputs (opset >= 11) or attributes (before); nullopt when an input
// bound is not a constant.
std::optional<std::pair<float, float>> clip_bounds(const Node& n, int64_t opset) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (opset < 11) return std::make_pair(n.attr_f("min", lo), n.attr_f("max", hi));
  for (size_t i = 1; i <= 2; ++i) {
    if (!n.input(i)) continue;
    auto s = scalar_constant(n.input(i));
    if (!s) return std::nullopt;
    (i == 1 ? lo : hi) = static_cast<float>(*s);
  }
  return std::make_pair(lo, hi);
}

// The last steps of both GELU forms: out = x · g · 0.5 where g = 1 + erf(..) or 1 + tanh(..)
// is already matched, in the association orders (x·g)·0.5, (x·0.5)·g, x·(g·0.5). Appends the
// Mul nodes to `nodes` and returns out, plus the Mul that reads x.
struct HalfProduct {
  Value* out = nullptr;
  Node* x_reader = nullptr;
};
std::optional<HalfProduct> match_half_product(Value* x, Value* g, std::vector<Node*>& nodes) {
  Node* m1 = single_user(g);
  if (!m1 || !is_onnx(*m1, "Mul")) return std::nullopt;
  Value* other = other_operand(*m1, g);
  if (other == x) {  // (x · g) · 0.5
    Node* m2 = single_user(m1->outputs[0]);
    if (!m2 || !is_onnx(*m2, "Mul") || !is_scalar(other_operand(*m2, m1->outputs[0]), 0.5)) return std::nullopt;
    nodes.insert(nodes.end(), {m1, m2});
    return HalfProduct{m2->outputs[0], m1};
  }
  if (Node* h = produced_by(other, "Mul")) {  // (x · 0.5) · g
    if (other_operand(*h, x) && is_scalar(other_operand(*h, x), 0.5) && single_user(other) == m1) {
      nodes.insert(nodes.end(), {h, m1});
      return HalfProduct{m1->outputs[0], h};
    }
  }
  if (is_scalar(other, 0.5)) {  // x · (g · 0.5)
    Node* m2 = single_user(m1->outputs[0]);
    if (!m2 || !is_onnx(*m2, "Mul") || other_operand(*m2, m1->outputs[0]) != x) return std::nullopt;
    nodes.insert(nodes.end(), {m1, m2});
    return HalfProduct{m2->outputs[0], m2};
  }
  return std::nullopt;
}

// g = Add(Unary(inner), 1) where Unary is the single user of inner: returns g.
Value* one_plus(Node* unary, std::vector<Node*>& nodes) {
  Node* add = single_user(unary->outputs[0]);
  if (!add || !is_onnx(*add, "Add") || !is_scalar(other_operand(*add, unary->outputs[0]), 1.0)) return nullptr;
  nodes.insert(nodes.end(), {unary, add});
  return add->outputs[0];
}

// x·0.5·(1 + erf(x/√2)), x/√2 written as Div by √2 or Mul by 1/√2.
std::optional<ActivationMatch> match_gelu_erf(Value* x, Node* scaled) {
  Value* c = other_operand(*scaled, x);
  bool div = is_onnx(*scaled, "Div") && scaled->inputs[0] == x && is_scalar(c, std::sqrt(2.0));
  bool mul = is_onnx(*scaled, "Mul") && is_scalar(c, std::sqrt(0.5));
  if (!div && !mul) return std::nullopt;
  Node* erf = single_user(scaled->outputs[0]);
  if (!erf || !is_onnx(*erf, "Erf")) return std::nullopt;
  std::vector<Node*> nodes = {scaled};
  Value* g = one_plus(erf, nodes);
  if (!g) return std::nullopt;
  auto tail = match_half_product(x, g, nodes);
  if (!tail || !used_only_by(x, {scaled, tail->x_reader})) return std::nullopt;
  return ActivationMatch{Activation::Gelu, 0, 0, tail->out, nodes};
}

// x·0.5·(1 + tanh(0.7978846·(x + 0.044715·x³))) as PyTorch/GPT-2 export it.
std::optional<ActivationMatch> match_gelu_tanh(Value* x, Node* pow) {
  if (!is_onnx(*pow, "Pow") || pow->inputs[0] != x || !is_scalar(pow->inputs[1], 3.0)) return std::nullopt;
  Node* cubic = single_user(pow->outputs[0]);
  if (!cubic || !is_onnx(*cubic, "Mul") || !is_scalar(other_operand(*cubic, pow->outputs[0]), 0.044715))
    return std::nullopt;
  Node* inner = single_user(cubic->outputs[0]);
  if (!inner || !is_onnx(*inner, "Add") || other_operand(*inner, cubic->outputs[0]) != x) return std::nullopt;
  Node* scaled = single_user(inner->outputs[0]);
  if (!scaled || !is_onnx(*scaled, "Mul") ||
      !is_scalar(other_operand(*scaled, inner->outputs[0]), std::sqrt(2.0 / M_PI)))
    return std::nullopt;
  Node* tanh = single_user(scaled->outputs[0]);
  if (!tanh || !is_onnx(*tanh, "Tanh")) return std::nullopt;
  std::vector<Node*> nodes = {pow, cubic, inner, scaled};
  Value* g = one_plus(tanh, nodes);
  if (!g) return std::nullopt;
  auto tail = match_half_product(x, g, nodes);
  if (!tail || !used_only_by(x, {pow, inner, tail->x_reader})) return std::nullopt;
  return ActivationMatch{Activation::GeluTanh, 0, 0, tail->out, nodes};
}

// x · gate(x) where gate is the single-input node `gate` (Sigmoid for SiLU, HardSigmoid for
// HardSwish) and x has exactly these two readers.
std::optional<Node*> times_gate(Value* x, Node* gate) {
  Node* mul = single_user(gate->outputs[0]);
  if (!mul || !is_onnx(*mul, "Mul") || other_operand(*mul, gate->outputs[0]) != x) return std::nullopt;
  if (!used_only_by(x, {gate, mul})) return std::nullopt;
  return mul;
}

}  // namespace

std::optional<ActivationMatch> match_activation(Value* x, int64_t opset) {
  if (is_graph_output(x)) return std::nullopt;
  std::vector<Node*> readers = users(x);
  if (readers.size() == 1) {
    Node* n = readers[0];
    if (n->inputs.empty() || n->inputs[0] != x) return std::nullopt;
    if (is_onnx(*n, "Relu")) return single(Activation::Relu, n);
    if (is_onnx(*n, "Tanh")) return single(Activation::Tanh, n);
    if (is_onnx(*n, "Sigmoid")) return single(Activation::Sigmoid, n);
    if (is_onnx(*n, "HardSwish")) return single(Activation::HardSwish, n);
    if (is_onnx(*n, "LeakyRelu")) return single(Activation::LeakyRelu, n, n->attr_f("alpha", 0.01f));
    if (is_onnx(*n, "HardSigmoid"))
      return single(Activation::HardSigmoid, n, n->attr_f("alpha", 0.2f), n->attr_f("beta", 0.5f));
    if (is_onnx(*n, "Gelu")) {
      std::string approx = n->attr_s("approximate", "none");
      if (approx == "none" || approx == "tanh")
        return single(approx == "tanh" ? Activation::GeluTanh : Activation::Gelu, n);
    }
    if (is_onnx(*n, "Clip"))
      if (auto b = clip_bounds(*n, opset)) return single(Activation::Clip, n, b->first, b->second);
    return std::nullopt;
  }
  for (Node* r : readers) {
    if (is_onnx(*r, "Sigmoid") && r->inputs[0] == x)
      if (auto mul = times_gate(x, r)) return ActivationMatch{Activation::Silu, 0, 0, (*mul)->outputs[0], {r, *mul}};
    if (is_onnx(*r, "HardSigmoid") && r->inputs[0] == x && std::abs(r->attr_f("alpha", 0.2f) - 1.f / 6.f) < 1e-6f &&
        r->attr_f("beta", 0.5f) == 0.5f)
      if (auto mul = times_gate(x, r))
        return ActivationMatch{Activation::HardSwish, 0, 0, (*mul)->outputs[0], {r, *mul}};
    if (is_onnx(*r, "Div") || is_onnx(*r, "Mul"))
      if (auto g = match_gelu_erf(x, r)) return g;
    if (is_onnx(*r, "Pow"))
      if (auto g = match_gelu_tanh(x, r)) return g;
  }
  return std::nullopt;
}

}  // namespace kiln::passes::fuse

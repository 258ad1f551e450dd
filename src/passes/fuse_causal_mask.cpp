#include "fuse_causal_mask.h"

#include <algorithm>
#include <optional>

#include "fuse_match.h"

namespace kiln::passes::fuse {
namespace {

// The value of a one-element integer tensor computed from shapes, as a linear expression of
// the dims it reads; nullopt when it is anything else.
std::optional<DimExpr> dim_value(const Value* v, int depth = 0) {
  if (!v || depth > 12) return std::nullopt;
  if (const Tensor* t = constant_value(v)) {
    if (t->numel() != 1 || !dtype_is_integer(t->dtype())) return std::nullopt;
    DimExpr e;
    e.constant = t->as_int64(0);
    return e;
  }
  const Node* p = v->producer;
  if (!p || !(p->domain.empty() || p->domain == "ai.onnx")) return std::nullopt;
  if (p->op == "Unsqueeze" || p->op == "Squeeze" || p->op == "Reshape" || p->op == "Cast" || p->op == "Identity")
    return dim_value(p->inputs[0], depth + 1);
  if (p->op == "Add" || p->op == "Sub") {
    auto a = dim_value(p->inputs[0], depth + 1), b = dim_value(p->inputs[1], depth + 1);
    if (!a || !b) return std::nullopt;
    return p->op == "Add" ? *a + *b : *a - *b;
  }
  if (p->op == "Gather") {
    const Node* shape = produced_by(p->inputs[0], "Shape");
    auto idx = scalar_constant(p->inputs[1]);
    if (!shape || !idx || shape->has_attr("start") || shape->has_attr("end")) return std::nullopt;
    const Shape& s = shape->inputs[0]->shape;
    int64_t i = static_cast<int64_t>(*idx), r = static_cast<int64_t>(s.rank());
    if (!s.rank_known || i < -r || i >= r) return std::nullopt;
    return DimExpr::of(s[i < 0 ? i + r : i]);
  }
  return std::nullopt;
}

bool same(const DimExpr& a, const DimExpr& b) {
  DimExpr d = a - b;
  return d.terms.empty() && d.constant == 0;
}

DimExpr constant_expr(int64_t c) {
  DimExpr e;
  e.constant = c;
  return e;
}

// One axis of the buffer as the mask sees it: [begin, end) of the buffer's length.
struct Window {
  DimExpr begin = constant_expr(0), end;
  bool sliced = false;
};

// Element k of a Slice parameter (input from opset 10, attribute before).
std::optional<DimExpr> slice_param(const Node& s, size_t input, const char* attr, size_t k, size_t count) {
  if (s.inputs.size() > 1 || s.has_attr("starts")) {
    if (input >= s.inputs.size() || !s.inputs[input]) return std::nullopt;
    if (const Tensor* t = constant_value(s.inputs[input])) {
      if (static_cast<size_t>(t->numel()) != count) return std::nullopt;
      return constant_expr(t->as_int64(k));
    }
    if (count != 1) return std::nullopt;
    return dim_value(s.inputs[input]);
  }
  std::vector<int64_t> v = s.attr_ints(attr, {});
  if (k >= v.size()) return std::nullopt;
  return constant_expr(v[k]);
}

// Applies one Slice to the windows of the last two axes (rank r); false when it cannot be
// followed (other axes, steps != 1, non-constant axes, or an axis sliced twice).
bool apply_slice(const Node& s, int64_t r, int64_t L[2], Window w[2]) {
  bool opset10 = s.inputs.size() > 1;
  std::vector<int64_t> axes;
  if (opset10) {
    if (s.inputs.size() > 3 && s.inputs[3]) {
      const Tensor* a = constant_value(s.inputs[3]);
      if (!a) return false;
      for (int64_t i = 0; i < a->numel(); ++i) axes.push_back(a->as_int64(i));
    }
    if (s.inputs.size() > 4 && s.inputs[4]) {
      const Tensor* st = constant_value(s.inputs[4]);
      if (!st) return false;
      for (int64_t i = 0; i < st->numel(); ++i)
        if (st->as_int64(i) != 1) return false;
    }
  } else {
    axes = s.attr_ints("axes", {});
  }
  size_t count = axes.size();
  for (size_t k = 0; k < count; ++k) {
    int64_t axis = axes[k] < 0 ? axes[k] + r : axes[k];
    if (axis != r - 2 && axis != r - 1) return false;
    Window& win = w[axis - (r - 2)];
    int64_t len = L[axis - (r - 2)];
    if (win.sliced) return false;
    auto b = slice_param(s, 1, "starts", k, count), e = slice_param(s, 2, "ends", k, count);
    if (!b || !e) return false;
    // Constant bounds follow Slice: negative counts from the end, ends clamp to the length.
    auto fix = [len](DimExpr x) {
      if (!x.terms.empty()) return x;
      if (x.constant < 0) x.constant += len;
      x.constant = std::max<int64_t>(0, std::min(x.constant, len));
      return x;
    };
    win.begin = fix(*b);
    win.end = fix(*e);
    win.sliced = true;
  }
  return true;
}

}  // namespace

Decision is_causal_mask(const Value* cond, bool masked_when, const Value* scores) {
  // Walk to the constant buffer through Cast-to-bool, Not and Slice.
  std::vector<const Node*> slices;
  const Value* v = cond;
  const Tensor* buffer = nullptr;
  for (int depth = 0; depth < 16 && !buffer; ++depth) {
    if ((buffer = constant_value(v))) break;
    const Node* p = v->producer;
    if (!p) return Decision::no("the mask condition is a graph input, not a constant buffer");
    if (is_onnx(*p, "Not")) {
      masked_when = !masked_when;
    } else if (is_onnx(*p, "Cast")) {
      if (p->inputs[0]->dtype != DType::boolean) return Decision::no("the mask condition is cast from a non-bool");
    } else if (is_onnx(*p, "Slice")) {
      slices.push_back(p);
    } else {
      return Decision::no(str_cat("the mask condition is computed by ", p->op, ", not sliced from a constant"));
    }
    v = p->inputs[0];
  }
  if (!buffer || buffer->dtype() != DType::boolean || buffer->rank() < 2)
    return Decision::no("the mask condition is not a boolean buffer of rank >= 2");
  int64_t r = static_cast<int64_t>(buffer->rank());
  for (int64_t i = 0; i + 2 < r; ++i)
    if (buffer->dim(i) != 1) return Decision::no("the mask buffer varies over batch or heads");
  int64_t L[2] = {buffer->dim(r - 2), buffer->dim(r - 1)};
  Window w[2];
  w[0].end = constant_expr(L[0]);
  w[1].end = constant_expr(L[1]);
  for (auto it = slices.rbegin(); it != slices.rend(); ++it)  // the slice nearest the buffer first
    if (!apply_slice(**it, r, L, w)) return Decision::no("the mask buffer is sliced in a way not followed");
  // allowed(a, b) = buffer[a][b] != masked_when must be b <= a + off for one offset off.
  auto allowed = [&](int64_t a, int64_t b) {
    return (static_cast<const uint8_t*>(buffer->raw())[a * L[1] + b] != 0) != masked_when;
  };
  int64_t off = -1;
  while (off + 1 < L[1] && allowed(0, off + 1)) ++off;
  for (int64_t a = 0; a < L[0]; ++a)
    for (int64_t b = 0; b < L[1]; ++b)
      if (allowed(a, b) != (b <= a + off)) return Decision::no("the mask buffer is not lower-triangular");
  const Shape& s = scores->shape;
  if (!s.rank_known || s.rank() < 2) return Decision::no("the scores' shape is unknown");
  auto sq = DimExpr::of(s[s.rank() - 2]), sk = DimExpr::of(s[s.rank() - 1]);
  if (!sq || !sk) return Decision::no("the scores' query/key lengths are unknown");
  if (!same(w[0].end - w[0].begin, *sq) || !same(w[1].end - w[1].begin, *sk))
    return Decision::no("the sliced mask is not [queries, keys] of the scores");
  DimExpr shift = *sk - *sq;
  if (!same(w[0].begin - w[1].begin + constant_expr(off), shift))
    return Decision::no("the mask's diagonal is not aligned to the last query (j <= i + keys - queries)");
  if (shift.constant < 0 || std::any_of(shift.terms.begin(), shift.terms.end(), [](const auto& t) { return t.second < 0; }))
    return Decision::no("fewer keys than queries: rows would be fully masked");
  return Decision::yes();
}

}  // namespace kiln::passes::fuse

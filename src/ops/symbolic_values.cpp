#include "symbolic_values.h"

#include "op_helpers.h"

namespace kiln::ops {
namespace {

constexpr int64_t kMaxElems = 16;

std::optional<SymbolicValue> value_of(const Value* v, const std::map<const Value*, Tensor>& known,
                                      const SymbolicValues& sv) {
  if (!v) return std::nullopt;
  auto s = sv.find(v);
  if (s != sv.end()) return s->second;
  const Tensor* t = v->initializer ? &*v->initializer : nullptr;
  if (!t) {
    auto k = known.find(v);
    if (k != known.end()) t = &k->second;
  }
  if (!t || t->rank() > 1 || t->numel() > kMaxElems) return std::nullopt;
  if (t->dtype() != DType::i64 && t->dtype() != DType::i32) return std::nullopt;
  SymbolicValue out;
  out.scalar = t->rank() == 0;
  for (int64_t i = 0; i < t->numel(); ++i) out.elems.emplace_back(t->as_int64(i));
  return out;
}

// Records every small result, static ones too: Gather(Shape(x), 0) is a plain 1 even when
// x has other symbolic dims, and is no constant the evaluator could have computed.
void record(const Value* out, SymbolicValue v, SymbolicValues& sv) {
  if (out && static_cast<int64_t>(v.elems.size()) <= kMaxElems) sv[out] = std::move(v);
}

Dim arith(const std::string& op, const Dim& a, const Dim& b) {
  if (!a.is_static() || !b.is_static()) {
    // Linear combinations stay symbolic: past+seq, 2*N, N-1.
    auto ea = DimExpr::of(a), eb = DimExpr::of(b);
    if (!ea || !eb) return Dim::unknown();
    if (op == "Add") return (*ea + *eb).to_dim();
    if (op == "Sub") return (*ea - *eb).to_dim();
    if (op == "Mul" && b.is_static()) return ea->scaled(b.value).to_dim();
    if (op == "Mul" && a.is_static()) return eb->scaled(a.value).to_dim();
    if (op == "Div" && b.is_static() && b.value == 1) return a;
    return Dim::unknown();
  }
  if (op == "Add") return Dim(a.value + b.value);
  if (op == "Sub") return Dim(a.value - b.value);
  if (op == "Mul") return Dim(a.value * b.value);
  if (op == "Div" && b.value != 0) return Dim(a.value / b.value);
  return Dim::unknown();
}

}  // namespace

void propagate_symbolic(const Node& n, const std::map<const Value*, Tensor>& known, SymbolicValues& sv) {
  if (n.outputs.empty() || !n.outputs[0]) return;
  const Value* out = n.outputs[0];
  auto in = [&](size_t i) { return value_of(n.input(i), known, sv); };
  if (n.op == "Shape") {
    const Value* x = n.input(0);
    if (!x || !x->shape.rank_known) return;
    int64_t r = static_cast<int64_t>(x->shape.rank());
    int64_t start = n.attr_i("start", 0), end = n.attr_i("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    SymbolicValue v;
    for (int64_t i = start; i < end; ++i) v.elems.push_back(x->shape.dims[i]);
    record(out, v, sv);
  } else if (n.op == "Cast" || n.op == "Identity") {
    if (auto a = in(0)) record(out, *a, sv);
  } else if (n.op == "Gather") {
    auto data = in(0);
    auto idx = value_of(n.input(1), known, {});  // indices must be true constants
    if (!data || data->scalar || !idx || n.attr_i("axis", 0) != 0) return;
    SymbolicValue v;
    v.scalar = idx->scalar;
    int64_t len = static_cast<int64_t>(data->elems.size());
    for (const Dim& i : idx->elems) {
      if (!i.is_static() || i.value < -len || i.value >= len) return;
      v.elems.push_back(data->elems[i.value < 0 ? i.value + len : i.value]);
    }
    record(out, v, sv);
  } else if (n.op == "Unsqueeze" || n.op == "Squeeze") {
    auto a = in(0);
    if (!a) return;
    SymbolicValue v = *a;
    v.scalar = n.op == "Squeeze" && v.elems.size() == 1;
    if (n.op == "Unsqueeze" && !a->scalar) return;  // only 0-D -> 1-D is a shape idiom
    record(out, v, sv);
  } else if (n.op == "Concat") {
    if (n.attr_i("axis", 0) != 0 && n.attr_i("axis", 0) != -1) return;
    SymbolicValue v;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto a = in(i);
      if (!a || a->scalar) return;
      v.elems.insert(v.elems.end(), a->elems.begin(), a->elems.end());
    }
    record(out, v, sv);
  } else if (n.op == "Slice" && n.inputs.size() >= 3) {
    auto data = in(0);
    auto starts = value_of(n.input(1), known, {}), ends = value_of(n.input(2), known, {});
    if (!data || !starts || !ends || starts->elems.size() != 1 || ends->elems.size() != 1) return;
    if (n.input(3) || n.input(4)) {
      auto axes = value_of(n.input(3), known, {}), steps = value_of(n.input(4), known, {});
      if ((n.input(3) && (!axes || axes->elems[0].value != 0)) || (n.input(4) && (!steps || steps->elems[0].value != 1)))
        return;
    }
    int64_t len = static_cast<int64_t>(data->elems.size());
    int64_t s = starts->elems[0].value, e = ends->elems[0].value;
    if (s < 0) s += len;
    if (e < 0) e += len;
    s = std::clamp<int64_t>(s, 0, len);
    e = std::clamp<int64_t>(e, 0, len);
    SymbolicValue v;
    for (int64_t i = s; i < e; ++i) v.elems.push_back(data->elems[i]);
    record(out, v, sv);
  } else if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div") {
    auto a = in(0), b = in(1);
    if (!a || !b) return;
    size_t len = std::max(a->elems.size(), b->elems.size());
    if ((a->elems.size() != len && a->elems.size() != 1) || (b->elems.size() != len && b->elems.size() != 1)) return;
    SymbolicValue v;
    v.scalar = a->scalar && b->scalar;
    for (size_t i = 0; i < len; ++i)
      v.elems.push_back(arith(n.op, a->elems[a->elems.size() == 1 ? 0 : i], b->elems[b->elems.size() == 1 ? 0 : i]));
    record(out, v, sv);
  }
}

void refine_with_symbolic(const Node& n, const std::map<const Value*, Tensor>& known, const SymbolicValues& sv) {
  if (n.op == "Range" && n.outputs.size() == 1 && n.outputs[0] && !n.outputs[0]->shape.is_static()) {
    // Length ceil((limit - start) / delta); symbolic when limit - start is (delta = 1).
    auto start = value_of(n.input(0), known, sv), limit = value_of(n.input(1), known, sv);
    auto delta = value_of(n.input(2), known, sv);
    if (!start || !limit || !delta || start->elems.size() != 1 || limit->elems.size() != 1 ||
        delta->elems.size() != 1 || !delta->elems[0].is_static() || delta->elems[0].value != 1)
      return;
    auto s = DimExpr::of(start->elems[0]), l = DimExpr::of(limit->elems[0]);
    if (!s || !l) return;
    Dim len = (*l - *s).to_dim();
    if (!len.is_unknown()) n.outputs[0]->shape = Shape({len});
    return;
  }
  if (n.outputs.empty() || !n.outputs[0] || (n.inputs.size() < 2 && n.op != "ConstantOfShape")) return;
  Value* out = n.outputs[0];
  if (out->shape.is_static()) return;
  const Value* shape_in = n.op == "ConstantOfShape" ? n.input(0) : n.input(1);
  auto it = shape_in ? sv.find(shape_in) : sv.end();
  if (it == sv.end()) return;
  const std::vector<Dim>& target = it->second.elems;
  Shape refined;
  if (n.op == "Reshape") {
    const Shape& xs = n.input(0)->shape;
    bool allowzero = n.attr_i("allowzero", 0) != 0;
    for (size_t i = 0; i < target.size(); ++i) {
      Dim d = target[i];
      if (d.is_static() && d.value == 0 && !allowzero) {
        if (!xs.rank_known || i >= xs.rank()) return;
        d = xs.dims[i];
      }
      if (d.is_static() && d.value == -1) d = Dim::unknown();
      refined.dims.push_back(d);
    }
    // One unknown (-1) dim: solve it when the known dims divide the input's numel, or when
    // the input and output share all other dims symbolically (e.g. [N,128,768] -> [N,128,12,-1]).
    int unknowns = 0;
    for (const Dim& d : refined.dims) unknowns += d.is_unknown();
    if (unknowns == 1 && xs.rank_known) {
      std::map<std::string, int> syms;
      int64_t in_static = 1, out_static = 1;
      for (const Dim& d : xs.dims) {
        if (d.is_static()) in_static *= d.value;
        else if (d.is_symbolic()) syms[d.symbol]++;
        else return;
      }
      for (const Dim& d : refined.dims) {
        if (d.is_static()) out_static *= d.value;
        else if (d.is_symbolic()) {
          if (--syms[d.symbol] < 0) return;
        }
      }
      for (const auto& [s, c] : syms)
        if (c != 0) return;
      if (out_static == 0 || in_static % out_static != 0) return;
      for (Dim& d : refined.dims)
        if (d.is_unknown()) d = Dim(in_static / out_static);
    }
  } else if (n.op == "Expand") {
    auto b = broadcast_shapes(n.input(0)->shape, Shape(target));
    if (!b) return;
    refined = *b;
  } else if (n.op == "ConstantOfShape") {
    refined = Shape(target);
  } else {
    return;
  }
  // Keep whatever the op's own inference knew better.
  if (out->shape.rank_known && out->shape.rank() == refined.rank())
    for (size_t i = 0; i < refined.rank(); ++i)
      if (!out->shape.dims[i].is_unknown()) refined.dims[i] = out->shape.dims[i];
  out->shape = refined;
}

}  // namespace kiln::ops

// Pad: constant / reflect / edge, pads from the attribute (opset < 11) or input 1;
// negative pads crop. Each output dim maps to a source index (or "constant") through a
// per-dim table; rows of the innermost dim are copied with memcpy where contiguous.
#include <algorithm>

#include <cstring>

#include "kiln/ops/views.h"
#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

std::optional<std::vector<int64_t>> pads_of(const Node& n, int64_t opset, const Tensor* pads_input) {
  if (opset < 11) {
    if (n.has_attr("pads")) return n.attr_ints("pads", {});
    if (n.has_attr("paddings")) return n.attr_ints("paddings", {});  // opset 1 name
    throw Error(str_cat(n.describe(), ": attribute 'pads' is required"));
  }
  if (!pads_input) return std::nullopt;
  return pads_input->to_int64_vector();
}

void pad_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  DType dt = c.in_dtype(0);
  if (!s.rank_known) return c.set_output(0, dt, Shape::unknown_rank());
  auto pads = pads_of(c.node(), c.opset(), c.opset() >= 11 ? c.in_const(1) : nullptr);
  const size_t r = s.rank();
  if (!pads) return c.set_output(0, dt, unknown_dims(r));
  if (pads->size() != 2 * r) c.fail(str_cat("pads has ", pads->size(), " entries for rank ", r, " (need ", 2 * r, ")"));
  Shape out = s;
  for (int64_t p : *pads)
    if (p < -(int64_t{1} << 40) || p > (int64_t{1} << 40)) c.fail(str_cat("pads ", dims_str(*pads), " are out of range"));
  for (size_t i = 0; i < r; ++i) {
    const int64_t add = (*pads)[i] + (*pads)[i + r];
    if (s[i].is_static()) {
      if (s[i].value + add < 0) c.fail(str_cat("pads ", dims_str(*pads), " crop dim ", i, " below zero"));
      out[i] = Dim(s[i].value + add);
    } else if (add != 0) {
      out[i] = Dim::unknown();
    }
  }
  c.set_output(0, dt, out);
}

enum class PadMode { constant, reflect, edge };

// Source index for output position o of a dim of size n with `before` padding; -1 means
// the constant value.
int64_t source_index(int64_t o, int64_t n, int64_t before, PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::edge: return std::clamp(i, int64_t{0}, n - 1);
    case PadMode::reflect: {  // periodic mirror without repeating the edge (numpy 'reflect')
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      i = ((i % period) + period) % period;
      return i < n ? i : period - i;
    }
  }
  return -1;
}

void pad_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const Tensor* value = k.opset() >= 11 && k.has_input(2) ? &k.input(2) : nullptr;
  const PadPlan p = pad_plan(k.node(), k.opset(), x.dims(), x.dtype(), k.opset() >= 11 ? &k.input(1) : nullptr, value);
  check_dims(p.dims, k);
  Tensor& y = k.alloc_output(0, x.dtype(), p.dims);
  pad_copy(p, x.raw(), y.raw());
}

}  // namespace

PadPlan pad_plan(const Node& n, int64_t opset, const std::vector<int64_t>& x, DType dtype, const Tensor* pads_input,
                 const Tensor* value_input) {
  const int64_t r = static_cast<int64_t>(x.size());
  auto pads = pads_of(n, opset, pads_input);
  KILN_CHECK(pads.has_value(), n.describe(), ": pads are not known");
  KILN_CHECK(static_cast<int64_t>(pads->size()) == 2 * r, n.describe(), ": pads has ", pads->size(),
             " entries for rank ", r, " (need ", 2 * r, ")");
  const std::string m = n.attr_s("mode", "constant");
  KILN_CHECK(m == "constant" || m == "reflect" || m == "edge", n.describe(), ": unknown mode '", m, "'");
  const PadMode mode = m == "constant" ? PadMode::constant : m == "reflect" ? PadMode::reflect : PadMode::edge;
  PadPlan p;
  p.elem = dtype_size(dtype);
  p.x = x;
  // The fill value, as one element of x's dtype.
  Tensor fill(dtype, {});
  if (opset < 11) {
    fill = Tensor::scalar<double>(n.attr_f("value", 0.f)).cast(dtype);
  } else if (value_input && value_input->numel() > 0) {
    KILN_CHECK(value_input->dtype() == dtype, n.describe(), ": constant_value and data differ in dtype");
    fill = *value_input;
  }
  p.fill.assign(static_cast<const unsigned char*>(fill.raw()), static_cast<const unsigned char*>(fill.raw()) + p.elem);
  p.dims.resize(r);
  for (int64_t d = 0; d < r; ++d) {
    const int64_t a = (*pads)[d], b = (*pads)[d + r], lim = int64_t{1} << 40;
    KILN_CHECK(a >= -lim && a <= lim && b >= -lim && b <= lim, n.describe(), ": pads ", dims_str(*pads),
               " are out of range");
    p.dims[d] = x[d] + a + b;
    KILN_CHECK(p.dims[d] >= 0, n.describe(), ": pads ", dims_str(*pads), " crop dim ", d, " below zero");
    KILN_CHECK(x[d] != 0 || p.dims[d] == 0 || mode == PadMode::constant, n.describe(), ": cannot ", m,
               "-pad an empty dim ", d);
  }
  p.map.resize(r);
  for (int64_t d = 0; d < r; ++d)
    for (int64_t o = 0; o < p.dims[d]; ++o) p.map[d].push_back(source_index(o, x[d], (*pads)[d], mode));
  return p;
}

void pad_copy(const PadPlan& p, const void* x, void* y) {
  const int64_t r = static_cast<int64_t>(p.dims.size());
  int64_t total = 1;
  for (int64_t d : p.dims) total *= d;
  if (total == 0) return;
  const int64_t es = static_cast<int64_t>(p.elem);
  const auto* src = static_cast<const char*>(x);
  auto* dst = static_cast<char*>(y);
  if (r == 0) return (void)std::memcpy(dst, src, es);
  KILN_CHECK(r <= kMaxPadRank, "Pad: rank ", r, " is above ", kMaxPadRank);
  // The source's strides and the odometer over the outer output dims, on the stack.
  int64_t st[kMaxPadRank], pos[kMaxPadRank] = {};
  st[r - 1] = 1;
  for (int64_t d = r - 2; d >= 0; --d) st[d] = st[d + 1] * p.x[d + 1];
  const int64_t inner = p.dims[r - 1];
  const std::vector<int64_t>& last = p.map[r - 1];
  const char* fv = reinterpret_cast<const char*>(p.fill.data());
  for (int64_t row = 0, rows = total / inner; row < rows; ++row) {
    int64_t base = 0;  // source row offset, or -1 when the row lies in constant padding
    for (int64_t d = 0; d < r - 1 && base >= 0; ++d) {
      int64_t s = p.map[d][pos[d]];
      base = s < 0 ? -1 : base + s * st[d];
    }
    for (int64_t j = 0; j < inner;) {
      int64_t s = base < 0 ? -1 : last[j];
      if (s < 0) {
        std::memcpy(dst + j * es, fv, es);
        ++j;
        continue;
      }
      int64_t run = 1;  // consecutive source elements copy as one block
      while (j + run < inner && last[j + run] == s + run) ++run;
      std::memcpy(dst + j * es, src + (base + s) * es, run * es);
      j += run;
    }
    dst += inner * es;
    for (int64_t d = r - 2; d >= 0; --d) {
      if (++pos[d] < p.dims[d]) break;
      pos[d] = 0;
    }
  }
}

OpDef def_Pad() {
  return {.name = "Pad", .since = 1, .min_inputs = 1, .max_inputs = 3,
          .attrs = {{"mode", AttrKind::String}, {"pads", AttrKind::Ints}, {"paddings", AttrKind::Ints},
                    {"value", AttrKind::Float}},
          .infer = pad_infer, .cost = cost_data_movement, .kernel = pad_kernel,
          .doc = "pads (or crops, for negative pads) each dim: constant, reflect or edge"};
}

}  // namespace kiln::ops

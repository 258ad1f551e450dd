// Where (select with three-way broadcasting) and Clip (bounds as attributes before
// opset 11, as optional scalar inputs from 11).
#include <limits>

#include "elementwise/binary.h"

namespace kiln::ops {
namespace {

void where_kernel(KernelContext& c) {
  const Tensor& cond = c.input(0);
  const Tensor& x = c.input(1);
  const Tensor& y = c.input(2);
  if (cond.dtype() != DType::boolean) c.fail(str_cat("condition must be bool, got ", dtype_name(cond.dtype())));
  check_same_dtype(c, x, y);
  BroadcastPlan plan = plan_broadcast({&cond.dims(), &x.dims(), &y.dims()}, c.node());
  Tensor& out = c.alloc_output(0, x.dtype(), plan.out_dims);
  // Selection only moves bytes, so any dtype runs as an unsigned integer of its size.
  KILN_DISPATCH_BYTES(x.dtype(), c.node().describe(), {
    broadcast_ternary(plan, cond.data<bool>(), static_cast<const T*>(x.raw()), static_cast<const T*>(y.raw()),
                      static_cast<T*>(out.raw()), c.threads(), [](bool k, T a, T b) { return k ? a : b; });
  });
}

void infer_where(InferContext& c) {
  if (c.in_dtype(0) != DType::boolean && c.in_dtype(0) != DType::undefined)
    c.fail(str_cat("condition must be bool, got ", dtype_name(c.in_dtype(0))));
  if (c.in_dtype(1) != c.in_dtype(2) && c.in_dtype(1) != DType::undefined && c.in_dtype(2) != DType::undefined)
    c.fail(str_cat("X and Y must share a dtype, got ", dtype_name(c.in_dtype(1)), " and ", dtype_name(c.in_dtype(2))));
  Shape s = c.in_shape(0);
  for (size_t i = 1; i < 3; ++i) {
    auto b = broadcast_shapes(s, c.in_shape(i));
    if (!b) c.fail(str_cat("shapes ", s.str(), " and ", c.in_shape(i).str(), " do not broadcast"));
    s = *b;
  }
  c.set_output(0, c.in_dtype(1), s);
}

// Bound i of Clip as a T: from the optional input (opset >= 11) or the attribute (< 11).
template <typename T>
T clip_bound(const KernelContext& c, const Tensor& x, size_t i, T dflt) {
  if (c.opset() < 11) {
    if (!c.node().has_attr(i == 1 ? "min" : "max")) return dflt;
    return static_cast<T>(c.node().attr_f(i == 1 ? "min" : "max", 0.0f));
  }
  if (!c.has_input(i)) return dflt;
  const Tensor& b = c.input(i);
  if (b.numel() != 1) c.fail(str_cat(i == 1 ? "min" : "max", " must be a scalar, got shape ", dims_str(b.dims())));
  if (b.dtype() != x.dtype() && !(is_half(b.dtype()) && x.dtype() == DType::f32))
    c.fail(str_cat(i == 1 ? "min" : "max", " has dtype ", dtype_name(b.dtype()), ", input has ",
                   dtype_name(x.dtype())));
  if (is_half(b.dtype())) return static_cast<T>(b.as_double(0));
  return b.data<T>()[0];
}

void clip_on(KernelContext& c, const Tensor& x, Tensor& out) {
  dispatch_elem<true, true>(x.dtype(), c, [&](auto tag) {
    using T = decltype(tag);
    // Floats clamp to [-inf, inf] by default, integers to their full range.
    const T lo = clip_bound<T>(c, x, 1, std::numeric_limits<T>::lowest());
    const T hi = clip_bound<T>(c, x, 2, std::numeric_limits<T>::max());
    const T* in = x.data<T>();
    T* o = out.data<T>();
    run_elementwise(x.numel(), c.threads(), [&](int64_t b, int64_t e) {
      // min(max(x, lo), hi): when lo > hi every value becomes hi, as the spec says.
      for (int64_t i = b; i < e; ++i) {
        T v = in[i] < lo ? lo : in[i];
        o[i] = hi < v ? hi : v;
      }
    });
  });
}

void clip_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  if (is_half(x.dtype())) {
    Tensor xf = to_f32(x);
    Tensor of(DType::f32, xf.dims());
    clip_on(c, xf, of);
    c.set_output(0, from_f32(of, x.dtype()));
    return;
  }
  Tensor& out = c.alloc_output(0, x.dtype(), x.dims());
  clip_on(c, x, out);
}

}  // namespace

OpDef def_Where() {
  return {.name = "Where", .since = 9, .min_inputs = 3, .max_inputs = 3, .infer = infer_where,
          .cost = cost_data_movement, .kernel = where_kernel, .doc = "out = cond ? X : Y (broadcasting)"};
}
OpDef def_Clip() {
  return {.name = "Clip", .since = 1, .min_inputs = 1, .max_inputs = 3,
          .attrs = {{"min", AttrKind::Float}, {"max", AttrKind::Float}}, .infer = infer_same_as_input0,
          .cost = [](const CostContext& c) {
            Cost k = cost_elementwise(c);
            k.flops *= 2;
            return k;
          },
          .kernel = clip_kernel, .doc = "y = min(max(x, min), max)"};
}

}  // namespace kiln::ops

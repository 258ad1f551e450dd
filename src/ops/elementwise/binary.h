// Table-driven binary ops with numpy broadcasting. Each op is a small struct:
//
//   struct AddOp {
//     static constexpr bool kFloats = true, kIntegers = true;  // dtypes it is defined on
//     template <typename T> static T apply(T a, T b, const ElemParams& p) { return a + b; }
//     static ElemParams params(const Node& n);                   // optional, reads attributes
//     template <typename T> static void check(const Tensor& b, const KernelContext& c);  // optional
//   };
//
// binary_kernel<Op> checks both inputs share a dtype, converts f16/bf16 through f32,
// and runs Op::apply over the broadcast plan. `check` lets integer Div/Mod reject a zero
// divisor before the loop runs (division by zero is undefined behaviour in C++).
#pragma once
#include <type_traits>

#include "elementwise/unary.h"

namespace kiln::ops {

// Integer + - * in 64-bit unsigned arithmetic, truncated: wraps like hardware instead of the
// undefined behaviour of signed overflow (and of uint16 * uint16 promoting to int).
template <typename T, typename F>
T wrap_int(T a, T b, F f) {
  return static_cast<T>(f(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}

// a + b, wrapping for integers.
template <typename T>
T add_wrapping(T a, T b) {
  if constexpr (std::is_integral_v<T>) return wrap_int(a, b, [](uint64_t x, uint64_t y) { return x + y; });
  else return a + b;
}

inline bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

// Runs body with T bound to the C++ type of `dt`, limited to what the op supports.
template <bool kFloats, bool kIntegers, typename Body>
void dispatch_elem(DType dt, const KernelContext& c, Body&& body) {
  bool ok = (kFloats && (dt == DType::f32 || dt == DType::f64)) || (kIntegers && dtype_is_integer(dt));
  if (!ok) c.fail(str_cat("unsupported dtype ", dtype_name(dt)));
  switch (dt) {
#define KILN_ELEM_CASE(DT, CT)                                                           \
  case DType::DT:                                                                        \
    if constexpr ((std::is_floating_point_v<CT> && kFloats) || (std::is_integral_v<CT> && kIntegers)) \
      body(CT{});                                                                        \
    break;
    KILN_ELEM_CASE(f32, float)
    KILN_ELEM_CASE(f64, double)
    KILN_ELEM_CASE(i8, int8_t)
    KILN_ELEM_CASE(u8, uint8_t)
    KILN_ELEM_CASE(i16, int16_t)
    KILN_ELEM_CASE(u16, uint16_t)
    KILN_ELEM_CASE(i32, int32_t)
    KILN_ELEM_CASE(u32, uint32_t)
    KILN_ELEM_CASE(i64, int64_t)
    KILN_ELEM_CASE(u64, uint64_t)
#undef KILN_ELEM_CASE
    default: c.fail(str_cat("unsupported dtype ", dtype_name(dt)));
  }
}

// out = Op(a, b) with broadcasting; a and b already share a non-half dtype.
template <typename Op>
Tensor binary_apply(const Tensor& a, const Tensor& b, const KernelContext& c, const ElemParams& p) {
  BroadcastPlan plan = plan_broadcast({&a.dims(), &b.dims()}, c.node());
  Tensor out(a.dtype(), plan.out_dims);
  dispatch_elem<Op::kFloats, Op::kIntegers>(a.dtype(), c, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (requires { Op::template check<T>(b, c); }) Op::template check<T>(b, c);
    broadcast_binary(plan, a.data<T>(), b.data<T>(), out.data<T>(), c.threads(),
                     [&p](T x, T y) { return Op::template apply<T>(x, y, p); });
  });
  return out;
}

inline void check_same_dtype(const KernelContext& c, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    c.fail(str_cat("inputs must share a dtype, got ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype())));
}

template <typename Op>
void binary_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  check_same_dtype(c, a, b);
  const ElemParams p = elem_params<Op>(c.node());
  if (is_half(a.dtype())) {
    c.set_output(0, from_f32(binary_apply<Op>(to_f32(a), to_f32(b), c, p), a.dtype()));
    return;
  }
  c.set_output(0, binary_apply<Op>(a, b, c, p));
}

// Shape inference for same-dtype binary ops: broadcast shape, dtype of input 0.
void infer_binary_same_dtype(InferContext& c);

template <typename Op>
OpDef binary_def(std::string_view name, int64_t since, std::string_view doc, std::vector<AttrSpec> attrs = {}) {
  return {.name = name,
          .since = since,
          .min_inputs = 2,
          .max_inputs = 2,
          .attrs = std::move(attrs),
          .infer = infer_binary_same_dtype,
          .cost = cost_elementwise,
          .kernel = binary_kernel<Op>,
          .doc = doc};
}

}  // namespace kiln::ops

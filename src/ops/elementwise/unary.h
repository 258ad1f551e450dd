// Table-driven unary ops. Each op is a small struct:
//
//   struct ExpOp {
//     static constexpr double kFlops = 4;                 // per element, for cost
//     static constexpr bool kIntegers = false;             // also defined on integer dtypes?
//     template <typename T> static T apply(T x, const ElemParams& p) { return std::exp(x); }
//     static ElemParams params(const Node& n) { ... }     // optional: reads attributes
//   };
//
// unary_kernel<Op> runs it on f32/f64 (f16/bf16 through f32) and, when kIntegers, on all
// integer dtypes; cost_unary<Op> charges kFlops per element.
#pragma once
#include <cmath>
#include <type_traits>

#include "elementwise/broadcast.h"

namespace kiln::ops {

// Attribute values of an elementwise op (alpha, beta, gamma, a mode), read once per node.
struct ElemParams {
  double alpha = 0, beta = 0, gamma = 0;
  int64_t mode = 0;
};

template <typename Op>
ElemParams elem_params(const Node& n) {
  if constexpr (requires { Op::params(n); }) return Op::params(n);
  else return ElemParams{};
}

template <typename Op, typename T>
void unary_loop(const Tensor& x, Tensor& y, const ElemParams& p, int threads) {
  const T* in = x.data<T>();
  T* out = y.data<T>();
  run_elementwise(x.numel(), threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = Op::template apply<T>(in[i], p);
  });
}

template <typename Op>
void unary_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const ElemParams p = elem_params<Op>(c.node());
  DType dt = x.dtype();
  if (dt == DType::f16 || dt == DType::bf16) {
    Tensor xf = to_f32(x);
    Tensor yf(DType::f32, xf.dims());
    unary_loop<Op, float>(xf, yf, p, c.threads());
    c.set_output(0, from_f32(yf, dt));
    return;
  }
  Tensor& y = c.alloc_output(0, dt, x.dims());
  if (dt == DType::f32 || dt == DType::f64 || !Op::kIntegers) {
    KILN_DISPATCH_FLOAT(dt, c.node().describe(), unary_loop<Op, T>(x, y, p, c.threads()));
  } else {
    if constexpr (Op::kIntegers) {
      KILN_DISPATCH_NUMERIC(dt, c.node().describe(), unary_loop<Op, T>(x, y, p, c.threads()));
    }
  }
}

template <typename Op>
Cost cost_unary(const CostContext& c) {
  Cost k = cost_elementwise(c);
  k.flops *= Op::kFlops;
  return k;
}

// OpDef of a one-input, one-output unary op with output = input dtype and shape.
template <typename Op>
OpDef unary_def(std::string_view name, int64_t since, std::string_view doc, std::vector<AttrSpec> attrs = {}) {
  return {.name = name,
          .since = since,
          .min_inputs = 1,
          .max_inputs = 1,
          .attrs = std::move(attrs),
          .infer = infer_same_as_input0,
          .cost = cost_unary<Op>,
          .kernel = unary_kernel<Op>,
          .doc = doc};
}

}  // namespace kiln::ops

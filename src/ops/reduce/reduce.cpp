// The Reduce* family. Each op is a small struct with an accumulator (double for floats,
// 64-bit for integers, so sums do not lose precision or hit signed overflow):
//   init<A>(), step(acc, x), finish(acc, count) -> value of the output element.
// An empty reduction gives the identity of the op (0 for sums, 1 for Prod, -inf/lowest
// for Max, +inf/max for Min); Mean of nothing is NaN (0/0).
#include <cmath>
#include <limits>
#include <type_traits>

#include "reduce/reduce_plan.h"

namespace kiln::ops {
namespace {

template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Wrapping integer + and * (no signed-overflow UB); plain arithmetic for double.
template <typename A>
A acc_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <typename A>
A acc_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

template <typename A>
A abs_of(A x) {
  if constexpr (std::is_unsigned_v<A>) return x;
  else return x < A(0) ? acc_mul(x, A(-1)) : x;
}

struct SumOp {
  static constexpr bool kIntegers = true;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void step(A& acc, A x) { acc = acc_add(acc, x); }
  template <typename A> static A finish(A acc, int64_t) { return acc; }
};
struct SumSquareOp : SumOp {
  template <typename A> static void step(A& acc, A x) { acc = acc_add(acc, acc_mul(x, x)); }
};
struct L1Op : SumOp {
  template <typename A> static void step(A& acc, A x) { acc = acc_add(acc, abs_of(x)); }
};
struct L2Op : SumSquareOp {
  static constexpr bool kIntegers = false;
  template <typename A> static A finish(A acc, int64_t) { return std::sqrt(acc); }
};
struct LogSumOp : SumOp {
  static constexpr bool kIntegers = false;
  template <typename A> static A finish(A acc, int64_t) { return std::log(acc); }
};
struct MeanOp : SumOp {
  template <typename A> static A finish(A acc, int64_t count) {
    if constexpr (std::is_integral_v<A>) {
      return count == 0 ? A(0) : static_cast<A>(acc / static_cast<A>(count));
    } else {
      return acc / static_cast<A>(count);
    }
  }
};
struct ProdOp {
  static constexpr bool kIntegers = true;
  template <typename A> static A init() { return A(1); }
  template <typename A> static void step(A& acc, A x) { acc = acc_mul(acc, x); }
  template <typename A> static A finish(A acc, int64_t) { return acc; }
};
// Max/Min keep NaN once seen (as numpy does).
struct MaxOp {
  static constexpr bool kIntegers = true;
  template <typename A> static A init() {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <typename A> static void step(A& acc, A x) {
    if (x > acc || x != x) acc = x;
  }
  template <typename A> static A finish(A acc, int64_t) { return acc; }
};
struct MinOp {
  static constexpr bool kIntegers = true;
  template <typename A> static A init() {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <typename A> static void step(A& acc, A x) {
    if (x < acc || x != x) acc = x;
  }
  template <typename A> static A finish(A acc, int64_t) { return acc; }
};

// Max/Min of an integer type accumulate in that type's own range.
template <typename Op, typename T>
struct OwnRange : std::bool_constant<std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>> {};

template <typename Op, typename T>
void reduce_typed(const Tensor& x, const ReducePlan& p, Tensor& out, int threads) {
  using A = std::conditional_t<OwnRange<Op, T>::value && std::is_integral_v<T>, T, acc_t<T>>;
  std::vector<A> acc(static_cast<size_t>(p.out_numel), Op::template init<A>());
  const T* in = x.data<T>();
  for_each_reduce_parallel(p, threads, [&](int64_t o, int64_t i) { Op::step(acc[o], static_cast<A>(in[i])); });
  T* y = out.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) y[o] = static_cast<T>(Op::finish(acc[o], p.count));
}

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the max, so exp never overflows.
template <typename T>
void reduce_log_sum_exp(const Tensor& x, const ReducePlan& p, Tensor& out, int threads) {
  std::vector<double> m(static_cast<size_t>(p.out_numel), -std::numeric_limits<double>::infinity());
  std::vector<double> s(static_cast<size_t>(p.out_numel), 0.0);
  const T* in = x.data<T>();
  for_each_reduce_parallel(p, threads, [&](int64_t o, int64_t i) { MaxOp::step(m[o], static_cast<double>(in[i])); });
  for_each_reduce_parallel(p, threads,
                           [&](int64_t o, int64_t i) { s[o] += std::exp(static_cast<double>(in[i]) - m[o]); });
  T* y = out.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) y[o] = static_cast<T>(std::isinf(m[o]) ? m[o] : m[o] + std::log(s[o]));
}

struct LogSumExpOp {
  static constexpr bool kIntegers = false;
};

template <typename Op>
void reduce_kernel(KernelContext& c) {
  const Tensor& x0 = c.input(0);
  const bool half = x0.dtype() == DType::f16 || x0.dtype() == DType::bf16;
  const Tensor x = half ? to_f32(x0) : x0;
  ReduceAxes ax = resolve_reduce_axes(c.node(), static_cast<int64_t>(x.rank()),
                                      c.has_input(1) ? &c.input(1) : nullptr);
  if (ax.noop) {
    c.set_output(0, x0.clone());
    return;
  }
  ReducePlan p = plan_reduce(x.dims(), ax.mask, c.node().attr_i("keepdims", 1) != 0);
  Tensor out(x.dtype(), p.out_dims);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<Op, LogSumExpOp>) reduce_log_sum_exp<T>(x, p, out, c.threads());
    else reduce_typed<Op, T>(x, p, out, c.threads());
  };
  if (dtype_is_float(x.dtype())) {
    KILN_DISPATCH_FLOAT(x.dtype(), c.node().describe(), run(T{}));
  } else if constexpr (Op::kIntegers) {
    KILN_DISPATCH_NUMERIC(x.dtype(), c.node().describe(), if constexpr (std::is_integral_v<T>) run(T{}));
  } else {
    c.fail(str_cat("unsupported dtype ", dtype_name(x.dtype())));
  }
  c.set_output(0, half ? from_f32(out, x0.dtype()) : out);
}

template <typename Op>
OpDef reduce_def(std::string_view name, std::string_view doc, bool axes_input = false) {
  std::vector<AttrSpec> attrs = {{"axes", AttrKind::Ints}, {"keepdims", AttrKind::Int}};
  if (axes_input) attrs.push_back({"noop_with_empty_axes", AttrKind::Int});
  return {.name = name, .since = 1, .min_inputs = 1, .max_inputs = axes_input ? 2 : 1, .attrs = std::move(attrs),
          .infer = infer_reduce, .cost = cost_reduce, .kernel = reduce_kernel<Op>, .doc = doc};
}

}  // namespace

OpDef def_ReduceL1() { return reduce_def<L1Op>("ReduceL1", "sum of |x| over axes"); }
OpDef def_ReduceL2() { return reduce_def<L2Op>("ReduceL2", "sqrt of the sum of x^2 over axes"); }
OpDef def_ReduceLogSum() { return reduce_def<LogSumOp>("ReduceLogSum", "log of the sum over axes"); }
OpDef def_ReduceLogSumExp() { return reduce_def<LogSumExpOp>("ReduceLogSumExp", "log of the sum of e^x over axes"); }
OpDef def_ReduceMax() { return reduce_def<MaxOp>("ReduceMax", "max over axes"); }
OpDef def_ReduceMean() { return reduce_def<MeanOp>("ReduceMean", "mean over axes"); }
OpDef def_ReduceMin() { return reduce_def<MinOp>("ReduceMin", "min over axes"); }
OpDef def_ReduceProd() { return reduce_def<ProdOp>("ReduceProd", "product over axes"); }
// From opset 13 ReduceSum takes axes as an optional second input, with noop_with_empty_axes.
OpDef def_ReduceSum() { return reduce_def<SumOp>("ReduceSum", "sum over axes", true); }
OpDef def_ReduceSumSquare() { return reduce_def<SumSquareOp>("ReduceSumSquare", "sum of x^2 over axes"); }

}  // namespace kiln::ops

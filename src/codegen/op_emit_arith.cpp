// Binary and variadic arithmetic, comparisons, logic, Pow, Where, Clip and Cast, with the
// reference kernels' semantics (src/ops/elementwise/binary_arith.cpp, variadic.cpp,
// compare_logic.cpp, where_clip.cpp, cast.cpp and Tensor::cast). Integer division and modulo
// need a constant divisor without zeros: the reference refuses a zero divisor at run time, and
// generated code has no way to report it.
#include "../ops/op_helpers.h"  // dtype_from_onnx_code (Cast's `to`)
#include "op_emit.h"

namespace kiln::codegen {
namespace {

// a OP b for floats, kiln_FN(a, b) (wrapping) for integers.
Emitter arith(const char* op, const char* int_fn) {
  return [op, int_fn](const OpCall& c) {
    c.arity(2, 2);
    c.same_dtype(0, 1);
    c.require_numeric(0);
    if (c.is_float(0)) return OpExpr{str_cat("(", c.x(0), " ", op, " ", c.x(1), ")"), c.dt(0)};
    return OpExpr{str_cat(int_fn, "(", c.x(0), ", ", c.x(1), ")"), c.dt(0)};
  };
}

// Integer divisors must be constants without zeros (see the file comment).
void require_safe_divisor(const OpCall& c) {
  if (c.is_float(1)) return;
  const Tensor* d = c.ops[1].constant;
  if (d == nullptr) c.fail("integer division needs a constant divisor (a zero divisor cannot be reported at run time)");
  for (int64_t i = 0; i < d->numel(); ++i)
    if (d->as_int64(i) == 0) c.fail("integer division by zero");
}

// fold(f, x0, x1, ...) = f(f(x0, x1), x2)... over every input, all of one numeric dtype.
OpExpr fold(const OpCall& c, const char* fn) {
  if (c.count() < 1) c.fail("needs at least one input");
  std::string acc = c.x(0);
  c.require_numeric(0);
  for (size_t i = 1; i < c.count(); ++i) {
    c.same_dtype(0, i);
    acc = str_cat(fn, "(", acc, ", ", c.x(i), ")");
  }
  return {acc, c.dt(0)};
}

Emitter compare(const char* op) {
  return [op](const OpCall& c) {
    c.arity(2, 2);
    c.same_dtype(0, 1);
    return OpExpr{str_cat("(", c.x(0), " ", op, " ", c.x(1), ")"), DType::boolean};
  };
}

Emitter logic(const char* op) {
  return [op](const OpCall& c) {
    c.arity(2, 2);
    for (size_t i = 0; i < 2; ++i)
      if (c.dt(i) != DType::boolean) c.fail(str_cat("input ", i, " must be bool, got ", dtype_name(c.dt(i))));
    return OpExpr{str_cat("(", c.x(0), " ", op, " ", c.x(1), ")"), DType::boolean};
  };
}

OpExpr pow_expr(const OpCall& c) {
  c.arity(2, 2);
  c.require_numeric(0);
  c.require_numeric(1);
  const std::string& x = c.x(0);
  const DType dt = c.dt(0);
  if (dt == DType::f32 && c.dt(1) == DType::f32) {
    // The reference computes x^2 as x*x (exact, and what a correctly rounded pow gives too).
    double e = 0;
    if (c.constant_scalar(1, &e) && e == 2.0) return {str_cat("(", x, " * ", x, ")"), dt};
    if (c.constant_scalar(1, &e) && e == 0.5) return {str_cat("kiln_pow_half(", x, ")"), dt};
    if (c.constant_scalar(1, &e) && e == 1.0) return {x, dt};
    return {str_cat("std::pow(", x, ", ", c.x(1), ")"), dt};
  }
  // Other dtypes: in double, converted to the base's dtype as the reference does.
  std::string p = str_cat("std::pow((double)", x, ", (double)", c.x(1), ")");
  if (dt == DType::f64) return {p, dt};
  if (dt == DType::f16 || dt == DType::bf16) return {str_cat("(float)", p), dt};
  return {str_cat("kiln_cast<", compute_ctype(dt), ", double>(", p, ")"), dt};
}

// Clip's bound `i` (1 = min, 2 = max) as a literal of x's compute type, or "" when absent.
// Bounds are attributes before opset 11 and constant scalar inputs from then on.
std::string clip_bound(const OpCall& c, size_t i) {
  const char* name = i == 1 ? "min" : "max";
  const std::string ct = compute_ctype(c.dt(0));
  if (c.node.has_attr(name)) return str_cat("(", ct, ")", float_literal(c.node.attr_f(name, 0.0f), DType::f32));
  if (!c.has(i)) return "";
  const Tensor* b = c.ops[i].constant;
  if (b == nullptr) c.fail(str_cat("Clip ", name, " must be a constant (generated code bakes it in)"));
  if (b->numel() != 1) c.fail(str_cat("Clip ", name, " must be a scalar, got shape ", dims_str(b->dims())));
  const bool half_bound = b->dtype() == DType::f16 || b->dtype() == DType::bf16;
  if (b->dtype() != c.dt(0) && !(half_bound && c.dt(0) == DType::f32))
    c.fail(str_cat("Clip ", name, " has dtype ", dtype_name(b->dtype()), ", input has ", dtype_name(c.dt(0))));
  if (half_bound) return float_literal(b->as_double(0), c.dt(0));
  return literal_of(*b, 0);
}

OpExpr clip_expr(const OpCall& c) {
  c.arity(1, 3);
  c.require_numeric(0);
  std::string e = c.x(0);
  // min(max(x, lo), hi) in the reference's order: lo > hi gives hi everywhere, NaN stays NaN.
  if (std::string lo = clip_bound(c, 1); !lo.empty()) e = str_cat("kiln_std_max(", e, ", ", lo, ")");
  if (std::string hi = clip_bound(c, 2); !hi.empty()) e = str_cat("kiln_std_min(", e, ", ", hi, ")");
  return {e, c.dt(0)};
}

OpExpr cast_to(const OpCall& c, DType to) {
  const std::string& x = c.x(0);
  const DType from = c.dt(0);
  compute_ctype(to);  // refuses dtypes without a C++ type
  // Tensor::cast goes to f16/bf16 through (float)as_double; the body rounds after the op.
  if (to == DType::f16 || to == DType::bf16) return {str_cat("(float)(double)", x), to};
  return {str_cat("kiln_cast<", compute_ctype(to), ", ", compute_ctype(from), ">(", x, ")"), to};
}

}  // namespace

void add_arith_emitters(EmitterTable& t) {
  t.insert({
      {"Add", arith("+", "kiln_add")},
      {"Sub", arith("-", "kiln_sub")},
      {"Mul", arith("*", "kiln_mul")},
      {"Div",
       [](const OpCall& c) {
         c.arity(2, 2);
         c.same_dtype(0, 1);
         c.require_numeric(0);
         require_safe_divisor(c);
         return OpExpr{str_cat("kiln_div(", c.x(0), ", ", c.x(1), ")"), c.dt(0)};
       }},
      {"Mod",
       [](const OpCall& c) {
         c.arity(2, 2);
         c.same_dtype(0, 1);
         c.require_numeric(0);
         const int64_t mode = c.node.attr_i("fmod", 0);
         if (mode != 0 && mode != 1) c.fail(str_cat("attribute fmod must be 0 or 1, got ", mode));
         if (c.is_float(0) && mode != 1) c.fail("fmod must be 1 for floating-point inputs");
         require_safe_divisor(c);
         return OpExpr{str_cat("kiln_mod(", c.x(0), ", ", c.x(1), ", ", mode == 1 ? "true" : "false", ")"), c.dt(0)};
       }},
      {"Pow", pow_expr},
      {"Max", [](const OpCall& c) { return fold(c, "kiln_max"); }},
      {"Min", [](const OpCall& c) { return fold(c, "kiln_min"); }},
      {"Sum", [](const OpCall& c) { return fold(c, "kiln_add"); }},
      {"Mean",
       [](const OpCall& c) {
         OpExpr sum = fold(c, "kiln_add");
         c.require_float(0);
         return OpExpr{str_cat("(", sum.expr, " / ", float_literal(static_cast<double>(c.count()), c.dt(0)), ")"), c.dt(0)};
       }},
      {"PRelu",
       [](const OpCall& c) {
         c.arity(2, 2);
         c.same_dtype(0, 1);
         c.require_numeric(0);
         const std::string& x = c.x(0);
         return OpExpr{str_cat("(", x, " < (", compute_ctype(c.dt(0)), ")0 ? kiln_mul(", c.x(1), ", ", x, ") : ", x, ")"),
                       c.dt(0)};
       }},
      {"BitShift",
       [](const OpCall& c) {
         c.arity(2, 2);
         c.same_dtype(0, 1);
         const DType dt = c.dt(0);
         if (!(dt == DType::u8 || dt == DType::u16 || dt == DType::u32 || dt == DType::u64))
           c.fail("BitShift takes unsigned integers only");
         const std::string d = c.node.attr_s("direction", "");
         if (d != "LEFT" && d != "RIGHT") c.fail(str_cat("attribute direction must be \"LEFT\" or \"RIGHT\", got \"", d, "\""));
         const std::string ct = compute_ctype(dt);
         return OpExpr{str_cat("((uint64_t)", c.x(1), " >= ", dtype_size(dt) * 8, " ? (", ct, ")0 : (", ct, ")(", c.x(0),
                               d == "LEFT" ? " << " : " >> ", c.x(1), "))"),
                       dt};
       }},
      {"Equal", compare("==")},
      {"Greater", compare(">")},
      {"GreaterOrEqual", compare(">=")},
      {"Less", compare("<")},
      {"LessOrEqual", compare("<=")},
      {"And", logic("&&")},
      {"Or", logic("||")},
      {"Xor", logic("!=")},
      {"Where",
       [](const OpCall& c) {
         c.arity(3, 3);
         if (c.dt(0) != DType::boolean) c.fail(str_cat("condition must be bool, got ", dtype_name(c.dt(0))));
         c.same_dtype(1, 2);
         return OpExpr{str_cat("(", c.x(0), " ? ", c.x(1), " : ", c.x(2), ")"), c.dt(1)};
       }},
      {"Clip", clip_expr},
      {"Cast",
       [](const OpCall& c) {
         c.arity(1, 1);
         const int64_t code = c.node.attr_i("to", 0);
         const DType to = ops::dtype_from_onnx_code(code);
         if (to == DType::undefined) c.fail(str_cat("Cast to ONNX data type ", code, " is not supported"));
         return cast_to(c, to);
       }},
      {"CastLike",
       [](const OpCall& c) {
         c.arity(2, 2);
         return cast_to(c, c.dt(1));
       }},
  });
}

}  // namespace kiln::codegen

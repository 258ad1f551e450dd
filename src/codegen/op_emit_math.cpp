// Unary math and activations. Each formula is the reference kernel's (src/ops/elementwise/
// unary_math.cpp, activations.cpp) written as an expression, with the same attribute defaults,
// so NaN, signed zero and integer cases agree; f32 transcendentals call the prelude's vectorisable
// approximations (kiln_exp, ...), f64 ones the C library.
#include <cmath>

#include "op_emit.h"

namespace kiln::codegen {
namespace {

// A float-only unary op: `fast` for values computed in float, `libm` for double ("%" = operand).
Emitter float_fn(std::string fast, std::string libm) {
  return [fast, libm](const OpCall& c) {
    c.arity(1, 1);
    c.require_float(0);
    return OpExpr{str_cat(c.in_float32(0) ? fast : libm, "(", c.x(0), ")"), c.dt(0)};
  };
}

// The same function for both float and double (no fast version, or an exact one).
Emitter libm_fn(const std::string& name) { return float_fn(name, name); }

// A unary op on any numeric dtype, written as one prelude function (wrapping for integers).
Emitter numeric_fn(std::string name) {
  return [name](const OpCall& c) {
    c.arity(1, 1);
    c.require_numeric(0);
    return OpExpr{str_cat(name, "(", c.x(0), ")"), c.dt(0)};
  };
}

// Name of the function computing f(x) in the operand's precision: "kiln_exp" or "std::exp".
std::string fn(const OpCall& c, const char* fast, const char* libm) { return c.in_float32(0) ? fast : libm; }

std::string softplus(const OpCall& c, const std::string& x) {
  if (!c.in_float32(0)) return str_cat("(", x, " > 0.0 ? ", x, " + std::log1p(std::exp(-", x, ")) : std::log1p(std::exp(", x, ")))");
  return str_cat("((", x, " > 0.0f ? ", x, " : 0.0f) + kiln_log1p(kiln_exp(-std::fabs(", x, "))))");
}

OpExpr float_expr(const OpCall& c, std::string e) {
  c.arity(1, 1);
  c.require_float(0);
  return {std::move(e), c.dt(0)};
}

}  // namespace

void add_math_emitters(EmitterTable& t) {
  t.insert({
      {"Exp", float_fn("kiln_exp", "std::exp")},
      {"Log", float_fn("kiln_log", "std::log")},
      {"Tanh", float_fn("kiln_tanh", "std::tanh")},
      {"Erf", float_fn("kiln_erf", "std::erf")},
      {"Sqrt", libm_fn("std::sqrt")},
      {"Floor", libm_fn("std::floor")},
      {"Ceil", libm_fn("std::ceil")},
      // ONNX rounds half to even: rint under the default rounding mode (nearbyint without the
      // inexact flag, which compilers do not inline).
      {"Round", libm_fn("std::rint")},
      // No vectorised versions: rare in fused chains, so they call the C library.
      {"Sin", libm_fn("std::sin")},
      {"Cos", libm_fn("std::cos")},
      {"Tan", libm_fn("std::tan")},
      {"Asin", libm_fn("std::asin")},
      {"Acos", libm_fn("std::acos")},
      {"Atan", libm_fn("std::atan")},
      {"Sinh", libm_fn("std::sinh")},
      {"Cosh", libm_fn("std::cosh")},
      {"Asinh", libm_fn("std::asinh")},
      {"Acosh", libm_fn("std::acosh")},
      {"Atanh", libm_fn("std::atanh")},
      {"Reciprocal",
       [](const OpCall& c) { return float_expr(c, str_cat("(", c.lit(1), " / ", c.x(0), ")")); }},
      {"Sigmoid",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         if (!c.is_float(0) || c.in_float32(0)) return float_expr(c, str_cat("kiln_sigmoid(", x, ")"));
         return float_expr(c, str_cat("(", x, " >= 0.0 ? 1.0 / (1.0 + std::exp(-", x, ")) : std::exp(", x,
                                      ") / (1.0 + std::exp(", x, ")))"));
       }},
      {"Softplus", [](const OpCall& c) { return float_expr(c, softplus(c, c.x(0))); }},
      {"Softsign",
       [](const OpCall& c) {
         return float_expr(c, str_cat("(", c.x(0), " / (", c.lit(1), " + std::fabs(", c.x(0), ")))"));
       }},
      {"Mish",
       [](const OpCall& c) {
         return float_expr(c, str_cat("(", c.x(0), " * ", fn(c, "kiln_tanh", "std::tanh"), "(", softplus(c, c.x(0)), "))"));
       }},
      {"Gelu",
       [](const OpCall& c) {
         const std::string a = c.node.attr_s("approximate", "none");
         if (a != "none" && a != "tanh") c.fail(str_cat("attribute approximate must be \"none\" or \"tanh\", got \"", a, "\""));
         const std::string& x = c.x(0);
         if (a == "tanh") {
           std::string inner = str_cat(c.lit(0.7978845608028654), " * (", x, " + ((", c.lit(0.044715), " * ", x, ") * ", x, ") * ", x, ")");
           return float_expr(c, str_cat("((", c.lit(0.5), " * ", x, ") * (", c.lit(1), " + ", fn(c, "kiln_tanh", "std::tanh"), "(", inner, ")))"));
         }
         return float_expr(c, str_cat("((", c.lit(0.5), " * ", x, ") * (", c.lit(1), " + ", fn(c, "kiln_erf", "std::erf"), "(", x,
                                      " * ", c.lit(0.7071067811865476), ")))"));
       }},
      {"LeakyRelu",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         return float_expr(c, str_cat("(", x, " < ", c.lit(0), " ? ", c.lit(c.node.attr_f("alpha", 0.01f)), " * ", x, " : ", x, ")"));
       }},
      {"ThresholdedRelu",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         return float_expr(c, str_cat("(", x, " > ", c.lit(c.node.attr_f("alpha", 1.0f)), " ? ", x, " : ", c.lit(0), ")"));
       }},
      {"Elu",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         return float_expr(c, str_cat("(", x, " < ", c.lit(0), " ? ", c.lit(c.node.attr_f("alpha", 1.0f)), " * ",
                                      fn(c, "kiln_expm1", "std::expm1"), "(", x, ") : ", x, ")"));
       }},
      {"Celu",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         const std::string a = c.lit(c.node.attr_f("alpha", 1.0f));
         return float_expr(c, str_cat("(kiln_std_max(", c.lit(0), ", ", x, ") + kiln_std_min(", c.lit(0), ", ", a, " * ",
                                      fn(c, "kiln_expm1", "std::expm1"), "(", x, " / ", a, ")))"));
       }},
      {"Selu",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         const std::string a = c.lit(c.node.attr_f("alpha", 1.67326319217681884765625f));
         const std::string g = c.lit(c.node.attr_f("gamma", 1.05070102214813232421875f));
         return float_expr(c, str_cat("(", x, " > ", c.lit(0), " ? ", g, " * ", x, " : ", g, " * (", a, " * ",
                                      fn(c, "kiln_exp", "std::exp"), "(", x, ") - ", a, "))"));
       }},
      {"HardSigmoid",
       [](const OpCall& c) {
         const std::string a = c.lit(c.node.attr_f("alpha", 0.2f)), b = c.lit(c.node.attr_f("beta", 0.5f));
         return float_expr(c, str_cat("kiln_std_max(", c.lit(0), ", kiln_std_min(", c.lit(1), ", ", a, " * ", c.x(0), " + ", b, "))"));
       }},
      {"HardSwish",
       [](const OpCall& c) {
         const std::string& x = c.x(0);
         return float_expr(c, str_cat("(", x, " * kiln_std_max(", c.lit(0), ", kiln_std_min(", c.lit(1), ", ", x, " / ",
                                      c.lit(6), " + ", c.lit(0.5), ")))"));
       }},
      {"Relu",
       [](const OpCall& c) {
         c.arity(1, 1);
         c.require_numeric(0);
         const std::string zero = str_cat("(", compute_ctype(c.dt(0)), ")0");
         return OpExpr{str_cat("(", c.x(0), " < ", zero, " ? ", zero, " : ", c.x(0), ")"), c.dt(0)};
       }},
      {"Abs", numeric_fn("kiln_abs")},
      {"Neg", numeric_fn("kiln_neg")},
      {"Sign", numeric_fn("kiln_sign")},
      {"IsNaN",
       [](const OpCall& c) {
         c.arity(1, 1);
         c.require_float(0);
         return OpExpr{str_cat("(", c.x(0), " != ", c.x(0), ")"), DType::boolean};
       }},
      {"IsInf",
       [](const OpCall& c) {
         c.arity(1, 1);
         c.require_float(0);
         const std::string inf = c.lit(HUGE_VAL);
         std::string e;
         if (c.node.attr_i("detect_positive", 1) != 0) e = str_cat("(", c.x(0), " == ", inf, ")");
         if (c.node.attr_i("detect_negative", 1) != 0)
           e = str_cat(e.empty() ? "" : str_cat(e, " || "), "(", c.x(0), " == -", inf, ")");
         return OpExpr{e.empty() ? "false" : str_cat("(", e, ")"), DType::boolean};
       }},
      {"Not",
       [](const OpCall& c) {
         c.arity(1, 1);
         if (c.dt(0) != DType::boolean) c.fail(str_cat("input must be bool, got ", dtype_name(c.dt(0))));
         return OpExpr{str_cat("(!", c.x(0), ")"), DType::boolean};
       }},
      {"Identity",
       [](const OpCall& c) {
         c.arity(1, 1);
         return OpExpr{c.x(0), c.dt(0)};
       }},
  });
}

}  // namespace kiln::codegen

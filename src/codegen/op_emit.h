// Translation of one elementwise ONNX node into a C++ expression over its operands.
//
// Each supported op has one entry in a table (op_emit.cpp) keyed by op name; the entry checks
// dtypes and attributes and returns the expression and its dtype. The same code answers
// can_generate(): it tries the translation and reports the error it would raise, so the list of
// supported ops cannot drift from what the emitter does.
//
// Values are computed in their dtype's C++ type, except f16/bf16, which are computed in float
// and rounded back after every op (the body emitter does that, as the interpreter does).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::codegen {

struct Operand {
  std::string expr;                  // a C identifier or literal (safe to repeat in an expression)
  DType dtype = DType::undefined;
  const Tensor* constant = nullptr;  // its value, when known at code-generation time
};

struct OpExpr {
  std::string expr;
  DType dtype = DType::undefined;
};

// Expression for node `n` applied to `in` (one Operand per node input; an omitted optional input
// has an empty expr). Throws kiln::Error "<node>: <reason>" when the node cannot be generated.
OpExpr emit_op(const Node& n, const std::vector<Operand>& in);

// C++ type a value of dtype `t` is computed in ("float" for f16/bf16) and stored as in memory
// ("uint16_t" for f16/bf16, "uint8_t" for bool).
std::string compute_ctype(DType t);
std::string storage_ctype(DType t);
// Element `i` of a constant as a C++ literal of its compute type (exact: floats in hex).
std::string literal_of(const Tensor& t, int64_t i);
// A float-valued parameter as a literal of compute type `t` (f32/f64; f16/bf16 compute in float).
std::string float_literal(double v, DType t);

// The node and operands an op emitter works on, with the checks they share.
class OpCall {
 public:
  OpCall(const Node& n, const std::vector<Operand>& in) : node(n), ops(in) {}
  const Node& node;
  const std::vector<Operand>& ops;

  [[noreturn]] void fail(const std::string& why) const;
  size_t count() const { return ops.size(); }
  bool has(size_t i) const { return i < ops.size() && !ops[i].expr.empty(); }
  const std::string& x(size_t i) const;  // expression of input i (must be present)
  DType dt(size_t i) const;              // dtype of input i (must be present and known)
  void arity(size_t min, size_t max) const;
  void same_dtype(size_t i, size_t j) const;
  bool is_float(size_t i) const { return dtype_is_float(dt(i)); }
  // f32/f16/bf16: computed in float, where the prelude's fast functions apply.
  bool in_float32(size_t i) const { return is_float(i) && dt(i) != DType::f64; }
  void require_float(size_t i) const;
  void require_numeric(size_t i) const;  // anything but bool
  // A float parameter as a literal of input 0's compute type.
  std::string lit(double v) const { return float_literal(v, dt(0)); }
  // The single value of a constant input that is a scalar (or holds one repeated value).
  bool constant_scalar(size_t i, double* v) const;
};

// The op table: one emitter per op name, filled by each op family's file
// (op_emit_math.cpp: unary math and activations; op_emit_arith.cpp: the rest).
using Emitter = std::function<OpExpr(const OpCall&)>;
using EmitterTable = std::map<std::string, Emitter, std::less<>>;
void add_math_emitters(EmitterTable& t);
void add_arith_emitters(EmitterTable& t);

}  // namespace kiln::codegen

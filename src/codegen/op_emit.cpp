// Shared pieces of the op emitters: C++ type names, exact literals, operand checks, and
// can_generate(), which asks the emitters themselves.
#include "op_emit.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "kiln/codegen/emit.h"

namespace kiln::codegen {

std::string compute_ctype(DType t) {
  switch (t) {
    case DType::f32: case DType::f16: case DType::bf16: return "float";
    case DType::f64: return "double";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::i16: return "int16_t";
    case DType::u16: return "uint16_t";
    case DType::i32: return "int32_t";
    case DType::u32: return "uint32_t";
    case DType::i64: return "int64_t";
    case DType::u64: return "uint64_t";
    case DType::boolean: return "bool";
    default: throw Error(str_cat("codegen: no C++ type for dtype ", dtype_name(t)));
  }
}

std::string storage_ctype(DType t) {
  if (t == DType::f16 || t == DType::bf16) return "uint16_t";
  // bool arrays are read and written as bytes: vectorisers handle uint8_t, not C++ bool.
  return t == DType::boolean ? "uint8_t" : compute_ctype(t);
}

std::string float_literal(double v, DType t) {
  const bool single = t != DType::f64;
  if (std::isnan(v)) return single ? "NAN" : "(double)NAN";
  if (std::isinf(v)) return str_cat(v < 0 ? "-" : "", single ? "INFINITY" : "(double)INFINITY");
  char buf[64];
  if (single) std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
  else std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string literal_of(const Tensor& t, int64_t i) {
  const DType dt = t.dtype();
  if (dtype_is_float(dt)) return float_literal(t.as_double(i), dt);
  if (dt == DType::boolean) return t.data<bool>()[i] ? "true" : "false";
  if (dt == DType::u64) return str_cat("UINT64_C(", t.data<uint64_t>()[i], ")");
  const int64_t v = t.as_int64(i);
  // INT64_MIN has no literal of its own: -9223372036854775808 is unary minus on an overflow.
  std::string text = v == INT64_MIN ? "(-INT64_C(9223372036854775807) - 1)" : str_cat("INT64_C(", v, ")");
  return dt == DType::i64 ? text : str_cat("(", compute_ctype(dt), ")", text);
}

void OpCall::fail(const std::string& why) const { throw Error(str_cat(node.describe(), ": ", why)); }

const std::string& OpCall::x(size_t i) const {
  if (!has(i)) fail(str_cat("input ", i, " is missing"));
  return ops[i].expr;
}

DType OpCall::dt(size_t i) const {
  x(i);
  if (ops[i].dtype == DType::undefined) fail(str_cat("dtype of input ", i, " is unknown"));
  return ops[i].dtype;
}

void OpCall::arity(size_t min, size_t max) const {
  if (ops.size() < min || ops.size() > max)
    fail(str_cat("takes ", min == max ? str_cat(min) : str_cat(min, " to ", max), " inputs, got ", ops.size()));
}

void OpCall::same_dtype(size_t i, size_t j) const {
  if (dt(i) != dt(j))
    fail(str_cat("inputs ", i, " and ", j, " must share a dtype, got ", dtype_name(dt(i)), " and ",
                 dtype_name(dt(j))));
}

void OpCall::require_numeric(size_t i) const {
  if (dt(i) == DType::boolean) fail("takes numeric inputs, got bool");
}

void OpCall::require_float(size_t i) const {
  if (!is_float(i)) fail(str_cat("takes float inputs, got ", dtype_name(dt(i))));
}

bool OpCall::constant_scalar(size_t i, double* v) const {
  if (!has(i) || ops[i].constant == nullptr || ops[i].constant->numel() == 0) return false;
  const Tensor& t = *ops[i].constant;
  const double first = t.as_double(0);
  for (int64_t k = 1; k < t.numel(); ++k)
    if (!(t.as_double(k) == first)) return false;
  *v = first;
  return true;
}

OpExpr emit_op(const Node& n, const std::vector<Operand>& in) {
  if (!n.domain.empty() && n.domain != "ai.onnx")
    throw Error(str_cat(n.describe(), ": op ", n.domain, "::", n.op, " has no generated code"));
  static const EmitterTable table = [] {
    EmitterTable t;
    add_math_emitters(t);
    add_arith_emitters(t);
    return t;
  }();
  auto it = table.find(n.op);
  if (it == table.end()) throw Error(str_cat(n.describe(), ": op ", n.op, " is not an elementwise op codegen supports"));
  return it->second(OpCall(n, in));
}

bool can_generate(const Node& body_node, std::string* why) {
  try {
    if (body_node.op == "Constant" && body_node.domain.empty()) {
      const Attribute* v = body_node.find_attr("value");
      KILN_CHECK(v != nullptr && v->kind() == AttrKind::Tensor, body_node.describe(),
                 ": only Constant with a tensor `value` is supported");
      KILN_CHECK(v->t().numel() <= kMaxBakedConstantElements, body_node.describe(), ": constant of ",
                 v->t().numel(), " elements is larger than ", kMaxBakedConstantElements);
      compute_ctype(v->t().dtype());
      return true;
    }
    std::vector<Operand> ops;
    for (size_t i = 0; i < body_node.inputs.size(); ++i) {
      const Value* v = body_node.inputs[i];
      Operand o;
      if (v != nullptr) {
        o.expr = str_cat("in", i);
        o.dtype = v->dtype;
        if (v->is_constant()) o.constant = &*v->initializer;
      }
      ops.push_back(std::move(o));
    }
    emit_op(body_node, ops);
    for (const Value* out : body_node.outputs)
      KILN_CHECK(out != nullptr, body_node.describe(), ": omitted outputs are not supported");
    KILN_CHECK(body_node.outputs.size() == 1, body_node.describe(), ": has ", body_node.outputs.size(),
               " outputs; elementwise ops have one");
    return true;
  } catch (const Error& e) {
    if (why != nullptr) *why = e.what();
    return false;
  }
}

}  // namespace kiln::codegen

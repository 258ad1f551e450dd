// Body graph -> one inlined C++ function computing every output from one element of each input.
// Body values become SSA locals; single-element constants become literals; larger constants
// (per-channel scales, biases) become static arrays read like inputs.
#include "kernel_body.h"

#include <map>

#include "kiln/codegen/emit.h"
#include "op_emit.h"

namespace kiln::codegen {
namespace {

// Whether the array of shape `s` moves along each of the `rank` output dims of `out` (aligned
// to the right, numpy style).
std::vector<bool> moves_along(const Shape& s, const Shape& out) {
  const int rank = static_cast<int>(out.rank());
  const int srank = static_cast<int>(s.rank());
  std::vector<bool> m(rank, false);
  for (int d = 0; d < rank; ++d) {
    const int k = d - (rank - srank);
    if (k < 0) continue;
    const bool out_is_one = out[d].is_static() && out[d].value == 1;
    const bool src_is_one = s[k].is_static() && s[k].value == 1;
    m[d] = !out_is_one && !src_is_one;
  }
  return m;
}

std::vector<int64_t> baked_strides(const Tensor& t, int rank) {
  const int crank = static_cast<int>(t.rank());
  std::vector<int64_t> own(crank, 1), out(rank, 0);
  for (int k = crank - 2; k >= 0; --k) own[k] = own[k + 1] * t.dim(k + 1);
  for (int d = 0; d < rank; ++d) {
    const int k = d - (rank - crank);
    if (k >= 0 && t.dim(k) != 1) out[d] = own[k];
  }
  return out;
}

std::string round_to_dtype(const std::string& e, DType t) {
  if (t == DType::f16) return str_cat("kiln_round_f16(", e, ")");
  if (t == DType::bf16) return str_cat("kiln_round_bf16(", e, ")");
  return e;
}

std::string store_expr(const std::string& e, DType t) {
  if (t == DType::f16) return str_cat("kiln_f2h(", e, ")");
  if (t == DType::bf16) return str_cat("kiln_f2bf(", e, ")");
  if (t == DType::boolean) return str_cat("(uint8_t)", e);
  return e;
}

// Baked arrays hold compute-type values, except bools, held as bytes like bool inputs.
std::string baked_ctype(DType t) { return t == DType::boolean ? "uint8_t" : compute_ctype(t); }

class BodyBuilder {
 public:
  explicit BodyBuilder(const Node& fused) : fused_(fused) {}

  KernelBody build() {
    const Attribute* attr = fused_.find_attr("body");
    KILN_CHECK(attr != nullptr && attr->kind() == AttrKind::Graph && attr->g() != nullptr, fused_.describe(),
               ": needs a graph attribute `body`");
    const Graph& body = *attr->g();
    KILN_CHECK(body.inputs.size() == fused_.inputs.size(), fused_.describe(), ": body has ", body.inputs.size(),
               " inputs, the node ", fused_.inputs.size());
    KILN_CHECK(body.outputs.size() == fused_.outputs.size(), fused_.describe(), ": body has ", body.outputs.size(),
               " outputs, the node ", fused_.outputs.size());
    KILN_CHECK(!body.outputs.empty(), fused_.describe(), ": has no outputs");
    plan_output_shape(body);
    for (size_t i = 0; i < body.inputs.size(); ++i) add_input(body, i);
    for (const Value* v : body.initializers) add_constant(v, *v->initializer);
    for (const auto& n : body.nodes()) add_node(*n);
    finish(body);
    return std::move(kb_);
  }

 private:
  DType input_dtype(const Graph& body, size_t i) const {
    const Value* outer = fused_.inputs[i];
    KILN_CHECK(outer != nullptr, fused_.describe(), ": input ", i, " is omitted");
    DType t = outer->dtype != DType::undefined ? outer->dtype : body.inputs[i]->dtype;
    KILN_CHECK(t != DType::undefined, fused_.describe(), ": dtype of input ", i, " is unknown");
    return t;
  }
  const Shape& input_shape(const Graph& body, size_t i) const {
    const Value* outer = fused_.inputs[i];
    const Shape& s = outer->shape.rank_known ? outer->shape : body.inputs[i]->shape;
    KILN_CHECK(s.rank_known, fused_.describe(), ": rank of input ", i, " is unknown");
    return s;
  }

  // The output shape is the broadcast of every input and every constant array of the body.
  void plan_output_shape(const Graph& body) {
    Shape out = Shape{};
    auto merge = [&](const Shape& s, const std::string& what) {
      auto b = broadcast_shapes(out, s);
      KILN_CHECK(b.has_value(), fused_.describe(), ": ", what, " ", s.str(), " does not broadcast with ", out.str());
      out = *b;
    };
    for (size_t i = 0; i < body.inputs.size(); ++i) merge(input_shape(body, i), str_cat("input ", i));
    for (const Value* v : body.initializers) merge(Shape::of(v->initializer->dims()), str_cat("constant %", v->name));
    for (const auto& n : body.nodes())
      if (const Attribute* a = n->find_attr("value"); n->op == "Constant" && a && a->kind() == AttrKind::Tensor)
        merge(Shape::of(a->t().dims()), str_cat("constant %", n->outputs[0]->name));
    for (const Value* o : fused_.outputs) {
      KILN_CHECK(o != nullptr, fused_.describe(), ": omitted outputs are not supported");
      KILN_CHECK(!o->shape.rank_known || o->shape.rank() == out.rank(), fused_.describe(), ": output %", o->name,
                 " has shape ", o->shape.str(), ", not the broadcast of the inputs ", out.str());
    }
    KILN_CHECK(out.rank() <= static_cast<size_t>(kMaxRank), fused_.describe(), ": output rank ", out.rank(),
               " is above ", kMaxRank);
    kb_.out_shape = out;
    kb_.rank = static_cast<int>(out.rank());
  }

  void add_input(const Graph& body, size_t i) {
    Source s;
    s.name = str_cat("in", i);
    s.dtype = input_dtype(body, i);
    s.node_input = static_cast<int>(i);
    s.param = str_cat("x", i);
    s.moves = moves_along(input_shape(body, i), kb_.out_shape);
    values_[body.inputs[i]] = Operand{s.param, s.dtype, nullptr};
    kb_.sources.push_back(std::move(s));
  }

  void add_constant(const Value* v, const Tensor& t) {
    compute_ctype(t.dtype());  // refuses dtypes without a C++ type
    if (t.numel() == 1) {
      values_[v] = Operand{literal_of(t, 0), t.dtype(), &t};
      return;
    }
    KILN_CHECK(t.numel() <= kMaxBakedConstantElements, fused_.describe(), ": constant %", v->name, " has ",
               t.numel(), " elements, more than the ", kMaxBakedConstantElements, " codegen bakes into source");
    Source s;
    s.name = str_cat("c", baked_++);
    s.param = str_cat("x", s.name);
    s.dtype = t.dtype();
    s.moves = moves_along(Shape::of(t.dims()), kb_.out_shape);
    s.baked_strides = baked_strides(t, kb_.rank);
    std::string items;
    for (int64_t k = 0; k < t.numel(); ++k) items += str_cat(k == 0 ? "" : ", ", k % 8 == 0 ? "\n    " : "", literal_of(t, k));
    kb_.definitions += str_cat("static const ", baked_ctype(t.dtype()), " ", s.name, "[", t.numel(), "] = {", items,
                               "};\n");
    values_[v] = Operand{s.param, s.dtype, &t};
    kb_.sources.push_back(std::move(s));
  }

  const Operand& operand(const Node& n, const Value* v) const {
    auto it = values_.find(v);
    KILN_CHECK(it != values_.end(), fused_.describe(), ": body node ", n.describe(), " reads %", v->name,
               ", which is not a body input, constant or result");
    return it->second;
  }

  void add_node(const Node& n) {
    if (n.op == "Constant" && n.domain.empty()) {
      std::string why;
      KILN_CHECK(can_generate(n, &why), fused_.describe(), ": ", why);
      add_constant(n.outputs[0], n.find_attr("value")->t());
      return;
    }
    KILN_CHECK(n.outputs.size() == 1 && n.outputs[0] != nullptr, fused_.describe(), ": body node ", n.describe(),
               " must have exactly one output");
    std::vector<Operand> in;
    for (const Value* v : n.inputs) in.push_back(v == nullptr ? Operand{} : operand(n, v));
    OpExpr e;
    try {
      e = emit_op(n, in);
    } catch (const Error& err) {
      throw Error(str_cat(fused_.describe(), ": body ", err.what()));
    }
    const Value* out = n.outputs[0];
    KILN_CHECK(out->dtype == DType::undefined || out->dtype == e.dtype, fused_.describe(), ": body node ",
               n.describe(), " declares %", out->name, " as ", dtype_name(out->dtype), " but computes ",
               dtype_name(e.dtype));
    const std::string local = str_cat("v", values_.size());
    statements_ += str_cat("  const ", compute_ctype(e.dtype), " ", local, " = ", round_to_dtype(e.expr, e.dtype),
                           ";  // ", n.op, "\n");
    values_[out] = Operand{local, e.dtype, nullptr};
  }

  void finish(const Graph& body) {
    std::string params;
    for (const Source& s : kb_.sources)
      params += str_cat(params.empty() ? "" : ", ", compute_ctype(s.dtype), " ", s.param);
    for (size_t k = 0; k < body.outputs.size(); ++k) {
      const Value* v = body.outputs[k];
      auto it = values_.find(v);
      KILN_CHECK(it != values_.end(), fused_.describe(), ": body output %", v->name, " is not computed in the body");
      const DType declared = fused_.outputs[k]->dtype;
      KILN_CHECK(declared == DType::undefined || declared == it->second.dtype, fused_.describe(), ": output ", k,
                 " is declared ", dtype_name(declared), " but the body computes ", dtype_name(it->second.dtype));
      kb_.out_dtypes.push_back(it->second.dtype);
      params += str_cat(params.empty() ? "" : ", ", storage_ctype(it->second.dtype), "& y", k);
      statements_ += str_cat("  y", k, " = ", store_expr(it->second.expr, it->second.dtype), ";\n");
    }
    kb_.body_fn = str_cat("KILN_INLINE void body(", params, ") {\n", statements_, "}\n");
    // Names from the model stay out of the source, so equal bodies give equal kernels.
    for (size_t i = 0; i < body.inputs.size(); ++i)
      kb_.signature += str_cat(i ? ", " : "", "in", i, " ", dtype_name(kb_.sources[i].dtype), input_shape(body, i).str());
    kb_.signature += " ->";
    for (size_t k = 0; k < kb_.out_dtypes.size(); ++k)
      kb_.signature += str_cat(k ? ", " : " ", "out", k, " ", dtype_name(kb_.out_dtypes[k]));
  }

  const Node& fused_;
  KernelBody kb_;
  std::map<const Value*, Operand> values_;
  std::string statements_;
  int baked_ = 0;
};

}  // namespace

KernelBody build_kernel_body(const Node& fused) { return BodyBuilder(fused).build(); }

std::string element_ctype(const Source& s) {
  return s.node_input >= 0 ? storage_ctype(s.dtype) : baked_ctype(s.dtype);
}

std::string load(const Source& s, const std::string& array, const std::string& offset) {
  std::string e = str_cat(array, "[", offset, "]");
  if (s.dtype == DType::boolean) return str_cat("(", e, " != 0)");
  if (s.node_input >= 0 && s.dtype == DType::f16) return str_cat("kiln_h2f(", e, ")");
  if (s.node_input >= 0 && s.dtype == DType::bf16) return str_cat("kiln_bf2f(", e, ")");
  return e;  // baked float arrays hold compute-type values already
}

}  // namespace kiln::codegen

// GraphProto -> Graph: inputs, initializers, nodes with attributes and subgraphs,
// value_info hints, outputs. Subgraphs see the enclosing graph through Graph::parent, so a
// name a body reads from outside resolves to the outer Value.
#include <set>
#include <unordered_map>

#include "onnx_convert.h"

namespace kiln::onnx_io {
namespace {

using AP = onnx::AttributeProto;

std::string node_label(const onnx::NodeProto& n) {
  return str_cat(n.op_type(), " node '", n.name(), "'");
}

// Old exporters leave AttributeProto.type unset; the filled field tells the kind.
AP::AttributeType attr_type(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.has_sparse_tensor()) return AP::SPARSE_TENSOR;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  return AP::UNDEFINED;
}

Attribute attr_from_onnx(AP& a, Graph& owner, int64_t ir_version, const TensorSource& src,
                         const std::string& where) {
  std::string what = str_cat(where, ": attribute '", a.name(), "'");
  KILN_CHECK(a.ref_attr_name().empty(), what, ": references a function attribute, which is not supported");
  switch (attr_type(a)) {
    case AP::INT: return Attribute(static_cast<int64_t>(a.i()));
    case AP::FLOAT: return Attribute(a.f());
    case AP::STRING: return Attribute(a.s());
    case AP::TENSOR: return Attribute(tensor_from_onnx(*a.mutable_t(), src, what));
    case AP::GRAPH: {
      auto sg = std::make_shared<Graph>();
      sg->parent = &owner;
      sg->name = a.g().name().empty() ? a.name() : a.g().name();
      graph_from_onnx(*a.mutable_g(), *sg, ir_version, src);
      return Attribute(std::move(sg));
    }
    case AP::INTS: return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AP::FLOATS: return Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
    case AP::STRINGS: return Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AP::SPARSE_TENSOR:
    case AP::SPARSE_TENSORS: throw Error(str_cat(what, ": sparse tensor attributes are not supported"));
    case AP::TENSORS:
    case AP::GRAPHS:
    case AP::TYPE_PROTO:
    case AP::TYPE_PROTOS: throw Error(str_cat(what, ": attribute type ", AP::AttributeType_Name(a.type()),
                                              " is not supported"));
    default: throw Error(str_cat(what, ": has no value or an unknown type ", static_cast<int>(a.type())));
  }
}

// A unique node name within the graph: empty names get the op type, duplicates a suffix.
std::string unique_node_name(const std::string& name, const std::string& op, std::set<std::string>& used) {
  std::string base = name.empty() ? op : name;
  if (base.empty()) base = "node";
  std::string cand = base;
  for (int64_t i = 1; !used.insert(cand).second; ++i) cand = str_cat(base, "_", i);
  return cand;
}

void convert_node(onnx::NodeProto& np, Graph& g, int64_t ir_version, const TensorSource& src,
                  std::set<std::string>& node_names) {
  const std::string where = node_label(np);
  KILN_CHECK(!np.op_type().empty(), "node '", np.name(), "' has no op_type");
  std::vector<Value*> inputs;
  for (int i = 0; i < np.input_size(); ++i) {
    const std::string& in = np.input(i);
    if (in.empty()) {  // omitted optional input
      inputs.push_back(nullptr);
      continue;
    }
    Value* v = g.find(in);
    KILN_CHECK(v != nullptr, where, ": input ", i, " '", in, "' is not defined before it is used");
    inputs.push_back(v);
  }
  std::map<std::string, Attribute> attrs;
  for (auto& a : *np.mutable_attribute()) {
    KILN_CHECK(!a.name().empty(), where, ": has an attribute without a name");
    KILN_CHECK(!attrs.count(a.name()), where, ": attribute '", a.name(), "' is given twice");
    attrs[a.name()] = attr_from_onnx(a, g, ir_version, src, where);
  }
  std::vector<std::string> outs(np.output().begin(), np.output().end());
  for (const auto& o : outs)
    KILN_CHECK(o.empty() || g.find_local(o) == nullptr, where, ": output '", o, "' is already defined");
  std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
  g.add_node(np.op_type(), inputs, outs, std::move(attrs), unique_node_name(np.name(), np.op_type(), node_names),
             domain);
}

// value_info and graph output types are hints: they fill what the node outputs do not know yet.
void apply_hint(Value* v, DType dt, const Shape& s, const std::string& what) {
  if (dt != DType::undefined) {
    KILN_CHECK(v->dtype == DType::undefined || v->dtype == dt, what, " is declared ", dtype_name(dt), " but is ",
               dtype_name(v->dtype));
    v->dtype = dt;
  }
  if (s.rank_known && !v->shape.rank_known) v->shape = s;
}

}  // namespace

void graph_from_onnx(onnx::GraphProto& gp, Graph& g, int64_t ir_version, const TensorSource& src) {
  if (g.name.empty()) g.name = gp.name();
  KILN_CHECK(gp.sparse_initializer_size() == 0, "graph '", g.name, "': sparse initializers are not supported");
  std::unordered_map<std::string, int> init_index;
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const std::string& n = gp.initializer(i).name();
    KILN_CHECK(!n.empty(), "graph '", g.name, "': initializer ", i, " has no name");
    KILN_CHECK(init_index.emplace(n, i).second, "graph '", g.name, "': initializer '", n, "' is defined twice");
  }
  // Before IR 4 every initializer was also listed as an input; those are weights, not inputs.
  // From IR 4 on an input with an initializer is an input whose default is that initializer.
  std::vector<Value*> init_values(gp.initializer_size(), nullptr);
  for (const auto& vi : gp.input()) {
    auto it = init_index.find(vi.name());
    if (it != init_index.end() && ir_version < 4) continue;
    std::string what = str_cat("graph '", g.name, "': input '", vi.name(), "'");
    DType dt;
    Shape s;
    type_from_onnx(vi.type(), what, &dt, &s);
    KILN_CHECK(!vi.name().empty(), "graph '", g.name, "': an input has no name");
    Value* v = g.add_input(vi.name(), dt, s);
    if (it != init_index.end()) {
      Tensor t = tensor_from_onnx(*gp.mutable_initializer(it->second), src, what);
      KILN_CHECK(dt == DType::undefined || dt == t.dtype(), what, " is declared ", dtype_name(dt),
                 " but its initializer is ", dtype_name(t.dtype()));
      v->dtype = t.dtype();
      if (!v->shape.rank_known) v->shape = Shape::of(t.dims());
      v->initializer = std::move(t);
      init_values[it->second] = v;
    }
  }
  for (int i = 0; i < gp.initializer_size(); ++i) {
    if (init_values[i]) {
      g.initializers.push_back(init_values[i]);
      continue;
    }
    auto& tp = *gp.mutable_initializer(i);
    std::string what = str_cat("graph '", g.name, "': initializer '", tp.name(), "'");
    Tensor t = tensor_from_onnx(tp, src, what);
    KILN_CHECK(g.find_local(tp.name()) == nullptr, what, " is defined twice");
    g.add_initializer(tp.name(), std::move(t));
  }
  std::set<std::string> node_names;
  for (auto& np : *gp.mutable_node()) convert_node(np, g, ir_version, src, node_names);
  for (const auto& vi : gp.value_info()) {
    Value* v = g.find_local(vi.name());
    if (v == nullptr || v->producer == nullptr) continue;  // stale hint, or not an intermediate value
    std::string what = str_cat("graph '", g.name, "': value '", vi.name(), "'");
    DType dt;
    Shape s;
    type_from_onnx(vi.type(), what, &dt, &s);
    apply_hint(v, dt, s, what);
  }
  for (const auto& vi : gp.output()) {
    std::string what = str_cat("graph '", g.name, "': output '", vi.name(), "'");
    KILN_CHECK(!vi.name().empty(), "graph '", g.name, "': an output has no name");
    Value* v = g.find(vi.name());
    KILN_CHECK(v != nullptr, what, " is never produced");
    DType dt;
    Shape s;
    type_from_onnx(vi.type(), what, &dt, &s);
    // A subgraph may pass an outer value through; outer values keep their own hints.
    if (v->owner == &g) apply_hint(v, dt, s, what);
    g.outputs.push_back(v);
  }
}

}  // namespace kiln::onnx_io

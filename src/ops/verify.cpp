// Op-level verification against the table: op known, opset in range, arity, attributes.
#include "kiln/ops/kiln_ops.h"
#include "op_helpers.h"

namespace kiln::ops {
namespace {

void verify_graph_ops(const Graph& g, const Model& m) {
  int64_t opset = m.opset("");
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    const OpDef* def = find_op(n.domain, n.op);
    std::string where = str_cat(n.describe(), " (", n.domain.empty() ? "ai.onnx" : n.domain, " opset ",
                                n.domain.empty() ? opset : m.opset(n.domain), ")");
    if (n.domain.empty() || n.domain == "ai.onnx")
      KILN_CHECK(opset >= kMinOpset && opset <= kMaxOpset, where, ": opset ", opset,
                 " is out of the supported range ", kMinOpset, "..", kMaxOpset);
    KILN_CHECK(def != nullptr, where, ": unknown op '", n.op, "'");
    if (n.domain == kKilnDomain)
      KILN_CHECK(m.opset(n.domain) == kKilnOpsetVersion, where, ": the model must import domain kiln version ",
                 kKilnOpsetVersion, " (the pass that introduces a kiln op sets Model::opsets[\"kiln\"])");
    if (def->domain.empty())
      KILN_CHECK(opset >= def->since, where, ": op '", n.op, "' needs opset >= ", def->since);
    int nin = static_cast<int>(n.inputs.size());
    int nout = static_cast<int>(n.outputs.size());
    // Trailing omitted optional inputs count as absent.
    while (nin > 0 && n.inputs[nin - 1] == nullptr) --nin;
    KILN_CHECK(nin >= def->min_inputs, where, ": has ", nin, " inputs, needs at least ", def->min_inputs);
    KILN_CHECK(def->max_inputs < 0 || nin <= def->max_inputs, where, ": has ", nin, " inputs, takes at most ",
               def->max_inputs);
    KILN_CHECK(nout >= def->min_outputs, where, ": has ", nout, " outputs, needs at least ", def->min_outputs);
    KILN_CHECK(def->max_outputs < 0 || nout <= def->max_outputs, where, ": has ", nout,
               " outputs, gives at most ", def->max_outputs);
    for (int i = 0; i < def->min_inputs && i < nin; ++i)
      KILN_CHECK(n.inputs[i] != nullptr, where, ": required input ", i, " is missing");
    for (const auto& spec : def->attrs) {
      const Attribute* a = n.find_attr(std::string(spec.name));
      if (!a) {
        KILN_CHECK(!spec.required, where, ": required attribute '", spec.name, "' is missing");
        continue;
      }
      bool ok = a->kind() == spec.kind || (spec.kind == AttrKind::Float && a->kind() == AttrKind::Int);
      KILN_CHECK(ok, where, ": attribute '", spec.name, "' must be ", attr_kind_name(spec.kind), ", got ",
                 attr_kind_name(a->kind()));
    }
    for (const Graph* sg : n.subgraphs()) verify_graph_ops(*sg, m);
  }
}

}  // namespace

void verify_model(const Model& m) {
  KILN_CHECK(m.graph != nullptr, "model has no graph");
  verify_structure(*m.graph);
  verify_graph_ops(*m.graph, m);
}

}  // namespace kiln::ops

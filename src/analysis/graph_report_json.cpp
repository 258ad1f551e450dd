// `kiln graph --format json`: the summary for tools. Shapes are arrays whose dims are
// numbers (static), strings (symbolic) or null (unknown); an unknown rank is null, and
// so are flops/bytes of a node without a cost.
#include "graph_report_internal.h"
#include "json_writer.h"

namespace kiln::analysis {
namespace {

void shape(JsonWriter& w, const Shape& s) {
  if (!s.rank_known) {
    w.null();
    return;
  }
  w.begin_array();
  for (const Dim& d : s.dims) {
    if (d.is_static())
      w.value(d.value);
    else if (d.is_symbolic())
      w.value(d.symbol);
    else
      w.null();
  }
  w.end_array();
}

void dtype(JsonWriter& w, const Value* v) {
  if (!v || v->dtype == DType::undefined)
    w.null();
  else
    w.value(dtype_name(v->dtype));
}

void value_entry(JsonWriter& w, const Value& v) {
  w.begin_object().key("name").value(v.name).key("dtype");
  dtype(w, &v);
  w.key("shape");
  shape(w, v.shape);
  w.end_object();
}

// "inputs"/"outputs": names (null = omitted); "shapes"/"dtypes": {"inputs": [...], "outputs": [...]}.
void node_values(JsonWriter& w, const Node& n) {
  for (const auto* side : {&n.inputs, &n.outputs}) {
    w.key(side == &n.inputs ? "inputs" : "outputs").begin_array();
    for (const Value* v : *side) v ? w.value(v->name) : w.null();
    w.end_array();
  }
  w.key("shapes").begin_object();
  for (const auto* side : {&n.inputs, &n.outputs}) {
    w.key(side == &n.inputs ? "inputs" : "outputs").begin_array();
    for (const Value* v : *side) v ? shape(w, v->shape) : (void)w.null();
    w.end_array();
  }
  w.end_object().key("dtypes").begin_object();
  for (const auto* side : {&n.inputs, &n.outputs}) {
    w.key(side == &n.inputs ? "inputs" : "outputs").begin_array();
    for (const Value* v : *side) dtype(w, v);
    w.end_array();
  }
  w.end_object();
}

}  // namespace

std::string render_json(const Model& m, const GraphSummary& s) {
  const Graph& g = *m.graph;
  JsonWriter w;
  w.begin_object().key("model").value(g.name).key("ir_version").value(m.ir_version).key("opsets").begin_object();
  for (const auto& [domain, version] : m.opsets) w.key(domain).value(version);  // "" = ai.onnx
  w.end_object();
  w.key("inputs").begin_array();
  for (const Value* v : g.inputs)
    if (v) value_entry(w, *v);
  w.end_array().key("outputs").begin_array();
  for (const Value* v : g.outputs)
    if (v) value_entry(w, *v);
  w.end_array();

  w.key("nodes").begin_array();
  for (const NodeSummary& ns : s.nodes) {
    w.begin_object().key("name").value(ns.path).key("op").value(ns.node->op);
    if (!ns.node->domain.empty()) w.key("domain").value(ns.node->domain);
    w.key("depth").value(static_cast<int64_t>(ns.depth));
    node_values(w, *ns.node);
    w.key("flops");
    ns.cost ? w.value(ns.cost->flops) : w.null();
    w.key("bytes");
    ns.cost ? w.value(ns.cost->bytes_read + ns.cost->bytes_written) : w.null();
    w.end_object();
  }
  w.end_array();

  w.key("totals")
      .begin_object()
      .key("nodes").value(static_cast<int64_t>(s.nodes.size()))
      .key("params").value(s.params)
      .key("param_bytes").value(s.param_bytes)
      .key("flops").value(s.flops)
      .key("bytes").value(s.bytes)
      .key("unknown_cost_nodes").value(s.unknown_cost)
      .end_object();
  // Symbolic input dims taken as 1 for the costs (bind them with --dim for real sizes).
  w.key("assumed_dims").begin_object();
  for (const auto& [name, size] : s.assumed) w.key(name).value(size);
  w.end_object();
  w.key("histogram").begin_object();
  for (const auto& [op, count] : s.histogram) w.key(op).value(count);
  w.end_object().end_object();
  return w.str() + "\n";
}

}  // namespace kiln::analysis

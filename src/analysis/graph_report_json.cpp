// `kiln graph --format json`: the summary for tools. Shapes are arrays whose dims are
// numbers (static), strings (symbolic) or null (unknown); an unknown rank is null, and
// so are flops/bytes of a node without a cost.
#include "graph_report_internal.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {
namespace {

json::Value shape(const Shape& s) {
  if (!s.rank_known) return {};
  json::Value dims{json::Array{}};
  for (const Dim& d : s.dims) {
    if (d.is_static())
      dims.push(d.value);
    else if (d.is_symbolic())
      dims.push(d.symbol);
    else
      dims.push({});
  }
  return dims;
}

json::Value dtype(const Value* v) {
  if (!v || v->dtype == DType::undefined) return {};
  return dtype_name(v->dtype);
}

json::Value value_entry(const Value& v) {
  json::Value e;
  e.set("name", v.name);
  e.set("dtype", dtype(&v));
  e.set("shape", shape(v.shape));
  return e;
}

template <class Of>
json::Value list(const std::vector<Value*>& values, Of of) {
  json::Value l{json::Array{}};
  for (const Value* v : values) l.push(of(v));
  return l;
}

// "inputs"/"outputs": names (null = omitted); "shapes"/"dtypes": {"inputs": [...], "outputs": [...]}.
void node_values(json::Value& out, const Node& n) {
  auto name = [](const Value* v) { return v ? json::Value(v->name) : json::Value(); };
  auto shape_of = [](const Value* v) { return v ? shape(v->shape) : json::Value(); };
  auto both_sides = [&](auto of) {
    json::Value sides;
    sides.set("inputs", list(n.inputs, of));
    sides.set("outputs", list(n.outputs, of));
    return sides;
  };
  out.set("inputs", list(n.inputs, name));
  out.set("outputs", list(n.outputs, name));
  out.set("shapes", both_sides(shape_of));
  out.set("dtypes", both_sides(dtype));
}

}  // namespace

std::string render_json(const Model& m, const GraphSummary& s) {
  const Graph& g = *m.graph;
  json::Value j;
  j.set("model", g.name);
  j.set("ir_version", m.ir_version);
  json::Value& opsets = j.set("opsets", json::Object{});
  for (const auto& [domain, version] : m.opsets) opsets.set(domain, version);  // "" = ai.onnx
  for (const auto* side : {&g.inputs, &g.outputs}) {
    json::Value& entries = j.set(side == &g.inputs ? "inputs" : "outputs", json::Array{});
    for (const Value* v : *side)
      if (v) entries.push(value_entry(*v));
  }

  json::Value& nodes = j.set("nodes", json::Array{});
  for (const NodeSummary& ns : s.nodes) {
    json::Value n;
    n.set("name", ns.path);
    n.set("op", ns.node->op);
    if (!ns.node->domain.empty()) n.set("domain", ns.node->domain);
    n.set("depth", ns.depth);
    node_values(n, *ns.node);
    n.set("flops", ns.cost ? json::Value(ns.cost->flops) : json::Value());
    n.set("bytes", ns.cost ? json::Value(ns.cost->bytes_read + ns.cost->bytes_written) : json::Value());
    nodes.push(std::move(n));
  }

  json::Value& totals = j.set("totals", json::Object{});
  totals.set("nodes", s.nodes.size());
  totals.set("params", s.params);
  totals.set("param_bytes", s.param_bytes);
  totals.set("flops", s.flops);
  totals.set("bytes", s.bytes);
  totals.set("unknown_cost_nodes", s.unknown_cost);
  // Symbolic input dims taken as 1 for the costs (bind them with --dim for real sizes).
  json::Value& assumed = j.set("assumed_dims", json::Object{});
  for (const auto& [name, size] : s.assumed) assumed.set(name, size);
  json::Value& histogram = j.set("histogram", json::Object{});
  for (const auto& [op, count] : s.histogram) histogram.set(op, count);
  return j.dump() + "\n";
}

}  // namespace kiln::analysis

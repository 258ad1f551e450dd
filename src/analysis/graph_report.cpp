// `kiln graph`: the summary every format is rendered from, and the format switch.
#include <algorithm>
#include <cstdio>
#include <map>

#include "graph_report_internal.h"

namespace kiln::analysis {

GraphFormat graph_format_from_name(std::string_view name) {
  if (name == "text") return GraphFormat::text;
  if (name == "dot") return GraphFormat::dot;
  if (name == "svg") return GraphFormat::svg;
  if (name == "json") return GraphFormat::json;
  throw Error(str_cat("unknown graph format '", name, "' (choose text, dot, svg or json)"));
}

std::string op_key(const Node& n) { return n.domain.empty() ? n.op : n.domain + "::" + n.op; }

std::string type_str(const Value& v) {
  return std::string(v.dtype == DType::undefined ? "?" : dtype_name(v.dtype)) + v.shape.str();
}

namespace {

std::string scaled(double v, const char* const* units, double step, const char* sep) {
  int u = 0;
  while (std::abs(v) >= step && units[u + 1] != nullptr) {
    v /= step;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f%s%s", v, units[0][0] ? sep : "", units[0]);
  else
    std::snprintf(buf, sizeof buf, "%.2f%s%s", v, sep, units[u]);
  return buf;
}

void summarize(const Graph& g, const std::string& prefix, int depth, GraphSummary& s,
               std::map<std::string, int64_t>& counts) {
  if (depth == 0)
    for (const Value* v : g.inputs)
      for (const Dim& d : v->shape.dims)
        if (d.is_symbolic()) s.assumed.emplace(d.symbol, 1);
  for (const Value* v : g.initializers) {
    if (!v || !v->initializer) continue;
    s.params += v->initializer->numel();
    s.param_bytes += static_cast<int64_t>(v->initializer->nbytes());
  }
  for (const auto& n : g.nodes()) {
    NodeSummary ns;
    ns.node = n.get();
    ns.path = prefix + n->name;
    ns.depth = depth;
    ns.cost = ops::node_cost(*n, s.assumed);
    if (ns.cost) {
      s.flops += ns.cost->flops;
      s.bytes += ns.cost->bytes_read + ns.cost->bytes_written;
    } else {
      ++s.unknown_cost;
    }
    ++counts[op_key(*n)];
    std::string path = ns.path;
    s.nodes.push_back(std::move(ns));
    for (const auto& [attr, a] : n->attrs)
      if (a.kind() == AttrKind::Graph && a.g()) summarize(*a.g(), path + "/" + attr + "/", depth + 1, s, counts);
  }
}

}  // namespace

std::string human_count(double v) {
  static const char* const units[] = {"", "K", "M", "G", "T", "P", nullptr};
  return scaled(v, units, 1000.0, "");
}

std::string human_bytes(double v) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", nullptr};
  return scaled(v, units, 1024.0, " ");
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

GraphSummary summarize_graph(const Model& m) {
  KILN_CHECK(m.graph != nullptr, "graph report: model has no graph");
  GraphSummary s;
  std::map<std::string, int64_t> counts;
  summarize(*m.graph, "", 0, s, counts);
  s.histogram.assign(counts.begin(), counts.end());
  std::stable_sort(s.histogram.begin(), s.histogram.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return s;
}

std::string render_graph(const Model& m, GraphFormat fmt) {
  GraphSummary s = summarize_graph(m);
  switch (fmt) {
    case GraphFormat::text: return render_text(m, s);
    case GraphFormat::dot: return render_dot(m, s);
    case GraphFormat::svg: return dot_to_svg(render_dot(m, s));
    case GraphFormat::json: return render_json(m, s);
  }
  throw Error("graph report: unknown format");
}

}  // namespace kiln::analysis

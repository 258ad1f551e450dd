// `kiln graph --format text`: an aligned table, totals and the op histogram.
#include <algorithm>

#include "graph_report_internal.h"

namespace kiln::analysis {
namespace {

std::string value_list(const std::vector<Value*>& vs) {
  std::string out;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i) out += ", ";
    out += vs[i] ? vs[i]->name + ":" + type_str(*vs[i]) : "_";
  }
  return out;
}

// Pads every column to its widest cell; the last column is not padded.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      std::string pad(width[c] - r[c].size(), ' ');
      if (c) line += "  ";
      line += right[c] ? pad + r[c] : (c + 1 == r.size() ? r[c] : r[c] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string render_text(const Model& m, const GraphSummary& s) {
  const Graph& g = *m.graph;
  std::string out = str_cat("model ", g.name.empty() ? "(unnamed)" : g.name, "  ir ", m.ir_version, "  opset ",
                            m.opset(), "\n");
  out += "inputs:  " + (g.inputs.empty() ? std::string("(none)") : value_list(g.inputs)) + "\n";
  out += "outputs: " + (g.outputs.empty() ? std::string("(none)") : value_list(g.outputs)) + "\n\n";

  std::vector<std::vector<std::string>> rows = {{"#", "op", "name", "FLOPs", "bytes", "inputs", "outputs"}};
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const NodeSummary& ns = s.nodes[i];
    const auto& c = ns.cost;
    rows.push_back({std::to_string(i), std::string(2 * ns.depth, ' ') + op_key(*ns.node), ns.path,
                    c ? human_count(c->flops) : "?", c ? human_bytes(c->bytes_read + c->bytes_written) : "?",
                    value_list(ns.node->inputs), value_list(ns.node->outputs)});
  }
  out += table(rows, {true, false, false, true, true, false, false});

  out += str_cat("\ntotals: ", s.nodes.size(), " nodes, ", s.params, " params (", human_bytes(s.param_bytes),
                 "), ", human_count(s.flops), " FLOPs, ", human_bytes(s.bytes), " moved");
  if (s.unknown_cost)
    out += str_cat(", ", s.unknown_cost, s.unknown_cost == 1 ? " node" : " nodes", " with unknown cost ('?', not in the sums)");
  if (!s.assumed.empty()) {
    std::string dims;
    for (const auto& [name, size] : s.assumed) dims += str_cat(dims.empty() ? "" : ", ", name, "=", size);
    out += str_cat("\n(costs take the dynamic dims as ", dims, "; give real sizes with --dim)");
  }
  out += "\n\nop histogram:\n";
  std::vector<std::vector<std::string>> hist;
  for (const auto& [op, count] : s.histogram) hist.push_back({op, std::to_string(count)});
  if (!hist.empty()) {
    std::string h = table(hist, {false, true});
    for (size_t p = 0; p < h.size();) {  // indent each line
      out += "  ";
      size_t e = h.find('\n', p);
      out += h.substr(p, e - p + 1);
      p = e + 1;
    }
  }
  return out;
}

}  // namespace kiln::analysis

// Shared by the `kiln graph` renderers (graph_report*.cpp).
#pragma once
#include <string>
#include <string_view>

#include "kiln/analysis/graph_report.h"

namespace kiln::analysis {

std::string render_text(const Model& m, const GraphSummary& s);
std::string render_dot(const Model& m, const GraphSummary& s);
std::string render_json(const Model& m, const GraphSummary& s);
// Runs Graphviz on dot text. `dot_exe` empty: look for `dot` on PATH, then /usr/bin/dot.
std::string dot_to_svg(const std::string& dot, const std::string& dot_exe = "");

std::string op_key(const Node& n);                    // "Conv", "com.microsoft::Attention"
std::string type_str(const Value& v);                 // "f32[N,3,224,224]", "?[*]"
std::string human_count(double v);                    // "512", "1.50K", "2.30G"
std::string human_bytes(double v);                    // "512 B", "1.50 KiB"
// <, >, & and " as entities, for text and attribute values in SVG and HTML.
std::string xml_escape(std::string_view s);

}  // namespace kiln::analysis

// kiln graph MODEL: every node with shapes, dtypes, FLOPs and bytes; totals; op histogram.
#include <cstdio>

#include "common.h"
#include "kiln/analysis/graph_report.h"
#include "kiln/ir/text.h"
#include "verbs.h"

namespace kiln::cli {

int verb_graph(int argc, char** argv) {
  Args a("graph", argc, argv, {"--format", "--dim", "--shape", "-o", "--out"}, {});
  KILN_CHECK(a.positional().size() == 1, "kiln graph: expected one MODEL argument");
  std::string fmt = a.get_or("--format", "text");
  Model m = load_model(a.positional()[0], parse_shape_flags(a));
  std::string out;
  if (fmt == "text") out = analysis::render_graph(m, analysis::GraphFormat::text);
  else if (fmt == "dot") out = analysis::render_graph(m, analysis::GraphFormat::dot);
  else if (fmt == "svg") out = analysis::render_graph(m, analysis::GraphFormat::svg);
  else if (fmt == "json") out = analysis::render_graph(m, analysis::GraphFormat::json);
  else if (fmt == "ir") {
    PrintOptions po;
    po.elide_weights = true;
    out = print_model(m, po);
  } else {
    throw Error(str_cat("kiln graph: unknown --format '", fmt, "' (text, dot, svg, json, ir)"));
  }
  std::string path = a.get_or("--out", a.get_or("-o", ""));
  if (path.empty()) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  write_file(path, out);
  std::fprintf(stderr, "wrote %s (%zu bytes)\n", path.c_str(), out.size());
  return 0;
}

}  // namespace kiln::cli

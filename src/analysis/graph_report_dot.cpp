// `kiln graph --format dot|svg`: a Graphviz digraph. Nodes show op, name and result
// types; edges carry tensor types; graph inputs are ellipses and outputs octagons;
// weights (initializers) are not drawn but listed in the label of the node reading them;
// subgraphs are dashed clusters whose results flow (dashed) into their parent node.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "graph_report_internal.h"

namespace kiln::analysis {
namespace {

// A DOT double-quoted string; "\n" in `s` becomes a centred line break.
std::string q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

class DotWriter {
 public:
  DotWriter(const GraphSummary& s) {
    for (size_t i = 0; i < s.nodes.size(); ++i) node_id_[s.nodes[i].node] = "n" + std::to_string(i);
    for (const NodeSummary& ns : s.nodes) path_[ns.node] = ns.path;
  }

  std::string run(const Graph& g) {
    out_ << "digraph " << q(g.name.empty() ? "graph" : g.name) << " {\n"
         << "  rankdir=TB;\n"
         << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", fontname=\"Helvetica\", "
            "fontsize=10];\n"
         << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n"
         << "  graph [fontname=\"Helvetica\", fontsize=10];\n";
    graph(g, nullptr, "  ");
    out_ << edges_.str() << "}\n";
    return out_.str();
  }

 private:
  void graph(const Graph& g, const Node* parent, const std::string& ind) {
    for (const Value* v : g.inputs) {
      if (!v) continue;
      std::string id = "v" + std::to_string(next_id_++);
      source_[v] = id;
      out_ << ind << id << " [shape=ellipse, fillcolor=\"#d9f2d9\", label=" << q(v->name + "\n" + type_str(*v))
           << "];\n";
    }
    for (const auto& n : g.nodes()) {
      node(*n, ind);
      for (const auto& [attr, a] : n->attrs) {
        if (a.kind() != AttrKind::Graph || !a.g()) continue;
        out_ << ind << "subgraph " << q("cluster_" + node_id_.at(n.get()) + "_" + attr) << " {\n"
             << ind << "  label=" << q(path_.at(n.get()) + "/" + attr) << "; style=dashed;\n";
        graph(*a.g(), n.get(), ind + "  ");
        out_ << ind << "}\n";
      }
    }
    for (const Value* v : g.outputs) {
      if (!v) continue;
      auto it = source_.find(v);
      if (parent) {  // a subgraph's results are what its parent node consumes
        if (it != source_.end())
          edges_ << "  " << it->second << " -> " << node_id_.at(parent) << " [style=dashed, label=" << q(type_str(*v))
                 << "];\n";
        continue;
      }
      std::string id = "v" + std::to_string(next_id_++);
      std::string label = v->name + "\n" + type_str(*v) + (it == source_.end() ? "\n(constant)" : "");
      out_ << ind << id << " [shape=octagon, fillcolor=\"#f7dede\", label=" << q(label) << "];\n";
      if (it != source_.end()) edges_ << "  " << it->second << " -> " << id << " [label=" << q(type_str(*v)) << "];\n";
    }
  }

  void node(const Node& n, const std::string& ind) {
    const std::string& id = node_id_.at(&n);
    std::string label = op_key(n) + "\n" + n.name;
    for (const Value* o : n.outputs)
      if (o) label += "\n" + type_str(*o);
    for (const Value* in : n.inputs)
      if (in && in->is_constant() && !source_.count(in)) label += "\nweight " + in->name + ": " + type_str(*in);
    out_ << ind << id << " [label=" << q(label) << "];\n";
    for (const Value* in : n.inputs) {
      if (!in) continue;
      auto it = source_.find(in);
      if (it != source_.end()) edges_ << "  " << it->second << " -> " << id << " [label=" << q(type_str(*in)) << "];\n";
    }
    for (const Value* o : n.outputs)
      if (o) source_[o] = id;
  }

  std::ostringstream out_;
  // Edges go after all nodes, at the top level: an edge written inside a cluster would
  // pull its outer endpoint into that cluster.
  std::ostringstream edges_;
  std::map<const Node*, std::string> node_id_, path_;
  std::map<const Value*, std::string> source_;  // the DOT node a value comes out of
  uint64_t next_id_ = 0;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t p = 0; p <= dirs.size();) {
    size_t e = dirs.find(':', p);
    if (e == std::string::npos) e = dirs.size();
    std::string cand = (e > p ? dirs.substr(p, e - p) : std::string(".")) + "/dot";
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    p = e + 1;
  }
  return ::access("/usr/bin/dot", X_OK) == 0 ? "/usr/bin/dot" : "";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A temp file removed when it goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& suffix_tag) {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/kiln-graph-" + suffix_tag + "-XXXXXX";
    int fd = ::mkstemp(tmpl.data());
    KILN_CHECK(fd >= 0, "graph report: cannot create a temp file in ", tmpl);
    ::close(fd);
    path = tmpl;
  }
  ~TempFile() { ::unlink(path.c_str()); }
};

}  // namespace

std::string render_dot(const Model& m, const GraphSummary& s) { return DotWriter(s).run(*m.graph); }

std::string dot_to_svg(const std::string& dot, const std::string& dot_exe) {
  std::string exe = dot_exe.empty() ? find_dot() : dot_exe;
  KILN_CHECK(!exe.empty() && ::access(exe.c_str(), X_OK) == 0,
             "graphviz 'dot' not found; install the graphviz package");
  TempFile in("dot"), err("err");
  {
    std::ofstream f(in.path, std::ios::binary);
    f << dot;
    KILN_CHECK(f.good(), "graph report: cannot write ", in.path);
  }
  std::string cmd = shell_quote(exe) + " -Tsvg " + shell_quote(in.path) + " 2>" + shell_quote(err.path);
  FILE* p = ::popen(cmd.c_str(), "r");
  KILN_CHECK(p != nullptr, "graph report: cannot run ", exe);
  std::string svg;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) svg.append(buf, n);
  int status = ::pclose(p);
  if (status != 0) {
    std::string why = slurp(err.path);
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    for (char& c : why)
      if (c == '\n') c = ' ';
    throw Error(str_cat("graphviz 'dot' failed (exit ", WIFEXITED(status) ? WEXITSTATUS(status) : -1, "): ", why));
  }
  return svg;
}

}  // namespace kiln::analysis

// Textual IR printer. The grammar is in docs/textual-ir.md; text_parse.cpp reads it back.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "kiln/ir/text.h"
#include "text_common.h"

namespace kiln {
namespace {

using text::ident_or_quoted;
using text::ref_or_quoted;

std::string ref(const Value* v) { return v ? "%" + ref_or_quoted(v->name) : "_"; }

std::string dim_text(const Dim& d) {
  if (d.is_static()) return std::to_string(d.value);
  if (d.is_symbolic()) return text::ident_or_quoted(d.symbol);
  return "?";
}

std::string shape_text(const Shape& s) {
  if (!s.rank_known) return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < s.dims.size(); ++i) out += (i ? "," : "") + dim_text(s.dims[i]);
  return out + "]";
}

std::string type_text(DType dt, const Shape& s) {
  if (dt == DType::undefined && !s.rank_known) return "?";
  return (dt == DType::undefined ? std::string("?") : std::string(dtype_name(dt))) + shape_text(s);
}

std::string element_text(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::f32: return text::format_float(static_cast<const float*>(p)[i]);
    case DType::f64: return text::format_double(static_cast<const double*>(p)[i]);
    case DType::f16: return text::format_float(f16_to_f32(static_cast<const uint16_t*>(p)[i]));
    case DType::bf16: return text::format_float(bf16_to_f32(static_cast<const uint16_t*>(p)[i]));
    case DType::boolean: return static_cast<const uint8_t*>(p)[i] ? "true" : "false";
    case DType::u64: return std::to_string(static_cast<const uint64_t*>(p)[i]);
    default: return std::to_string(t.as_int64(i));
  }
}

// "elided<min=-0.5, max=2.0>": enough to tell weights apart by eye; parses back as zeros.
std::string elided_summary(const Tensor& t) {
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = t.as_double(i);
    if (std::isnan(x)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  if (lo > hi) return "elided";
  return "elided<min=" + text::format_double(lo) + ", max=" + text::format_double(hi) + ">";
}

class Printer {
 public:
  explicit Printer(const PrintOptions& opt) : opt_(opt) {}

  void graph(const Graph& g, int indent) {
    out_ << "graph";
    out_ << (g.name.empty() ? "" : " " + ident_or_quoted(g.name)) << "(";
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      KILN_CHECK(g.inputs[i] != nullptr, "print: graph '", g.name, "' has a null input");
      out_ << (i ? ", " : "") << ref(g.inputs[i]) << ": " << type_text(g.inputs[i]->dtype, g.inputs[i]->shape);
    }
    out_ << ") -> (";
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      KILN_CHECK(g.outputs[i] != nullptr, "print: graph '", g.name, "' has a null output");
      out_ << (i ? ", " : "") << ref(g.outputs[i]);
    }
    out_ << ") {\n";
    for (const Value* v : g.initializers) {
      KILN_CHECK(v && v->initializer, "print: graph '", g.name, "' lists an initializer without data");
      pad(indent + 1);
      out_ << ref(v) << " = init ";
      tensor(*v->initializer);
      out_ << "\n";
    }
    std::set<const Node*> unnamed = nodes_to_leave_unnamed(g);
    for (const auto& n : g.nodes()) {
      pad(indent + 1);
      node(*n, indent + 1, unnamed.count(n.get()) != 0);
      out_ << "\n";
    }
    pad(indent);
    out_ << "}";
  }

  std::string str() const { return out_.str(); }

 private:
  void pad(int indent) { out_ << std::string(static_cast<size_t>(indent) * 2, ' '); }

  void node(const Node& n, int indent, bool leave_unnamed) {
    if (!n.outputs.empty()) {
      for (size_t i = 0; i < n.outputs.size(); ++i) out_ << (i ? ", " : "") << ref(n.outputs[i]);
      out_ << " = ";
    }
    // 'init' right after '=' starts an initializer, so an op of that name is quoted.
    if (!n.domain.empty()) out_ << ident_or_quoted(n.domain) << "::";
    out_ << ident_or_quoted(n.op) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) out_ << (i ? ", " : "") << ref(n.inputs[i]);
    out_ << ")";
    if (!n.attrs.empty()) {
      out_ << " {";
      bool first = true;
      for (const auto& [k, a] : n.attrs) {
        out_ << (first ? "" : ", ") << ident_or_quoted(k) << "=";
        attribute(a, indent);
        first = false;
      }
      out_ << "}";
    }
    if (opt_.show_shapes) {
      bool any_known = false;
      for (const Value* o : n.outputs) any_known |= o && (o->dtype != DType::undefined || o->shape.rank_known);
      if (any_known) {
        out_ << " :";
        bool first = true;
        for (const Value* o : n.outputs) {
          if (!o) continue;
          out_ << (first ? " " : ", ") << type_text(o->dtype, o->shape);
          first = false;
        }
      }
    }
    if (opt_.show_names && !leave_unnamed) out_ << " @" << ref_or_quoted(n.name);
  }

  void attribute(const Attribute& a, int indent) {
    switch (a.kind()) {
      case AttrKind::Int: out_ << a.i(); break;
      case AttrKind::Float: out_ << text::format_float(a.f()); break;
      case AttrKind::String: out_ << text::quote(a.s()); break;
      case AttrKind::Tensor: tensor(a.t()); break;
      case AttrKind::Graph:
        KILN_CHECK(a.g() != nullptr, "print: graph attribute without a graph");
        graph(*a.g(), indent);
        break;
      // ints are written like dims ([1,1,1,1]); floats and strings are spaced.
      case AttrKind::Ints: list(a.ints(), "ints", ",", [](int64_t x) { return std::to_string(x); }); break;
      case AttrKind::Floats: list(a.floats(), "floats", ", ", [](float x) { return text::format_float(x); }); break;
      case AttrKind::Strings:
        list(a.strings(), "strings", ", ", [](const std::string& x) { return text::quote(x); });
        break;
    }
  }

  template <typename T, typename F>
  void list(const std::vector<T>& xs, const char* kind, const char* sep, F fmt) {
    if (xs.empty()) {  // an empty list does not show its kind by its elements
      out_ << kind << "[]";
      return;
    }
    out_ << "[";
    for (size_t i = 0; i < xs.size(); ++i) out_ << (i ? sep : "") << fmt(xs[i]);
    out_ << "]";
  }

  void tensor(const Tensor& t) {
    KILN_CHECK(t.defined(), "print: tensor of undefined dtype");
    out_ << dtype_name(t.dtype()) << dims_str(t.dims()) << " ";
    if (opt_.elide_weights && static_cast<size_t>(t.numel()) > opt_.elide_over) {
      out_ << elided_summary(t);
      return;
    }
    out_ << "dense<";
    for (int64_t i = 0; i < t.numel(); ++i) out_ << (i ? ", " : "") << element_text(t, i);
    out_ << ">";
  }

  // Nodes whose name the parser gives back when '@name' is left out (see
  // text::AutoNamer): tried for every node named like an auto name, then narrowed
  // until re-naming them reproduces every one of their names.
  std::set<const Node*> nodes_to_leave_unnamed(const Graph& g) const {
    std::set<const Node*> cand;
    if (!opt_.show_names) return cand;
    for (const auto& n : g.nodes())
      if (looks_auto(n->name, n->op)) cand.insert(n.get());
    for (bool changed = true; changed && !cand.empty();) {
      changed = false;
      std::set<std::string> taken;
      for (const auto& n : g.nodes())
        if (!cand.count(n.get())) taken.insert(n->name);
      text::AutoNamer namer(std::move(taken));
      std::vector<const Node*> wrong;
      for (const auto& n : g.nodes())
        if (cand.count(n.get()) && namer.name(n->op) != n->name) wrong.push_back(n.get());
      for (const Node* n : wrong) cand.erase(n);
      changed = !wrong.empty();
    }
    return cand;
  }

  static bool looks_auto(const std::string& name, const std::string& op) {
    if (name == op) return true;
    if (name.size() <= op.size() + 1 || name.compare(0, op.size(), op) != 0 || name[op.size()] != '_') return false;
    return std::all_of(name.begin() + static_cast<long>(op.size()) + 1, name.end(),
                       [](char c) { return c >= '0' && c <= '9'; }) &&
           name[op.size() + 1] != '0';
  }

  const PrintOptions& opt_;
  std::ostringstream out_;
};

}  // namespace

std::string print_graph(const Graph& g, const PrintOptions& opt) {
  Printer p(opt);
  p.graph(g, 0);
  return p.str() + "\n";
}

std::string print_model(const Model& m, const PrintOptions& opt) {
  std::ostringstream out;
  out << "kiln.model ir=" << m.ir_version;
  for (const auto& [domain, version] : m.opsets) {
    if (domain.empty())
      out << " opset=" << version;
    else
      out << " " << text::ident_or_quoted("opset." + domain) << "=" << version;
  }
  if (!m.producer_name.empty()) out << " producer=" << text::quote(m.producer_name);
  if (!m.producer_version.empty()) out << " producer_version=" << text::quote(m.producer_version);
  out << "\n";
  KILN_CHECK(m.graph != nullptr, "print: model without a graph");
  return out.str() + print_graph(*m.graph, opt);
}

}  // namespace kiln

// Textual IR parser: the inverse of text_print.cpp (grammar in docs/textual-ir.md).
// Every malformed input ends in kiln::Error "line L:C: message"; sizes and nesting
// from the text are bounded before anything is allocated or recursed into.
#include <algorithm>
#include <set>

#include "kiln/ir/text.h"
#include "text_common.h"
#include "text_lexer.h"
#include "text_tensor.h"

namespace kiln {
namespace {

using text::Tok;
using text::Token;

constexpr int kMaxGraphDepth = 64;
constexpr int64_t kDefaultOpset = 17;  // when the text has no header

class Parser : text::Cursor {
 public:
  explicit Parser(const std::string& src) : Cursor(text::tokenize(src)) {}

  Model model() {
    Model m;
    if (is_ident("kiln.model")) {
      next();
      header(m);
    } else {
      m.opsets[""] = kDefaultOpset;
    }
    if (!is_ident("graph")) fail(peek(), "expected 'graph'");
    graph(*m.graph, 0);
    if (peek().kind != Tok::End) fail(peek(), "expected end of input after the graph");
    return m;
  }

 private:
  // ---- header -------------------------------------------------------------------
  void header(Model& m) {
    while ((peek().kind == Tok::Ident || peek().kind == Tok::String) && is_punct("=", 1)) {
      const Token& key = next();
      next();  // '='
      if (key.text == "ir") {
        m.ir_version = integer<int64_t>(next());
      } else if (key.text == "opset") {
        m.opsets[""] = integer<int64_t>(next());
      } else if (key.text.rfind("opset.", 0) == 0) {
        m.opsets[key.text.substr(6)] = integer<int64_t>(next());
      } else if (key.text == "producer" || key.text == "producer_version") {
        if (peek().kind != Tok::String) fail(peek(), str_cat("expected a string for ", key.text));
        (key.text == "producer" ? m.producer_name : m.producer_version) = next().text;
      } else {
        fail(key, str_cat("unknown model field '", key.text, "' (known: ir, opset, opset.DOMAIN, producer, "
                          "producer_version)"));
      }
    }
  }

  // "f32[2,3]", "?[N]", "f32" (rank unknown), "?" (nothing known).
  void type(Value* v) {
    v->dtype = text::parse_dtype(*this);
    v->shape = is_punct("[") ? text::parse_shape(*this) : Shape::unknown_rank();
  }

  // ---- attributes ---------------------------------------------------------------
  Attribute attribute(Graph& g, int depth) {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: return Attribute(integer<int64_t>(next()));
      case Tok::Float: return Attribute(floating<float>(next()));
      case Tok::String: return Attribute(next().text);
      case Tok::Punct:
        if (t.text == "[") return list(g, "");
        break;
      case Tok::Ident:
        if (t.text == "graph") {
          auto sub = std::make_shared<Graph>();
          sub->parent = &g;
          graph(*sub, depth + 1);
          return Attribute(std::move(sub));
        }
        if (is_punct("[", 1)) {
          if (t.text == "ints" || t.text == "floats" || t.text == "strings") return list(g, next().text);
          return Attribute(text::parse_tensor(*this));
        }
        break;
      default: break;
    }
    fail(t, str_cat("expected an attribute value, found ", describe(t)));
  }

  // [1, 2], [0.5, 1.0], ["a"], and typed: ints[], floats[1, 2], strings[].
  Attribute list(Graph& g, const std::string& kind) {
    const Token& open = peek();
    expect("[");
    std::vector<const Token*> items;
    if (!is_punct("]")) {
      do items.push_back(&next());
      while (accept(","));
    }
    expect("]");
    std::string k = kind;
    if (k.empty()) {
      if (items.empty()) fail(open, "an empty list needs its kind: ints[], floats[] or strings[]");
      k = items[0]->kind == Tok::String ? "strings" : "ints";
      for (const Token* e : items)
        if (e->kind == Tok::Float) k = "floats";
    }
    if (k == "ints") {
      std::vector<int64_t> v;
      for (const Token* e : items) v.push_back(integer<int64_t>(*e));
      return Attribute(std::move(v));
    }
    if (k == "floats") {
      std::vector<float> v;
      for (const Token* e : items) v.push_back(floating<float>(*e));
      return Attribute(std::move(v));
    }
    std::vector<std::string> v;
    for (const Token* e : items) {
      if (e->kind != Tok::String) fail(*e, str_cat("expected a string, found ", describe(*e)));
      v.push_back(e->text);
    }
    return Attribute(std::move(v));
  }

  // ---- graphs -------------------------------------------------------------------
  Value* define(Graph& g, const Token& t) {
    if (g.find_local(t.text)) fail(t, str_cat("value '%", t.text, "' is defined twice"));
    return g.add_value(t.text);
  }

  Value* use(Graph& g) {
    const Token& t = next();
    if (t.kind == Tok::Ident && t.text == "_") return nullptr;
    if (t.kind != Tok::Ref) fail(t, str_cat("expected a value ('%name' or '_'), found ", describe(t)));
    Value* v = g.find(t.text);
    if (!v) fail(t, str_cat("value '%", t.text, "' is not defined (before this use)"));
    return v;
  }

  void graph(Graph& g, int depth) {
    if (depth > kMaxGraphDepth) fail(peek(), "subgraphs are nested too deeply");
    next();  // 'graph'
    if (!is_punct("(")) g.name = name("a graph name or '('");
    expect("(");
    if (!is_punct(")")) {
      do {
        const Token& t = next();
        if (t.kind != Tok::Ref) fail(t, str_cat("expected a graph input '%name', found ", describe(t)));
        Value* v = define(g, t);
        g.inputs.push_back(v);
        if (accept(":")) type(v);
      } while (accept(","));
    }
    expect(")");
    expect("->");
    expect("(");
    std::vector<Token> outputs;
    if (!is_punct(")")) {
      do {
        if (peek().kind != Tok::Ref) fail(peek(), str_cat("expected a graph output '%name', found ", describe(peek())));
        outputs.push_back(next());
      } while (accept(","));
    }
    expect(")");
    expect("{");
    std::vector<Node*> unnamed;
    while (!accept("}")) statement(g, depth, unnamed);
    for (const Token& t : outputs) {
      Value* v = g.find(t.text);
      if (!v) fail(t, str_cat("graph output '%", t.text, "' is never defined"));
      g.outputs.push_back(v);
    }
    // Unnamed nodes are named once all explicit '@names' of the graph are known.
    std::set<const Node*> placeholder(unnamed.begin(), unnamed.end());
    std::set<std::string> taken;
    for (const auto& n : g.nodes())
      if (!placeholder.count(n.get())) taken.insert(n->name);
    text::AutoNamer namer(std::move(taken));
    for (Node* n : unnamed) n->name = namer.name(n->op);
  }

  void statement(Graph& g, int depth, std::vector<Node*>& unnamed) {
    const Token& first = peek();
    if (first.kind == Tok::End) fail(first, "unexpected end of input, expected '}'");
    std::vector<const Token*> results;
    if (first.kind == Tok::Ref || (first.kind == Tok::Ident && first.text == "_")) {
      do {
        const Token& t = next();
        if (t.kind != Tok::Ref && !(t.kind == Tok::Ident && t.text == "_"))
          fail(t, str_cat("expected a result ('%name' or '_'), found ", describe(t)));
        results.push_back(&t);
      } while (accept(","));
      expect("=");
      if (is_ident("init")) {
        initializer(g, results);
        return;
      }
    }
    node(g, depth, results, unnamed);
  }

  void initializer(Graph& g, const std::vector<const Token*>& results) {
    const Token& kw = next();
    if (results.size() != 1 || results[0]->kind != Tok::Ref) fail(kw, "'init' defines exactly one '%value'");
    const Token& t = *results[0];
    Tensor data = text::parse_tensor(*this);
    Value* v = g.find_local(t.text);
    bool is_input = v && std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end() && !v->initializer;
    if (is_input) {  // an input with a default value
      v->initializer = std::move(data);
      g.initializers.push_back(v);
      return;
    }
    if (v) fail(t, str_cat("value '%", t.text, "' is defined twice"));
    g.add_initializer(t.text, std::move(data));
  }

  void node(Graph& g, int depth, const std::vector<const Token*>& results, std::vector<Node*>& unnamed) {
    const Token& op_tok = peek();
    if (op_tok.kind != Tok::Ident && op_tok.kind != Tok::String)
      fail(op_tok, str_cat("expected an op name, found ", describe(op_tok)));
    std::string domain, op = next().text;
    if (accept("::")) {
      domain = op;
      op = name("an op name after '::'");
    }
    if (op.empty()) fail(op_tok, "empty op name");
    expect("(");
    std::vector<Value*> inputs;
    if (!is_punct(")")) {
      do inputs.push_back(use(g));
      while (accept(","));
    }
    expect(")");
    std::map<std::string, Attribute> attrs;
    if (accept("{")) {
      if (!is_punct("}")) {
        do {
          const Token& key = peek();
          std::string k = name("an attribute name");
          expect("=");
          if (attrs.count(k)) fail(key, str_cat("attribute '", k, "' is given twice"));
          attrs.emplace(k, attribute(g, depth));
        } while (accept(","));
      }
      expect("}");
    }
    std::vector<std::string> out_names;
    std::set<std::string> fresh;
    for (const Token* t : results) {
      if (t->kind != Tok::Ref) {
        out_names.emplace_back();
        continue;
      }
      if (g.find_local(t->text) || !fresh.insert(t->text).second)
        fail(*t, str_cat("value '%", t->text, "' is defined twice"));
      out_names.push_back(t->text);
    }
    Node* n = g.add_node(op, inputs, out_names, std::move(attrs), op, domain);
    if (accept(":")) {
      const Token& at = peek();
      std::vector<Value*> present;
      for (Value* o : n->outputs)
        if (o) present.push_back(o);
      size_t k = 0;
      do {
        if (k >= present.size()) fail(peek(), str_cat("more result types than the ", present.size(), " results"));
        type(present[k++]);
      } while (accept(","));
      if (k != present.size()) fail(at, str_cat(k, " result types for ", present.size(), " results"));
    }
    if (peek().kind == Tok::At) {
      n->name = next().text;
    } else {
      unnamed.push_back(n);
    }
  }

};

}  // namespace

Model parse_model(const std::string& text) { return Parser(text).model(); }

}  // namespace kiln

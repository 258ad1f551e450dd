// Textual IR parser: the inverse of text_print.cpp (grammar in docs/textual-ir.md).
// Every malformed input ends in kiln::Error "line L:C: message"; sizes and nesting
// from the text are bounded before anything is allocated or recursed into.
#include <sys/mman.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cmath>
#include <limits>
#include <set>

#include "kiln/ir/text.h"
#include "text_common.h"
#include "text_lexer.h"

namespace kiln {
namespace {

using text::Tok;
using text::Token;

constexpr int kMaxGraphDepth = 64;
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 36;  // 64 GiB: past this the text is garbage
constexpr int64_t kDefaultOpset = 17;                     // when the text has no header

// Zero-filled storage for elided weights: anonymous pages cost nothing until written.
class ZeroPages : public Buffer {
 public:
  explicit ZeroPages(size_t bytes) : size_(bytes) {
    p_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    KILN_CHECK(p_ != MAP_FAILED, "out of memory mapping ", bytes, " bytes of elided weights");
  }
  ~ZeroPages() override { munmap(p_, size_); }
  void* data() override { return p_; }
  size_t size() const override { return size_; }

 private:
  void* p_;
  size_t size_;
};

Tensor zero_tensor(DType dt, std::vector<int64_t> dims, size_t bytes) {
  if (bytes < (size_t{1} << 20)) return Tensor(dt, std::move(dims));
  return Tensor(dt, std::move(dims), std::make_shared<ZeroPages>(bytes));
}

class Parser {
 public:
  explicit Parser(const std::string& src) : toks_(text::tokenize(src)) {}

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
  // ---- tokens -------------------------------------------------------------------
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is_punct(const char* p, size_t k = 0) const { return peek(k).kind == Tok::Punct && peek(k).text == p; }
  bool is_ident(const char* w, size_t k = 0) const { return peek(k).kind == Tok::Ident && peek(k).text == w; }
  bool accept(const char* p) {
    if (!is_punct(p)) return false;
    next();
    return true;
  }
  [[noreturn]] static void fail(const Token& t, const std::string& msg) {
    throw Error(str_cat("line ", t.line, ":", t.col, ": ", msg));
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::End: return "end of input";
      case Tok::String: return "string " + text::quote(t.text);
      case Tok::Ref: return "'%" + t.text + "'";
      case Tok::At: return "'@" + t.text + "'";
      default: return "'" + t.text + "'";
    }
  }
  void expect(const char* p) {
    if (!accept(p)) fail(peek(), str_cat("expected '", p, "', found ", describe(peek())));
  }
  // An identifier or a quoted string, where a name is expected.
  std::string name(const char* what) {
    if (peek().kind != Tok::Ident && peek().kind != Tok::String)
      fail(peek(), str_cat("expected ", what, ", found ", describe(peek())));
    return next().text;
  }

  // ---- numbers ------------------------------------------------------------------
  template <typename T>
  static T integer(const Token& t) {
    if (t.kind != Tok::Int) fail(t, str_cat("expected an integer, found ", describe(t)));
    std::string_view s = t.text;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    T v{};
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail(t, str_cat("integer ", t.text, " is out of range"));
    return v;
  }
  template <typename T>
  static T floating(const Token& t) {
    if (t.kind != Tok::Int && t.kind != Tok::Float) fail(t, str_cat("expected a number, found ", describe(t)));
    std::string_view s = t.text;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    T v{};
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail(t, str_cat("number ", t.text, " does not fit in ", sizeof(T) == 4 ? "f32" : "f64"));
    return v;
  }

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

  // ---- types --------------------------------------------------------------------
  DType dtype() {
    if (accept("?")) return DType::undefined;
    const Token& t = peek();
    if (t.kind != Tok::Ident) fail(t, str_cat("expected a dtype, found ", describe(t)));
    DType dt = dtype_from_name(t.text);
    if (dt == DType::undefined) fail(t, str_cat("unknown dtype '", t.text, "'"));
    next();
    return dt;
  }

  Shape shape() {
    expect("[");
    if (accept("*")) {
      expect("]");
      return Shape::unknown_rank();
    }
    Shape s;
    if (accept("]")) return s;
    do {
      const Token& t = peek();
      if (t.kind == Tok::Int) {
        int64_t v = integer<int64_t>(next());
        if (v < 0) fail(t, "dims must not be negative (write '?' for an unknown dim)");
        s.dims.emplace_back(v);
      } else if (accept("?")) {
        s.dims.push_back(Dim::unknown());
      } else if (t.kind == Tok::Ident || t.kind == Tok::String) {
        if (t.text.empty()) fail(t, "empty dim symbol");
        s.dims.push_back(Dim::sym(next().text));
      } else {
        fail(t, str_cat("expected a dim (size, symbol or '?'), found ", describe(t)));
      }
    } while (accept(","));
    expect("]");
    return s;
  }

  // "f32[2,3]", "?[N]", "f32" (rank unknown), "?" (nothing known).
  void type(Value* v) {
    v->dtype = dtype();
    v->shape = is_punct("[") ? shape() : Shape::unknown_rank();
  }

  // ---- tensors ------------------------------------------------------------------
  Tensor tensor() {
    const Token& start = peek();
    DType dt = dtype();
    if (dt == DType::undefined) fail(start, "a tensor needs a dtype");
    Shape s = shape();
    if (!s.is_static()) fail(start, "tensor dims must be static sizes");
    std::vector<int64_t> dims = s.static_dims();
    uint64_t n = 1;
    for (int64_t d : dims)
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > kMaxTensorBytes)
        fail(start, "tensor is too large");
    uint64_t bytes = n * dtype_size(dt);
    if (bytes > kMaxTensorBytes) fail(start, "tensor is too large");

    if (is_ident("elided")) {
      next();
      if (accept("<")) {  // the summary is for readers; the data reads back as zeros
        while (!is_punct(">")) {
          name("a summary key");
          expect("=");
          floating<double>(next());
          if (!accept(",")) break;
        }
        expect(">");
      }
      return zero_tensor(dt, dims, bytes);
    }
    if (!is_ident("dense")) fail(peek(), str_cat("expected 'dense<...>' or 'elided', found ", describe(peek())));
    next();
    expect("<");
    size_t first = pos_;
    uint64_t count = 0;
    if (!is_punct(">")) {
      do {
        const Token& e = next();
        if (e.kind != Tok::Int && e.kind != Tok::Float && !(e.kind == Tok::Ident && (e.text == "true" || e.text == "false")))
          fail(e, str_cat("expected a tensor element, found ", describe(e)));
        ++count;
      } while (accept(","));
    }
    const Token& close = peek();
    expect(">");
    if (count != n && !(count == 1 && n > 0))
      fail(close, str_cat("tensor ", dtype_name(dt), dims_str(dims), " has ", n, " elements, found ", count,
                          " (one value fills the whole tensor)"));
    Tensor t = n * dtype_size(dt) >= (size_t{1} << 20) ? zero_tensor(dt, dims, bytes) : Tensor(dt, dims);
    for (uint64_t i = 0; i < count; ++i) set_element(t, i, toks_[first + 2 * i]);
    if (count == 1 && n > 1) {  // splat
      size_t es = dtype_size(dt);
      char* p = static_cast<char*>(t.raw());
      for (uint64_t i = 1; i < n; ++i) std::memcpy(p + i * es, p, es);
    }
    return t;
  }

  template <typename T>
  static T ranged(const Token& e) {
    int64_t v = integer<int64_t>(e);
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) || v > static_cast<int64_t>(std::numeric_limits<T>::max()))
      fail(e, str_cat("value ", v, " does not fit in the tensor's dtype"));
    return static_cast<T>(v);
  }

  static void set_element(Tensor& t, uint64_t i, const Token& e) {
    void* p = t.raw();
    switch (t.dtype()) {
      case DType::f32: static_cast<float*>(p)[i] = floating<float>(e); return;
      case DType::f64: static_cast<double*>(p)[i] = floating<double>(e); return;
      case DType::f16: static_cast<uint16_t*>(p)[i] = f32_to_f16(floating<float>(e)); return;
      case DType::bf16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(floating<float>(e)); return;
      case DType::i8: static_cast<int8_t*>(p)[i] = ranged<int8_t>(e); return;
      case DType::u8: static_cast<uint8_t*>(p)[i] = ranged<uint8_t>(e); return;
      case DType::i16: static_cast<int16_t*>(p)[i] = ranged<int16_t>(e); return;
      case DType::u16: static_cast<uint16_t*>(p)[i] = ranged<uint16_t>(e); return;
      case DType::i32: static_cast<int32_t*>(p)[i] = ranged<int32_t>(e); return;
      case DType::u32: static_cast<uint32_t*>(p)[i] = ranged<uint32_t>(e); return;
      case DType::i64: static_cast<int64_t*>(p)[i] = integer<int64_t>(e); return;
      case DType::u64: static_cast<uint64_t*>(p)[i] = integer<uint64_t>(e); return;
      case DType::boolean: {
        bool b;
        if (e.kind == Tok::Ident) {
          b = e.text == "true";
        } else {
          int64_t v = integer<int64_t>(e);
          if (v != 0 && v != 1) fail(e, "a bool element must be true, false, 0 or 1");
          b = v == 1;
        }
        static_cast<uint8_t*>(p)[i] = b ? 1 : 0;
        return;
      }
      default: fail(e, "tensor of undefined dtype");
    }
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
          return Attribute(tensor());
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
    for (Node* n : unnamed) n->name = text::auto_node_name(n->op, taken);
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
    Tensor data = tensor();
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

  std::vector<Token> toks_;
  size_t pos_ = 0;
};

}  // namespace

Model parse_model(const std::string& text) { return Parser(text).model(); }

}  // namespace kiln

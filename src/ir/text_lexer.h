// Tokens of the textual IR (docs/textual-ir.md). Whitespace and comments ('#' or '//'
// to the end of the line) separate tokens and are otherwise ignored.
#pragma once
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/error.h"
#include "text_common.h"

namespace kiln::text {

enum class Tok : uint8_t {
  End,     // end of input
  Ident,   // [A-Za-z_][A-Za-z0-9_.]*        text = the word
  String,  // "..."                          text = unescaped contents
  Ref,     // %name or %"name"               text = the name
  At,      // @name or @"name"               text = the name
  Int,     // -?[0-9]+                       text = as written
  Float,   // 1.5, -2e-3, inf, -nan          text = as written
  Punct,   // ( ) [ ] { } < > , = : ? * -> ::  text = the symbol
};

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 1, col = 1;
};

// Throws kiln::Error "line L:C: ..." on a malformed token (unterminated string, ...).
std::vector<Token> tokenize(const std::string& src);

// Walks the tokens for the parser. Every error goes through fail(), so it carries
// "line L:C:" of the token it is about.
class Cursor {
 public:
  explicit Cursor(std::vector<Token> toks) : toks_(std::move(toks)) {}

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

  size_t pos() const { return pos_; }
  const Token& at(size_t i) const { return toks_[std::min(i, toks_.size() - 1)]; }

 private:
  std::vector<Token> toks_;  // ends with Tok::End
  size_t pos_ = 0;
};

}  // namespace kiln::text

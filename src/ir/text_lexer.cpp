#include "text_lexer.h"

#include "kiln/ir/error.h"

namespace kiln::text {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    if (s_.rfind("\xEF\xBB\xBF", 0) == 0) i_ = 3;  // a UTF-8 byte-order mark from an editor
    for (;;) {
      skip_space();
      Token t;
      t.line = line_;
      t.col = col_;
      if (i_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      lex_one(t);
      out.push_back(std::move(t));
    }
  }

 private:
  [[noreturn]] void fail(int line, int col, const std::string& msg) const {
    throw Error(str_cat("line ", line, ":", col, ": ", msg));
  }
  char peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void advance() {
    if (s_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++i_;
  }

  void skip_space() {
    while (i_ < s_.size()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '#' || (c == '/' && peek(1) == '/')) {
        while (i_ < s_.size() && peek() != '\n') advance();
      } else {
        return;
      }
    }
  }

  void lex_one(Token& t) {
    char c = peek();
    if (c == '"') {
      t.kind = Tok::String;
      t.text = string_body();
    } else if (c == '%' || c == '@') {
      t.kind = c == '%' ? Tok::Ref : Tok::At;
      advance();
      if (peek() == '"') {
        t.text = string_body();
      } else {
        while (i_ < s_.size() && is_word(peek())) t.text += take();
      }
      if (t.text.empty()) fail(t.line, t.col, str_cat("expected a name after '", c, "'"));
    } else if (is_alpha(c)) {
      t.kind = Tok::Ident;
      while (i_ < s_.size() && is_word(peek())) t.text += take();
      if (t.text == "inf" || t.text == "nan") t.kind = Tok::Float;
    } else if (is_digit(c) || ((c == '-' || c == '+') && (is_digit(peek(1)) || is_alpha(peek(1))))) {
      number(t);
    } else if ((c == '-' && peek(1) == '>') || (c == ':' && peek(1) == ':')) {
      t.kind = Tok::Punct;
      t.text += take();
      t.text += take();
    } else if (std::string_view("()[]{}<>,=:?*").find(c) != std::string_view::npos) {
      t.kind = Tok::Punct;
      t.text = take();
    } else {
      unsigned char u = static_cast<unsigned char>(c);
      fail(t.line, t.col, u >= 0x20 && u < 0x7f ? str_cat("unexpected character '", c, "'")
                                                 : str_cat("unexpected byte 0x", std::hex, static_cast<int>(u)));
    }
  }

  char take() {
    char c = peek();
    advance();
    return c;
  }

  // -12, 3.5, 1e-30, -inf, nan: a Float when it has '.', an exponent, inf or nan.
  void number(Token& t) {
    t.kind = Tok::Int;
    if (peek() == '-' || peek() == '+') t.text += take();
    if (is_alpha(peek())) {
      std::string word;
      while (i_ < s_.size() && is_word(peek())) word += take();
      if (word != "inf" && word != "nan") fail(t.line, t.col, str_cat("malformed number '", t.text, word, "'"));
      t.kind = Tok::Float;
      t.text += word;
      return;
    }
    while (is_digit(peek())) t.text += take();
    if (peek() == '.') {
      t.kind = Tok::Float;
      t.text += take();
      while (is_digit(peek())) t.text += take();
    }
    if (peek() == 'e' || peek() == 'E') {
      t.kind = Tok::Float;
      t.text += take();
      if (peek() == '-' || peek() == '+') t.text += take();
      if (!is_digit(peek())) fail(t.line, t.col, str_cat("malformed number '", t.text, "'"));
      while (is_digit(peek())) t.text += take();
    }
    if (is_alpha(peek()) || peek() == '.')
      fail(t.line, t.col, str_cat("malformed number '", t.text, peek(), "'"));
  }

  std::string string_body() {
    int line = line_, col = col_;
    advance();  // opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size() || peek() == '\n') fail(line, col, "unterminated string");
      char c = take();
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail(line, col, "unterminated string");
      char e = take();
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          int hi = hex_value(peek()), lo = hex_value(peek(1));
          if (hi < 0 || lo < 0) fail(line_, col_, "expected two hex digits after \\x");
          take();
          take();
          out += static_cast<char>(hi * 16 + lo);
          break;
        }
        default: fail(line_, col_ - 1, str_cat("unknown escape '\\", e, "'"));
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::vector<Token> tokenize(const std::string& src) { return Lexer(src).run(); }

}  // namespace kiln::text

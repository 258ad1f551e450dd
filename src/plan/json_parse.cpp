// The JSON parser behind kiln::json::parse: strict RFC 8259 grammar, errors as one line naming
// the origin, line and column, integers kept exact as int64.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include "kiln/ir/error.h"
#include "kiln/plan/json.h"

namespace kiln::json {
namespace {

// kiln's files nest a few levels deep; the limit only stops runaway input from overflowing the stack.
constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, std::string_view origin) : s_(text), origin_(origin) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(str_cat(origin_, ": line ", line, ", column ", col, ": ", what));
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c, const char* where) {
    if (!eat(c)) fail(str_cat("expected '", c, "' ", where));
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value(string());
    if (literal("null")) return Value();
    if (literal("true")) return Value(true);
    if (literal("false")) return Value(false);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(str_cat("unexpected character '", c, "'"));
  }

  Value object(int depth) {
    ++pos_;  // '{'
    Value obj{Object{}};
    if (eat('}')) return obj;
    std::unordered_set<std::string> keys;
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a quoted key");
      std::string k = string();
      if (!keys.insert(k).second) fail(str_cat("duplicate key \"", k, "\""));
      expect(':', "after a key");
      obj.set(std::move(k), value(depth + 1));
    } while (eat(','));
    expect('}', "to close an object");
    return obj;
  }

  Value array(int depth) {
    ++pos_;  // '['
    Value arr{Array{}};
    if (eat(']')) return arr;
    do arr.push(value(depth + 1));
    while (eat(','));
    expect(']', "to close an array");
    return arr;
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("short \\u escape");
    unsigned cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
    }
    return cp;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // '"'
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          // A UTF-16 surrogate pair names one code point past U+FFFF.
          if (cp >= 0xD800 && cp < 0xDC00 && literal("\\u")) {
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(str_cat("unknown escape '\\", e, "'"));
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;  // closing '"'
    return out;
  }

  Value number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > d;
    };
    if (!digits()) fail("expected digits in a number");
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digits()) fail("expected digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) fail("expected digits in an exponent");
    }
    std::string text(s_.substr(start, pos_ - start));
    if (integral) {  // exact when it fits in int64; a larger integer falls back to a double
      errno = 0;
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0) return Value(static_cast<int64_t>(v));
    }
    // Only overflow is an error: an underflow reads as the nearest double, as dump() wrote it.
    double v = std::strtod(text.c_str(), nullptr);
    if (std::isinf(v)) fail(str_cat("number out of range: ", text));
    return Value(v);
  }

  std::string_view s_;
  std::string_view origin_;
  size_t pos_ = 0;
};

}  // namespace

Value parse(std::string_view text, std::string_view what) { return Parser(text, what).document(); }

}  // namespace kiln::json

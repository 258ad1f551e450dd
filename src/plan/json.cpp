#include "kiln/plan/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kiln/ir/error.h"

namespace kiln::json {
namespace {

const char* kind_name(const Value& v) {
  if (v.is_null()) return "null";
  if (v.is_bool()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

[[noreturn]] void wrong_kind(const Value& v, std::string_view what, const char* want) {
  throw Error(str_cat(what, ": expected ", want, ", found ", kind_name(v)));
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view what) : s_(text), what_(what) {}

  Value document() {
    Value v = value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("trailing characters after the value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 256;

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(str_cat(what_, ": JSON error at byte ", pos_, ": ", msg));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end of text");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(str_cat("expected '", c, "'"));
    ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value(string());
    if (literal("true")) return Value(true);
    if (literal("false")) return Value(false);
    if (literal("null")) return Value();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(str_cat("unexpected character '", c, "'"));
  }

  Value object(int depth) {
    expect('{');
    Value obj{Object{}};
    if (peek() == '}') {
      ++pos_;
      return obj;
    }
    for (;;) {
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      expect(':');
      obj.set(std::move(key), value(depth + 1));
      char c = peek();
      ++pos_;
      if (c == '}') return obj;
      if (c != ',') fail("expected ',' or '}'");
    }
  }

  Value array(int depth) {
    expect('[');
    Value arr{Array{}};
    if (peek() == ']') {
      ++pos_;
      return arr;
    }
    for (;;) {
      arr.push(value(depth + 1));
      char c = peek();
      ++pos_;
      if (c == ']') return arr;
      if (c != ',') fail("expected ',' or ']'");
    }
  }

  Value number() {
    size_t start = pos_;
    bool integral = true;
    if (s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c >= '0' && c <= '9') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        integral = false;
        ++pos_;
      } else {
        break;
      }
    }
    std::string text(s_.substr(start, pos_ - start));
    char* end = nullptr;
    if (integral) {
      errno = 0;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end == text.c_str() + text.size()) return Value(static_cast<int64_t>(v));
    }
    double d = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) fail(str_cat("bad number '", text, "'"));
    return Value(d);
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad \\u escape");
    }
    return v;
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
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
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
          if (cp >= 0xD800 && cp < 0xDC00 && literal("\\u")) {
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(str_cat("bad escape '\\", e, "'"));
      }
    }
  }

  std::string_view s_;
  std::string_view what_;
  size_t pos_ = 0;
};

void newline(std::string& out, int indent, int depth) {
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

bool has_containers(const Array& a) {
  for (const Value& v : a)
    if (v.is_array() || v.is_object()) return true;
  return false;
}

}  // namespace

bool Value::as_bool(std::string_view what) const {
  if (!is_bool()) wrong_kind(*this, what, "a boolean");
  return std::get<bool>(v_);
}

int64_t Value::as_int(std::string_view what) const {
  if (!is_int()) wrong_kind(*this, what, "an integer");
  return std::get<int64_t>(v_);
}

double Value::as_double(std::string_view what) const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  if (!is_number()) wrong_kind(*this, what, "a number");
  return std::get<double>(v_);
}

const std::string& Value::as_string(std::string_view what) const {
  if (!is_string()) wrong_kind(*this, what, "a string");
  return std::get<std::string>(v_);
}

const Array& Value::as_array(std::string_view what) const {
  if (!is_array()) wrong_kind(*this, what, "an array");
  return std::get<Array>(v_);
}

const Object& Value::as_object(std::string_view what) const {
  if (!is_object()) wrong_kind(*this, what, "an object");
  return std::get<Object>(v_);
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : std::get<Object>(v_))
    if (k == key) return &v;
  return nullptr;
}

const Value& Value::at(std::string_view key, std::string_view what) const {
  const Value* v = find(key);
  KILN_CHECK(v != nullptr, what, ": missing \"", key, "\"");
  return *v;
}

Value& Value::set(std::string key, Value v) {
  if (is_null()) v_ = Object{};
  KILN_CHECK(is_object(), "json: set(\"", key, "\") on ", kind_name(*this));
  auto& obj = std::get<Object>(v_);
  obj.emplace_back(std::move(key), std::move(v));
  return obj.back().second;
}

Value& Value::push(Value v) {
  if (is_null()) v_ = Array{};
  KILN_CHECK(is_array(), "json: push on ", kind_name(*this));
  auto& arr = std::get<Array>(v_);
  arr.push_back(std::move(v));
  return arr.back();
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

void Value::dump_to(std::string& out, int indent, int depth) const {
  switch (v_.index()) {
    case 0: out += "null"; return;
    case 1: out += std::get<bool>(v_) ? "true" : "false"; return;
    case 2: out += std::to_string(std::get<int64_t>(v_)); return;
    case 3: {
      double d = std::get<double>(v_);
      if (!std::isfinite(d)) {
        out += "null";
        return;
      }
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      out += buf;
      return;
    }
    case 4: out += quote(std::get<std::string>(v_)); return;
    case 5: {
      const Array& a = std::get<Array>(v_);
      bool multiline = indent > 0 && has_containers(a);
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += multiline ? "," : (indent > 0 ? ", " : ",");
        if (multiline) newline(out, indent, depth + 1);
        a[i].dump_to(out, indent, depth + 1);
      }
      if (multiline && !a.empty()) newline(out, indent, depth);
      out += ']';
      return;
    }
    default: {
      const Object& o = std::get<Object>(v_);
      out += '{';
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out += ',';
        if (indent > 0) newline(out, indent, depth + 1);
        out += quote(o[i].first);
        out += indent > 0 ? ": " : ":";
        o[i].second.dump_to(out, indent, depth + 1);
      }
      if (indent > 0 && !o.empty()) newline(out, indent, depth);
      out += '}';
      return;
    }
  }
}

std::string Value::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

Value parse(std::string_view text, std::string_view what) { return Parser(text, what).document(); }

}  // namespace kiln::json

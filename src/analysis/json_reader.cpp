#include "json_reader.h"

#include <cerrno>
#include <cstdlib>

#include "kiln/ir/error.h"

namespace kiln::analysis {

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

JsonValue JsonValue::make_bool(bool b) {
  JsonValue v(Kind::boolean);
  v.boolean_ = b;
  return v;
}
JsonValue JsonValue::make_number(double d) {
  JsonValue v(Kind::number);
  v.number_ = d;
  return v;
}
JsonValue JsonValue::make_string(std::string s) {
  JsonValue v(Kind::string);
  v.string_ = std::move(s);
  return v;
}
JsonValue JsonValue::make_array(std::vector<JsonValue> items) {
  JsonValue v(Kind::array);
  v.items_ = std::move(items);
  return v;
}
JsonValue JsonValue::make_object(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v(Kind::object);
  v.members_ = std::move(members);
  return v;
}

std::string_view json_kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Kind::null: return "null";
    case JsonValue::Kind::boolean: return "boolean";
    case JsonValue::Kind::number: return "number";
    case JsonValue::Kind::string: return "string";
    case JsonValue::Kind::array: return "array";
    case JsonValue::Kind::object: return "object";
  }
  return "?";
}

std::string json_kind_with_article(JsonValue::Kind k) {
  bool vowel = k == JsonValue::Kind::array || k == JsonValue::Kind::object;
  return std::string(vowel ? "an " : "a ") + std::string(json_kind_name(k));
}

namespace {

constexpr int kMaxDepth = 64;  // kiln's files nest 3 deep; this only stops runaway input

class Parser {
 public:
  Parser(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  JsonValue document() {
    JsonValue v = value(0);
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

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return JsonValue::make_string(string());
    if (literal("null")) return JsonValue::make_null();
    if (literal("true")) return JsonValue::make_bool(true);
    if (literal("false")) return JsonValue::make_bool(false);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(str_cat("unexpected character '", c, "'"));
  }

  JsonValue object(int depth) {
    ++pos_;  // '{'
    std::vector<std::pair<std::string, JsonValue>> members;
    if (eat('}')) return JsonValue::make_object(std::move(members));
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a quoted key");
      std::string k = string();
      for (const auto& m : members)
        if (m.first == k) fail(str_cat("duplicate key \"", k, "\""));
      expect(':', "after a key");
      members.emplace_back(std::move(k), value(depth + 1));
    } while (eat(','));
    expect('}', "to close an object");
    return JsonValue::make_object(std::move(members));
  }

  JsonValue array(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    if (eat(']')) return JsonValue::make_array(std::move(items));
    do items.push_back(value(depth + 1));
    while (eat(','));
    expect(']', "to close an array");
    return JsonValue::make_array(std::move(items));
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
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
          append_utf8(out, cp);  // surrogate pairs stay as two code points: kiln's files are ASCII
          break;
        }
        default: fail(str_cat("unknown escape '\\", e, "'"));
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;  // closing '"'
    return out;
  }

  JsonValue number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > d;
    };
    if (!digits()) fail("expected digits in a number");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) fail("expected digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) fail("expected digits in an exponent");
    }
    std::string text(s_.substr(start, pos_ - start));
    errno = 0;
    double v = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE) fail(str_cat("number out of range: ", text));
    return JsonValue::make_number(v);
  }

  std::string_view s_;
  const std::string& origin_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(std::string_view text, const std::string& origin) { return Parser(text, origin).document(); }

}  // namespace kiln::analysis

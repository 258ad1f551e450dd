// kiln::json: typed access, building, quote() and the printer (the parser is json_parse.cpp).
#include "kiln/plan/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "kiln/ir/error.h"

namespace kiln::json {
namespace {

[[noreturn]] void wrong_kind(const Value& v, std::string_view what, const char* want) {
  throw Error(str_cat(what, ": expected ", want, ", found ", kind_name(v.kind())));
}

void newline(std::string& out, int indent, int depth) {
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

bool has_containers(const Array& a) {
  for (const Value& v : a)
    if (v.is_array() || v.is_object()) return true;
  return false;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_len(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  // overlong forms, UTF-16 surrogates and code points past U+10FFFF
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))
    return 0;
  return n;
}

void append_u_escape(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", c);
  out += buf;
}

// Shortest text that reads back as the same double; whole numbers without a fraction.
void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
  } else if (v == std::floor(v) && std::fabs(v) < 9e15) {
    out += std::to_string(static_cast<int64_t>(v));
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

}  // namespace

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::null: return "null";
    case Kind::boolean: return "a boolean";
    case Kind::number: return "a number";
    case Kind::string: return "a string";
    case Kind::array: return "an array";
    case Kind::object: return "an object";
  }
  return "?";
}

Kind Value::kind() const {
  switch (v_.index()) {
    case 0: return Kind::null;
    case 1: return Kind::boolean;
    case 2:
    case 3: return Kind::number;
    case 4: return Kind::string;
    case 5: return Kind::array;
    default: return Kind::object;
  }
}

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
  KILN_CHECK(is_object(), "json: set(\"", key, "\") on ", kind_name(kind()));
  auto& obj = std::get<Object>(v_);
  obj.emplace_back(std::move(key), std::move(v));
  return obj.back().second;
}

Value& Value::push(Value v) {
  if (is_null()) v_ = Array{};
  KILN_CHECK(is_array(), "json: push on ", kind_name(kind()));
  auto& arr = std::get<Array>(v_);
  arr.push_back(std::move(v));
  return arr.back();
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {  // keep valid UTF-8; a stray byte becomes the code point of its value
      size_t n = utf8_len(s, i);
      if (n == 0) {
        append_u_escape(out, c);
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) append_u_escape(out, c);
        else out += ch;
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
    case 3: append_double(out, std::get<double>(v_)); return;
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

}  // namespace kiln::json

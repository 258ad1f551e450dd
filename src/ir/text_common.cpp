#include "text_common.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace kiln::text {
namespace {
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
// Words the parser gives a meaning of their own in some position.
bool is_keyword(std::string_view s) {
  static const char* const kWords[] = {"_", "init", "graph", "inf", "nan", "true", "false",
                                       "dense", "elided", "ints", "floats", "strings"};
  for (const char* w : kWords)
    if (s == w) return true;
  return false;
}

// Makes a shortest round-trip number look like a float ("1" -> "1.0").
std::string floatify(std::string s) {
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n': inf, nan
  return s;
}
}  // namespace

bool is_bare_ident(std::string_view s) {
  if (s.empty() || !is_word_char(s[0]) || (s[0] >= '0' && s[0] <= '9') || s[0] == '.') return false;
  for (char c : s)
    if (!is_word_char(c)) return false;
  return !is_keyword(s);
}

bool is_bare_ref(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_word_char(c)) return false;
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string ident_or_quoted(std::string_view s) { return is_bare_ident(s) ? std::string(s) : quote(s); }
std::string ref_or_quoted(std::string_view s) { return is_bare_ref(s) ? std::string(s) : quote(s); }

std::string format_float(float f) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  return floatify(std::string(buf, r.ptr));
}

std::string format_double(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return floatify(std::string(buf, r.ptr));
}

std::string AutoNamer::name(const std::string& op) {
  uint64_t& k = next_suffix_[op];
  auto candidate = [&] { return k == 0 ? op : op + "_" + std::to_string(k); };
  while (taken_.count(candidate())) ++k;
  std::string out = candidate();
  taken_.insert(out);
  return out;
}

}  // namespace kiln::text

#include "args.h"

#include <cerrno>
#include <cstdlib>

#include "kiln/ir/error.h"

namespace kiln::cli {

Args::Args(const std::string& verb, int argc, char** argv, const std::set<std::string>& with_value,
           const std::set<std::string>& switches)
    : verb_(verb) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if ((a.rfind("--", 0) != 0 || a == "--") && !with_value.count(a) && !switches.count(a)) {
      positional_.push_back(a);
      continue;
    }
    std::string flag = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    if (switches.count(flag)) {
      KILN_CHECK(!inline_value, "kiln ", verb_, ": ", flag, " takes no value");
      values_.emplace(flag, "");
    } else if (with_value.count(flag)) {
      if (!inline_value) {
        KILN_CHECK(i + 1 < argc, "kiln ", verb_, ": ", flag, " needs a value");
        value = argv[++i];
      }
      values_.emplace(flag, value);
    } else {
      throw Error(str_cat("kiln ", verb_, ": unknown option '", flag, "' (see kiln ", verb_, " --help)"));
    }
  }
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto range = values_.equal_range(flag);
  if (range.first == range.second) return std::nullopt;
  return std::prev(range.second)->second;  // the last one wins
}

std::string Args::get_or(const std::string& flag, const std::string& dflt) const {
  auto v = get(flag);
  return v ? *v : dflt;
}

std::vector<std::string> Args::all(const std::string& flag) const {
  std::vector<std::string> out;
  auto range = values_.equal_range(flag);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

int64_t Args::get_int(const std::string& flag, int64_t dflt) const {
  auto v = get(flag);
  return v ? parse_int(flag, *v) : dflt;
}

int64_t parse_int(const std::string& flag, const std::string& s) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  KILN_CHECK(!s.empty() && end && *end == '\0' && errno == 0, flag, ": '", s, "' is not an integer");
  return v;
}

std::pair<std::string, std::string> split_assignment(const std::string& flag, const std::string& s) {
  auto eq = s.rfind('=');
  KILN_CHECK(eq != std::string::npos && eq > 0, flag, ": expected NAME=VALUE, got '", s, "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::vector<int64_t> parse_dims(const std::string& flag, const std::string& s) {
  std::vector<int64_t> dims;
  size_t start = 0;
  KILN_CHECK(!s.empty(), flag, ": empty shape");
  for (;;) {
    size_t comma = s.find_first_of(",x", start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t d = parse_int(flag, part);
    KILN_CHECK(d >= 0, flag, ": negative dim ", d, " in '", s, "'");
    dims.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return dims;
}

}  // namespace kiln::cli

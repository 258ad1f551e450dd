// kiln reports bad input by throwing kiln::Error with one human-readable line.
// The CLI catches it, prints "kiln: <message>" on stderr and exits non-zero.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
inline void cat_into(std::ostringstream&) {}
template <typename T, typename... Rest>
void cat_into(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  cat_into(os, rest...);
}
}  // namespace detail

// str_cat("node ", name, ": bad axis ", axis)
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::cat_into(os, args...);
  return os.str();
}

// KILN_CHECK(cond, "message parts", ...) throws kiln::Error when cond is false.
#define KILN_CHECK(cond, ...)                                   \
  do {                                                          \
    if (!(cond)) throw ::kiln::Error(::kiln::str_cat(__VA_ARGS__)); \
  } while (0)

}  // namespace kiln

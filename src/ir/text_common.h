// Pieces shared by the textual IR printer and parser (src/ir/text_print.cpp,
// src/ir/text_parse.cpp): which names may be written bare, number formatting that
// parses back bit-exactly, and the rule that names unnamed nodes.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "kiln/ir/graph.h"

namespace kiln::text {

// [A-Za-z_][A-Za-z0-9_.]* and not a keyword: may be written without quotes where an
// identifier is expected (op, domain, graph name, attribute name, dim symbol, header key).
bool is_bare_ident(std::string_view s);
// [A-Za-z0-9_.]+ : may follow '%' or '@' without quotes.
bool is_bare_ref(std::string_view s);
// "..." with \" \\ \n \t \r and \xHH for other control bytes.
std::string quote(std::string_view s);
std::string ident_or_quoted(std::string_view s);
std::string ref_or_quoted(std::string_view s);  // the part after '%' or '@'

// Shortest text that parses back to the same bits, always recognisable as a float
// (contains '.', an exponent, inf or nan): 0.1, 1.0, 1e-30, -0.0, inf, -nan.
std::string format_float(float f);
std::string format_double(double d);

// Names the parser gives to nodes written without '@name': the op, or op_1, op_2, ...,
// skipping every name already taken (explicit names first, then earlier auto names).
// Shared so the printer can leave out the names the parser would give back anyway.
class AutoNamer {
 public:
  explicit AutoNamer(std::set<std::string> taken) : taken_(std::move(taken)) {}
  std::string name(const std::string& op);

 private:
  std::set<std::string> taken_;
  // Names are only ever added, so the first free suffix of an op never moves back.
  std::map<std::string, uint64_t> next_suffix_;
};

}  // namespace kiln::text

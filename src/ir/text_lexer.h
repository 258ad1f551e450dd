// Tokens of the textual IR (docs/textual-ir.md). Whitespace and comments ('#' or '//'
// to the end of the line) separate tokens and are otherwise ignored.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace kiln::text

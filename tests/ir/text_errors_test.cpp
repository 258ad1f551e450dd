// Textual IR: malformed text ends in kiln::Error "line L:C: message", never a crash.
#include <gtest/gtest.h>

#include "kiln/ir/text.h"

namespace kiln {
namespace {

std::string parse_error(const std::string& src) {
  try {
    parse_model(src);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TextIRErrors, ReportLineAndColumn) {
  struct Case {
    const char* src;
    const char* message;
  };
  const Case cases[] = {
      {"graph g(%x: f32[2]) -> (%y) {\n  %y = Relu(%z)\n}", "line 2:13: value '%z' is not defined"},
      {"graph g(%x: f33[2]) -> () {}", "line 1:13: unknown dtype 'f33'"},
      {"graph g(%x: f32[2]) -> (%y) {\n}", "line 1:25: graph output '%y' is never defined"},
      {"graph g(%x: f32[2]) -> () {\n  %x = Relu(%x)\n}", "line 2:3: value '%x' is defined twice"},
      {"graph g() -> () {\n  %c = init f32[3] dense<1.0, 2.0>\n}", "line 2:34: tensor f32[3] has 3 elements, found 2"},
      {"graph g() -> () {\n  %c = init i8[1] dense<300>\n}", "line 2:25: value 300 does not fit"},
      {"graph g() -> () { %c = init f32[0] dense<1.0> }", "line 1:45: tensor f32[0] has 0 elements, found 1"},
      {"graph g() -> () {\n  %c = init f32[1] dense<1e39>\n}", "line 2:26: number 1e39 does not fit in f32"},
      {"graph g(%x: f32[2]) -> () {\n  %y = Foo(%x) {a=[]}\n}", "line 2:19: an empty list needs its kind"},
      {"graph g(%x: f32[2]) -> () {\n  %y = Foo(%x) {a=1, a=2}\n}", "line 2:22: attribute 'a' is given twice"},
      {"graph g(%x: f32[2]) -> () {\n  %y = Foo(%x) : f32[2], f32[3]\n}", "line 2:26: more result types than the 1"},
      {"graph g(%x: f32[2]) -> () {\n  %y = Foo(%x) {s=\"abc\n}", "line 2:19: unterminated string"},
      {"graph g(%x: f32[-1]) -> () {}", "line 1:17: dims must not be negative"},
      {"kiln.model ir=8 color=3\ngraph g() -> () {}", "line 1:17: unknown model field 'color'"},
      {"graph g(%x: f32[2]) -> () {\n  %y = Foo(%x) $\n}", "line 2:16: unexpected character '$'"},
      {"graph g() -> () { %c = init f32[99999999999,99999999999] elided }", "line 1:29: tensor is too large"},
      {"graph g() -> () {} trailing", "line 1:20: expected end of input"},
      {"", "line 1:1: expected 'graph'"},
      {"graph g(%x: f32[2]) -> () {\n  %y = Foo(%x", "line 2:14: expected ')', found end of input"},
  };
  for (const Case& c : cases) {
    std::string msg = parse_error(c.src);
    EXPECT_EQ(msg.rfind(c.message, 0), 0u) << "text:\n" << c.src << "\nmessage: " << msg;
  }
}

TEST(TextIRErrors, DeepNestingIsRefused) {
  std::string src, close;
  for (int i = 0; i < 200; ++i) {
    src += "graph g() -> () {\n  Foo() {body=";
    close = "}\n}" + close;
  }
  src += "graph g() -> () {}" + close;
  EXPECT_NE(parse_error(src).find("nested too deeply"), std::string::npos);
}

// Every prefix and a set of byte-garbled variants of a valid text either parse or
// throw kiln::Error: no other exception, no crash.
TEST(TextIRErrors, TruncatedAndGarbledTextNeverCrashes) {
  const std::string good = R"(kiln.model ir=8 opset=17
graph main(%x: f32[N,3], %"a::b": i64[*]) -> (%y) {
  %w = init f32[2] dense<0.5, -inf>
  %y = If(%x, %w, _) {f=0.1, s="q\"", t=i32[1] dense<3>, g=graph b() -> (%x) {
  }, l=floats[]} : f32[N,3] @"n/1"
})";
  ASSERT_NO_THROW(parse_model(good));
  int errors = 0;
  auto attempt = [&](const std::string& s) {
    try {
      parse_model(s);
    } catch (const Error&) {
      ++errors;
    }
  };
  for (size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n));
  const char garbage[] = {'\0', '"', '%', '[', ']', '{', '}', '<', '>', ',', '=', ':', '-', '9', 'x', '\xff', '\n'};
  uint32_t seed = 12345;
  for (int round = 0; round < 400; ++round) {
    std::string s = good;
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1664525u + 1013904223u;
      size_t at = (seed >> 8) % s.size();
      s[at] = garbage[(seed >> 3) % sizeof garbage];
    }
    attempt(s);
  }
  EXPECT_GT(errors, static_cast<int>(good.size()) - 2);  // nearly every prefix is incomplete
}

}  // namespace
}  // namespace kiln

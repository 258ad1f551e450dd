// The JSON reader behind the chip database and the machine cache.
#include <gtest/gtest.h>

#include "analysis/json_reader.h"
#include "kiln/ir/error.h"

namespace kiln::analysis {
namespace {

TEST(JsonReader, ReadsEveryKind) {
  JsonValue v = parse_json(R"({"a": [1, -2.5e3, true, false, null], "s": "x\"\n\u00e9", "o": {}})", "t");
  ASSERT_TRUE(v.is_object());
  const auto& a = v.find("a")->items();
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].number(), 1);
  EXPECT_EQ(a[1].number(), -2500);
  EXPECT_TRUE(a[2].boolean());
  EXPECT_FALSE(a[3].boolean());
  EXPECT_TRUE(a[4].is_null());
  EXPECT_EQ(v.find("s")->string(), "x\"\n\xc3\xa9");
  EXPECT_TRUE(v.find("o")->is_object());
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(v.members()[0].first, "a");  // file order kept
}

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "chip.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonReader, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("{\n  \"a\" 1\n}"), "chip.json: line 2, column 7: expected ':' after a key");
  EXPECT_EQ(error_of("{\"a\": 1,}"), "chip.json: line 1, column 9: expected a quoted key");
  EXPECT_EQ(error_of("[1, 2"), "chip.json: line 1, column 6: expected ']' to close an array");
  EXPECT_EQ(error_of("{\"a\": 1, \"a\": 2}"), "chip.json: line 1, column 13: duplicate key \"a\"");
  EXPECT_EQ(error_of("\"abc"), "chip.json: line 1, column 5: unterminated string");
  EXPECT_EQ(error_of("{} x"), "chip.json: line 1, column 4: unexpected text after the JSON value");
  EXPECT_EQ(error_of("-"), "chip.json: line 1, column 2: expected digits in a number");
  EXPECT_EQ(error_of(""), "chip.json: line 1, column 1: unexpected end of input");
}

}  // namespace
}  // namespace kiln::analysis

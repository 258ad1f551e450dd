// kiln's JSON value, parser and printer: plan.json, the artifact's manifest and index, the chip
// database, the machine cache and the --json outputs all go through it.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "kiln/ir/error.h"
#include "kiln/plan/json.h"

namespace kiln::json {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse(text, "t.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Json, RoundTripKeepsOrderAndExactIntegers) {
  Value v;
  v.set("zeta", int64_t{9007199254740993});  // not representable as a double
  v.set("alpha", "a \"quoted\"\nline\x01");
  v.set("list", Array{Value(1), Value(2.5), Value(true), Value()});
  Value back = parse(v.dump(), "t");
  EXPECT_EQ(back.dump(), v.dump());
  EXPECT_EQ(back.at("zeta", "t").as_int("zeta"), 9007199254740993);
  EXPECT_EQ(back.at("alpha", "t").as_string("alpha"), "a \"quoted\"\nline\x01");
  EXPECT_EQ(back.as_object("t")[0].first, "zeta");
  EXPECT_DOUBLE_EQ(back.at("list", "t").as_array("l")[1].as_double("x"), 2.5);
  EXPECT_EQ(parse(v.dump(2), "t").dump(), v.dump());
}

TEST(Json, IntegersStayExactDoublesPrintShortest) {
  EXPECT_EQ(parse("-9223372036854775808").as_int("n"), INT64_MIN);
  Value big = parse("123456789012345678901234");  // past int64: read as the nearest double
  EXPECT_FALSE(big.is_int());
  EXPECT_DOUBLE_EQ(big.as_double("n"), 1.2345678901234568e23);
  EXPECT_EQ(Value(0.1).dump(), "0.1");  // not 0.10000000000000001
  EXPECT_EQ(Value(3.0).dump(), "3");
  EXPECT_EQ(Value(-2.5e-7).dump(), "-2.5e-07");
  EXPECT_EQ(Value(1e300).dump(), "1e+300");
  EXPECT_EQ(Value(std::numeric_limits<double>::quiet_NaN()).dump(), "null");
  EXPECT_EQ(parse(Value(5e-324).dump()).as_double("d"), 5e-324);  // an underflow reads back
}

TEST(Json, QuoteKeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(quote(std::string("a\b\f\x01\xc3\xa9\xff\xed\xa0\x80", 10)),
            "\"a\\b\\f\\u0001\xc3\xa9\\u00ff\\u00ed\\u00a0\\u0080\"");  // a UTF-16 surrogate is not UTF-8
}

TEST(Json, UnicodeEscapes) {
  EXPECT_EQ(parse(R"("\u00e9\ud83d\ude00")").as_string("s"), "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Json, ReadsEveryKind) {
  Value v = parse(R"({"a": [1, -2.5e3, true, false, null], "s": "x\"\n\u00e9", "o": {}})", "t");
  ASSERT_TRUE(v.is_object());
  const Array& a = v.find("a")->as_array("a");
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].as_int("a[0]"), 1);
  EXPECT_EQ(a[1].as_double("a[1]"), -2500);
  EXPECT_FALSE(a[1].is_int());  // an exponent makes a double
  EXPECT_TRUE(a[2].as_bool("a[2]"));
  EXPECT_FALSE(a[3].as_bool("a[3]"));
  EXPECT_TRUE(a[4].is_null());
  EXPECT_EQ(v.find("s")->as_string("s"), "x\"\n\xc3\xa9");
  EXPECT_TRUE(v.find("o")->is_object());
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(v.as_object("t")[0].first, "a");  // file order kept
  EXPECT_EQ(v.find("a")->kind(), Kind::array);
  EXPECT_EQ(a[1].kind(), Kind::number);
  EXPECT_EQ(a[0].kind(), Kind::number);
  EXPECT_EQ(kind_name(Kind::object), "an object");
}

TEST(Json, ErrorsNameTheFileLineAndColumn) {
  EXPECT_EQ(error_of("{\n  \"a\" 1\n}"), "t.json: line 2, column 7: expected ':' after a key");
  EXPECT_EQ(error_of("{\"a\": 1,}"), "t.json: line 1, column 9: expected a quoted key");
  EXPECT_EQ(error_of("[1, 2"), "t.json: line 1, column 6: expected ']' to close an array");
  EXPECT_EQ(error_of("{\"a\": 1, \"a\": 2}"), "t.json: line 1, column 13: duplicate key \"a\"");
  EXPECT_EQ(error_of("\"abc"), "t.json: line 1, column 5: unterminated string");
  EXPECT_EQ(error_of("{} x"), "t.json: line 1, column 4: unexpected text after the JSON value");
  EXPECT_EQ(error_of("-"), "t.json: line 1, column 2: expected digits in a number");
  EXPECT_EQ(error_of("1."), "t.json: line 1, column 3: expected digits after '.'");
  EXPECT_EQ(error_of("1e999"), "t.json: line 1, column 6: number out of range: 1e999");
  EXPECT_EQ(error_of(""), "t.json: line 1, column 1: unexpected end of input");
  EXPECT_EQ(error_of("\"\\ud83d\\u0041\""), "t.json: line 1, column 14: bad surrogate pair");
  EXPECT_EQ(error_of(std::string(300, '[')), "t.json: line 1, column 258: nested too deeply");
  Value v = parse("{\"n\": \"x\"}");
  try {
    v.at("n", "m.json").as_int("m.json: n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "m.json: n: expected an integer, found a string");
  }
}

}  // namespace
}  // namespace kiln::json

// The small JSON reader/writer used for plan.json and the artifact's manifest and index.
#include <gtest/gtest.h>

#include "kiln/ir/error.h"
#include "kiln/plan/json.h"

namespace kiln::json {
namespace {

std::string error_of(std::string_view text) {
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

TEST(Json, UnicodeEscapes) {
  EXPECT_EQ(parse(R"("\u00e9\ud83d\ude00")").as_string("s"), "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Json, ErrorsNameTheFileAndPlace) {
  EXPECT_NE(error_of("{\"a\": 1,}").find("t.json: JSON error at byte"), std::string::npos);
  EXPECT_NE(error_of("[1, 2").find("unexpected end"), std::string::npos);
  EXPECT_NE(error_of("{} x").find("trailing"), std::string::npos);
  EXPECT_NE(error_of("\"abc").find("unterminated"), std::string::npos);
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

// A small JSON reader for kiln's own data files (chip database, machine cache): no
// third-party JSON library is available. Numbers are doubles; object keys keep file order.
// Errors are one line naming the origin, line and column.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::analysis {

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_object() const { return kind_ == Kind::object; }
  bool is_array() const { return kind_ == Kind::array; }
  double number() const { return number_; }
  bool boolean() const { return boolean_; }
  const std::string& string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // nullptr when this is not an object or has no such key.
  const JsonValue* find(std::string_view key) const;

  static JsonValue make_null() { return JsonValue(Kind::null); }
  static JsonValue make_bool(bool b);
  static JsonValue make_number(double v);
  static JsonValue make_string(std::string s);
  static JsonValue make_array(std::vector<JsonValue> items);
  static JsonValue make_object(std::vector<std::pair<std::string, JsonValue>> members);

 private:
  explicit JsonValue(Kind k) : kind_(k) {}
  Kind kind_ = Kind::null;
  bool boolean_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses one JSON document; throws kiln::Error "ORIGIN: line L, column C: what".
JsonValue parse_json(std::string_view text, const std::string& origin);

// Kind names for messages: "number", "object", ...; with_article: "a number", "an object".
std::string_view json_kind_name(JsonValue::Kind k);
std::string json_kind_with_article(JsonValue::Kind k);

}  // namespace kiln::analysis

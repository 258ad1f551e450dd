// kiln's one JSON implementation (no third-party JSON library is available): a value with a
// parser and a printer. It serves the memory plan (plan.json), the artifact manifest and weight
// index, the chip database and machine cache, and every --json output (graph, perf, profile,
// bench). It lives in plan/ because plan is the lowest module that writes JSON; runtime,
// analysis and cli all depend on plan.
//
// Objects keep their keys in insertion order (so printed files read in a sensible order);
// integers without fraction or exponent keep their exact int64 value.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::json {

class Value;
// The JSON kinds; integers and doubles are both `number`.
enum class Kind { null, boolean, number, string, array, object };
// "null", "a boolean", "a number", "a string", "an array", "an object" (for error messages).
std::string_view kind_name(Kind k);

using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  Value() = default;                                   // null
  Value(bool b) : v_(b) {}                             // NOLINT
  Value(int v) : v_(int64_t{v}) {}                     // NOLINT
  Value(int64_t v) : v_(v) {}                          // NOLINT
  Value(uint64_t v) : v_(static_cast<int64_t>(v)) {}   // NOLINT
  Value(double v) : v_(v) {}                           // NOLINT
  Value(std::string s) : v_(std::move(s)) {}           // NOLINT
  Value(std::string_view s) : v_(std::string(s)) {}    // NOLINT
  Value(const char* s) : v_(std::string(s)) {}         // NOLINT
  Value(Array a) : v_(std::move(a)) {}                 // NOLINT
  Value(Object o) : v_(std::move(o)) {}                // NOLINT

  Kind kind() const;
  bool is_null() const { return v_.index() == 0; }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_number() const { return is_int() || std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_object() const { return std::holds_alternative<Object>(v_); }

  // Typed access; throws kiln::Error naming `what` (e.g. "manifest.json: format_version") on a
  // kind mismatch, so a reader of a corrupt file gets one clear line.
  bool as_bool(std::string_view what) const;
  int64_t as_int(std::string_view what) const;
  double as_double(std::string_view what) const;
  const std::string& as_string(std::string_view what) const;
  const Array& as_array(std::string_view what) const;
  const Object& as_object(std::string_view what) const;

  // Object member lookup: nullptr when absent (or when this is not an object).
  const Value* find(std::string_view key) const;
  // Object member that must exist; throws naming `what` and the key.
  const Value& at(std::string_view key, std::string_view what) const;
  // Appends a member (this must be an object; a null Value becomes an empty object).
  Value& set(std::string key, Value v);
  // Appends an element (this must be an array; a null Value becomes an empty array).
  Value& push(Value v);

  // Compact JSON; with indent > 0, objects and arrays of containers are broken over lines.
  // Doubles print in their shortest round-trip form, whole ones without a fraction; a
  // non-finite double prints as null.
  std::string dump(int indent = 0) const;

 private:
  void dump_to(std::string& out, int indent, int depth) const;
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_;
};

// Parses one JSON document; throws kiln::Error "<what>: line L, column C: message" on malformed
// text (and on a key repeated within one object).
Value parse(std::string_view text, std::string_view what = "json");

// "text" with JSON escapes, including the quotes. Valid UTF-8 is kept as is; a byte that is not
// part of a valid UTF-8 sequence is written as the code point of its value, so the output is
// always valid JSON.
std::string quote(std::string_view s);

}  // namespace kiln::json

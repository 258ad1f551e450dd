// A small streaming JSON writer (no third-party JSON library is available): commas and
// string escaping are handled here so renderers only say what to write.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::analysis {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);  // inside an object, before each value
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(double v);  // whole numbers print without a fraction; inf/nan -> null
  JsonWriter& value(bool b);
  JsonWriter& null();
  const std::string& str() const { return out_; }

  static std::string escape(std::string_view s);  // with the surrounding quotes

 private:
  void before_value();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace kiln::analysis

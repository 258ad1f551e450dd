// A small command-line parser: `--flag value`, `--flag=value`, repeated flags, positionals.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::cli {

class Args {
 public:
  // `with_value`: flags that take a value; `switches`: flags that take none. Anything
  // else starting with "--" is an error naming the flag and the verb.
  Args(const std::string& verb, int argc, char** argv, const std::set<std::string>& with_value,
       const std::set<std::string>& switches);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& flag) const { return values_.count(flag) != 0; }
  std::optional<std::string> get(const std::string& flag) const;
  std::string get_or(const std::string& flag, const std::string& dflt) const;
  std::vector<std::string> all(const std::string& flag) const;
  int64_t get_int(const std::string& flag, int64_t dflt) const;

 private:
  std::string verb_;
  std::vector<std::string> positional_;
  std::multimap<std::string, std::string> values_;
};

// "NAME=VALUE" -> {NAME, VALUE}; the split is at the last '=' so names may hold '=' never,
// but values never do. Throws kiln::Error naming the flag when there is no '='.
std::pair<std::string, std::string> split_assignment(const std::string& flag, const std::string& s);
// "1,3,224,224" -> dims. Throws naming the flag on a bad number.
std::vector<int64_t> parse_dims(const std::string& flag, const std::string& s);
int64_t parse_int(const std::string& flag, const std::string& s);

}  // namespace kiln::cli

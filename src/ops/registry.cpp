// Builds the op table from op_list.inc (one def_<Name>() per op) once.
#include <map>

#include "op_helpers.h"

namespace kiln::ops {
namespace {

#define KILN_OP(N) +1
constexpr int kOpCount = 0
#include "op_list.inc"
    ;
#undef KILN_OP
static_assert(kOpCount == 151, "op_list.inc changed: update this count with the list");

struct Table {
  std::vector<OpDef> defs;
  std::vector<const OpDef*> ptrs;
  std::map<std::pair<std::string, std::string>, const OpDef*> by_name;
  Table() {
    defs.reserve(kOpCount);
#define KILN_OP(N) defs.push_back(def_##N());
#include "op_list.inc"
#undef KILN_OP
    for (const auto& d : defs) {
      ptrs.push_back(&d);
      by_name[{std::string(d.domain), std::string(d.name)}] = &d;
    }
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

const std::vector<const OpDef*>& all_ops() { return table().ptrs; }

const OpDef* find_op(std::string_view domain, std::string_view name) {
  std::string dom(domain == "ai.onnx" ? "" : domain);
  const auto& m = table().by_name;
  auto it = m.find({dom, std::string(name)});
  return it == m.end() ? nullptr : it->second;
}

}  // namespace kiln::ops

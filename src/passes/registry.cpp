// PassRegistry (built-in passes from pass_list.inc, plugins add more) and PassContext remarks.
#include <algorithm>

#include "builtin_passes.h"
#include "kiln/ir/error.h"

namespace kiln::passes {

void PassContext::applied(std::string_view pass, const Node& n, std::string what) {
  remarks.push_back(Remark{std::string(pass), n.describe(), true, std::move(what)});
}

void PassContext::decline(std::string_view pass, const Node& n, const Decision& d) {
  if (!explain) return;
  remarks.push_back(Remark{std::string(pass), n.describe(), false, d.reason()});
}

PassRegistry& PassRegistry::global() {
  static PassRegistry* registry = [] {
    auto* r = new PassRegistry;  // never destroyed: plugin factories may outlive static teardown order
#define KILN_PASS(id, name) r->add(name, make_##id);
#include "pass_list.inc"
#undef KILN_PASS
    return r;
  }();
  return *registry;
}

void PassRegistry::add(std::string name, PassFactory factory) {
  KILN_CHECK(!name.empty(), "pass registry: empty pass name");
  KILN_CHECK(factory != nullptr, "pass registry: pass '", name, "' has no factory");
  KILN_CHECK(!has(name), "pass registry: a pass named '", name, "' is already registered");
  entries_.emplace_back(std::move(name), std::move(factory));
}

bool PassRegistry::has(std::string_view name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.first);
  return out;
}

std::unique_ptr<Pass> PassRegistry::create(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e.first != name) continue;
    std::unique_ptr<Pass> p = e.second();
    KILN_CHECK(p != nullptr, "pass registry: the factory of '", name, "' returned nothing");
    return p;
  }
  std::string known;
  for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.first;
  throw Error(str_cat("unknown pass '", name, "' (known passes: ", known, ")"));
}

}  // namespace kiln::passes

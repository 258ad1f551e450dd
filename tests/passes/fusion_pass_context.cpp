// PassContext's remark recording, for the fusion tests while the pass manager (branch
// `passes`, src/passes/registry.cpp) is not merged into this branch. The definitions are weak:
// once the manager's are linked in, theirs are used and this file can go.
#include "kiln/passes/pass.h"

namespace kiln::passes {

__attribute__((weak)) void PassContext::applied(std::string_view pass, const Node& n, std::string what) {
  remarks.push_back(Remark{std::string(pass), n.describe(), true, std::move(what)});
}

__attribute__((weak)) void PassContext::decline(std::string_view pass, const Node& n, const Decision& d) {
  if (!explain) return;
  remarks.push_back(Remark{std::string(pass), n.describe(), false, d.reason()});
}

}  // namespace kiln::passes

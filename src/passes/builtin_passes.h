// Factories of the built-in passes, declared from pass_list.inc.
#pragma once
#include <memory>

#include "kiln/passes/pass.h"

namespace kiln::passes {
#define KILN_PASS(id, name) std::unique_ptr<Pass> make_##id();
#include "pass_list.inc"
#undef KILN_PASS
}  // namespace kiln::passes

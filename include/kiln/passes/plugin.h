// Loading user passes from shared libraries (`--pass-plugin lib.so`).
//
// A plugin is a shared library that exports `kiln_register_passes` (declared in pass.h) and
// adds its passes to the registry it is given. Build it with the same compiler and kiln
// headers as kiln itself (C++ classes cross the boundary) and link kiln_passes into it; see
// samples/passes/ and docs/passes.md. A loaded plugin stays loaded for the process lifetime.
#pragma once
#include <string>
#include <vector>

#include "kiln/passes/pass.h"

namespace kiln::passes {

// dlopens `path` and calls its kiln_register_passes(&registry). Returns the names the plugin
// added. Throws kiln::Error with one line when the file cannot be loaded, exports no
// kiln_register_passes, or registers a name that is already taken.
std::vector<std::string> load_pass_plugin(const std::string& path, PassRegistry& registry = PassRegistry::global());

}  // namespace kiln::passes

// Which kiln build is running: the executable's size and modification time. Caches whose
// contents depend on kiln's own code (compiled artifacts, the kernel rates `kiln machine`
// measures) key on it, so a rebuilt kiln never reuses the previous build's results; hashing a
// 30 MB binary on every use would cost more than the check it guards.
#pragma once

#include <string>

namespace kiln {

std::string build_identity();

}  // namespace kiln

// On/off switches read from the environment, for A/B runs and bisecting: kiln's KILN_* variables
// that turn a rule, a kernel or a schedule off (KILN_BLOCKED_LAYOUT, KILN_DIRECT_1X1,
// KILN_FETCH_AHEAD, ...). One parser for all of them, so that every switch reads the same
// values the same way. Three-way modes (KILN_EXPAND_BANDS: 0, 1 or auto) and numbers
// (KILN_IDLE_SPIN_MS) have parsers of their own where they are read.
#pragma once
#include <cstdlib>
#include <cstring>

namespace kiln {

// False when the environment sets `name` to exactly "0", true when it sets it to exactly "1",
// else `automatic` (a default that depends on the CPU, say). Inline: the kernels, which link
// nothing of ours, read their switches through it too.
inline bool env_switch(const char* name, bool automatic) {
  const char* v = std::getenv(name);
  if (v && std::strcmp(v, "0") == 0) return false;
  if (v && std::strcmp(v, "1") == 0) return true;
  return automatic;
}
// False when the environment sets `name` to exactly "0"; true when it is unset or anything else.
inline bool env_switch_on(const char* name) { return env_switch(name, true); }

}  // namespace kiln

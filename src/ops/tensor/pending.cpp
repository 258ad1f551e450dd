// Ops of this category declared in op_list.inc whose definition is not written yet.
// Each entry names the op only: the verifier accepts it, and the interpreter refuses to
// run it with "has no reference kernel". Move each op out of here into its own file.
#include "../op_helpers.h"

namespace kiln::ops {


}  // namespace kiln::ops

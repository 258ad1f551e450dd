// Ops of this category declared in op_list.inc whose definition is not written yet.
// Each entry names the op only: the verifier accepts it, and the interpreter refuses to
// run it with "has no reference kernel". Move each op out of here into its own file.
#include "../op_helpers.h"

namespace kiln::ops {

OpDef def_If() { return {.name = "If", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Loop() { return {.name = "Loop", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Scan() { return {.name = "Scan", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }

}  // namespace kiln::ops

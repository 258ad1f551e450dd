// Ops of this category declared in op_list.inc whose definition is not written yet.
// Each entry names the op only: the verifier accepts it, and the interpreter refuses to
// run it with "has no reference kernel". Move each op out of here into its own file.
#include "../op_helpers.h"

namespace kiln::ops {

OpDef def_Einsum() { return {.name = "Einsum", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_GRU() { return {.name = "GRU", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_LSTM() { return {.name = "LSTM", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_RNN() { return {.name = "RNN", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }

}  // namespace kiln::ops

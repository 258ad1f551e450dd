// Ops of this category declared in op_list.inc whose definition is not written yet.
// Each entry names the op only: the verifier accepts it, and the interpreter refuses to
// run it with "has no reference kernel". Move each op out of here into its own file.
#include "../op_helpers.h"

namespace kiln::ops {

OpDef def_ArgMax() { return {.name = "ArgMax", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ArgMin() { return {.name = "ArgMin", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_CumSum() { return {.name = "CumSum", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Hardmax() { return {.name = "Hardmax", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_LogSoftmax() { return {.name = "LogSoftmax", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceL1() { return {.name = "ReduceL1", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceL2() { return {.name = "ReduceL2", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceLogSum() { return {.name = "ReduceLogSum", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceLogSumExp() { return {.name = "ReduceLogSumExp", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceMax() { return {.name = "ReduceMax", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceMean() { return {.name = "ReduceMean", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceMin() { return {.name = "ReduceMin", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceProd() { return {.name = "ReduceProd", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceSum() { return {.name = "ReduceSum", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ReduceSumSquare() { return {.name = "ReduceSumSquare", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Softmax() { return {.name = "Softmax", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_TopK() { return {.name = "TopK", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }

}  // namespace kiln::ops

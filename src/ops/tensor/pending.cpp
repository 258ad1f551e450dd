// Ops of this category declared in op_list.inc whose definition is not written yet.
// Each entry names the op only: the verifier accepts it, and the interpreter refuses to
// run it with "has no reference kernel". Move each op out of here into its own file.
#include "../op_helpers.h"

namespace kiln::ops {

OpDef def_Concat() { return {.name = "Concat", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Constant() { return {.name = "Constant", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ConstantOfShape() { return {.name = "ConstantOfShape", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_DepthToSpace() { return {.name = "DepthToSpace", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Dropout() { return {.name = "Dropout", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Expand() { return {.name = "Expand", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_EyeLike() { return {.name = "EyeLike", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Flatten() { return {.name = "Flatten", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Gather() { return {.name = "Gather", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_GatherElements() { return {.name = "GatherElements", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_GatherND() { return {.name = "GatherND", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Identity() { return {.name = "Identity", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_NonZero() { return {.name = "NonZero", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_OneHot() { return {.name = "OneHot", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Pad() { return {.name = "Pad", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Range() { return {.name = "Range", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Reshape() { return {.name = "Reshape", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Resize() { return {.name = "Resize", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ScatterElements() { return {.name = "ScatterElements", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_ScatterND() { return {.name = "ScatterND", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Shape() { return {.name = "Shape", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Size() { return {.name = "Size", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Slice() { return {.name = "Slice", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_SpaceToDepth() { return {.name = "SpaceToDepth", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Split() { return {.name = "Split", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Squeeze() { return {.name = "Squeeze", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Tile() { return {.name = "Tile", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Transpose() { return {.name = "Transpose", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Trilu() { return {.name = "Trilu", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Unsqueeze() { return {.name = "Unsqueeze", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }
OpDef def_Upsample() { return {.name = "Upsample", .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1}; }

}  // namespace kiln::ops

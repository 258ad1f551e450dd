// Loading a model file in any form kiln reads: ONNX (protobuf) or kiln's textual IR (recognised
// by its "kiln.model" header after optional whitespace and comments). Verified, shapes inferred.
#pragma once
#include <string>

#include "kiln/ir/graph.h"

namespace kiln {

Model load_model_file(const std::string& path);
// Whether the file is kiln's textual IR (the "kiln.model" header), as load_model_file tells them
// apart; false for anything else, including a file that cannot be read.
bool is_textual_ir_file(const std::string& path);

}  // namespace kiln

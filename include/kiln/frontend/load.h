// Loading a model file in any form kiln reads: ONNX (protobuf) or kiln's textual IR (recognised
// by its "kiln.model" header after optional whitespace and comments). Verified, shapes inferred.
#pragma once
#include <string>

#include "kiln/ir/graph.h"

namespace kiln {

Model load_model_file(const std::string& path);

}  // namespace kiln

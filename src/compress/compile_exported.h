// Compiling a model kiln changed in memory (quantized, pruned): the compiler reads models from
// files (it keys its cache on the source's bytes), so the model is exported to `tmp_onnx`,
// compiled to `out`, and the temporary is removed whatever happens.
#pragma once

#include <string>

#include "kiln/compiler/compile.h"
#include "kiln/ir/graph.h"

namespace kiln::compress {

void compile_exported(const Model& m, const std::string& tmp_onnx, const std::string& out,
                      const compiler::CompileOptions& opt);

}  // namespace kiln::compress

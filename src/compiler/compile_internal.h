// Pieces of the compile driver shared between its files.
#pragma once
#include <string>

#include "kiln/compiler/compile.h"

namespace kiln::compiler {

// What decides an artifact's content: the source's hash, the options that change the result,
// this kiln build and the CPU's micro-kernel ISA. Equal keys -> an equal artifact.
std::string compile_key(const std::string& source_sha256, const CompileOptions& opt);

// True when `path` is a readable artifact whose manifest carries `key` (an unchanged recompile).
bool artifact_matches(const std::string& path, const std::string& key);

// Loads an ONNX file or a kiln textual-IR file, and fixes the dims the options bind.
Model load_source_model(const std::string& path, const ops::InputSpec& inputs);

}  // namespace kiln::compiler

// SHA-256 (FIPS 180-4) of a file, as lowercase hex: how an artifact's manifest names the
// source model it was compiled from, so that `kiln bench ARTIFACT` can check that the ONNX
// file it hands to the interpreter and ONNX Runtime is that model.
#pragma once
#include <string>

namespace kiln::cli {

// Throws kiln::Error naming the path when the file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace kiln::cli

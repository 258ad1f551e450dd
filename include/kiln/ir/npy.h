// NumPy .npy files (format versions 1.0-3.0, little-endian, C order), the format users
// already have their inputs and reference outputs in.
#pragma once
#include <string>

#include "kiln/ir/tensor.h"

namespace kiln {

// Throws kiln::Error naming the path on a missing, truncated or unsupported file
// (Fortran order, big-endian, object arrays).
Tensor read_npy(const std::string& path);
// Writes atomically (temp file + rename). f16 is written as '<f2'; bf16 has no numpy
// dtype and is written as f32.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace kiln

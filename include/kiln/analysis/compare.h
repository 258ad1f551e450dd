// Numeric comparison of a result against a reference (ONNX Runtime, the interpreter).
#pragma once
#include <string>

#include "kiln/ir/tensor.h"

namespace kiln {

struct Comparison {
  bool same_shape = false;
  bool same_dtype = false;
  double max_abs_diff = 0;   // max |a - b|
  double max_abs_ref = 0;    // max |b|
  double cosine = 1;         // cosine similarity (1 when both are all-zero)
  int64_t mismatches = 0;    // elements with |a-b| > tol_abs (or unequal, for ints/bools)
  bool nan_mismatch = false; // NaN in one and not at the same place in the other
  bool ok = false;           // within tolerance
  std::string str() const;   // "max|Δ|=1.2e-06 (tol 3.4e-05) cos=1.000000"
};

// Floats: ok when max|a-b| <= rel_tol * max|b| + abs_tol. Integers and bools: exact.
Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rel_tol = 1e-4,
                           double abs_tol = 0);

}  // namespace kiln

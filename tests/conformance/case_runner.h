// One conformance case: a single-node ONNX model from scripts/conformance/make_cases.py with
// its inputs and ONNX Runtime's outputs (scripts/conformance/ort_cases.js). Runs it through
// kiln (import_onnx -> run_model) and lists every way kiln disagrees with ORT.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kiln::conformance {

// meta.txt of a case: the op under test, the model's opset, and the float tolerance
// |kiln - ort| <= atol + rtol * |ort| (elementwise).
struct CaseMeta {
  std::string op;
  int64_t opset = 0;
  double atol = 1e-5;
  double rtol = 1e-4;
};

CaseMeta read_meta(const std::filesystem::path& case_dir);

// Problems found running the case, one line each ("output y: value mismatch at ...");
// empty when kiln matches ORT in dtype, shape and values of every output, and kiln's
// import-time shape inference agrees with the shape it actually produced.
std::vector<std::string> run_case(const std::filesystem::path& case_dir, const CaseMeta& meta);

}  // namespace kiln::conformance

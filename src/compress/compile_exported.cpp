#include "compile_exported.h"

#include <filesystem>

#include "kiln/frontend/onnx.h"

namespace kiln::compress {

void compile_exported(const Model& m, const std::string& tmp_onnx, const std::string& out,
                      const compiler::CompileOptions& opt) {
  namespace fs = std::filesystem;
  export_onnx(m, tmp_onnx);
  try {
    compiler::compile_file(tmp_onnx, out, opt);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp_onnx, ec);
    throw;
  }
  std::error_code ec;
  fs::remove(tmp_onnx, ec);
}

}  // namespace kiln::compress

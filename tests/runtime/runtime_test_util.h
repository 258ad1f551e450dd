// Helpers shared by the compiled-runtime tests: scratch directories, error capture, artifacts
// written from textual IR, and exact tensor comparison.
#pragma once
#include <unistd.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"

namespace kiln::testing {

// A fresh directory under the build tree, removed with its contents at scope exit.
class ScratchDir {
 public:
  // ctest runs each test in its own process, several at a time: the directory is unique to the
  // process so that two tests using the same name never remove each other's files.
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::path(KILN_BINARY_DIR) / "test_tmp" / (name + "." + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline Model model_from_text(const std::string& text) {
  Model m = parse_model(text);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

inline ArtifactManifest test_manifest(std::map<std::string, std::string> dims = {}) {
  ArtifactManifest man;
  man.source_model = "test.onnx";
  man.target_isa = "scalar";
  man.passes = {"none"};
  man.dims = std::move(dims);
  return man;
}

// Same dtype, dims and bytes.
inline ::testing::AssertionResult bit_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims())
    return ::testing::AssertionFailure() << dtype_name(a.dtype()) << dims_str(a.dims()) << " vs "
                                         << dtype_name(b.dtype()) << dims_str(b.dims());
  if (a.nbytes() != 0 && std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.as_double(i) != b.as_double(i))
        return ::testing::AssertionFailure() << "element " << i << ": " << a.as_double(i) << " vs " << b.as_double(i);
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::testing

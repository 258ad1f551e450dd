// The lowering tests' pieces: a model parsed from textual IR with its initializers filled by
// `fill(tensor, k)` (k: the initializer's index; the text gives one value per tensor), verified
// and inferred; and the round trip of a lowered model written as an artifact (no passes
// recorded, this CPU's ISA) and loaded back to run on the compiled runtime.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"

namespace kiln::lower {

inline Model parse_filled(const std::string& text, const std::function<void(Tensor&, int)>& fill) {
  Model m = parse_model(text);
  int k = 0;
  for (Value* v : m.graph->initializers) fill(*v->initializer, k++);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

inline std::unique_ptr<Executable> load_lowered(const Model& m, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("kiln_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.kiln").string();
  ArtifactManifest man;
  man.source_model = tag + ".onnx";
  man.target_isa = kernels::gemm_isa();
  man.passes = {"none"};
  write_artifact(path, man, m);
  auto exe = Executable::load(path);
  std::filesystem::remove_all(dir);
  return exe;
}

}  // namespace kiln::lower

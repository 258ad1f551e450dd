// The lowering tests' pieces: a model parsed from textual IR with its initializers filled by
// `fill(tensor, k)` (k: the initializer's index; the text gives one value per tensor), verified
// and inferred; and the round trip of a lowered model written as an artifact (no passes
// recorded, this CPU's ISA) and loaded back to run on the compiled runtime.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/analysis/compare.h"
#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::lower {

inline Model parse_filled(const std::string& text, const std::function<void(Tensor&, int)>& fill) {
  Model m = parse_model(text);
  int k = 0;
  for (Value* v : m.graph->initializers) fill(*v->initializer, k++);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

// Weights and biases of varied values: scale * sin(1.3 i + k).
inline Model parse_sines(const std::string& text, float scale) {
  return parse_filled(text, [scale](Tensor& t, int k) {
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<float>()[i] = scale * std::sin(1.3f * static_cast<float>(i) + static_cast<float>(k));
  });
}

// An input of the given dims, sin(0.37 i) + 0.2: varied values, mostly positive.
inline Tensor sine_input(const std::vector<int64_t>& dims) {
  Tensor x(DType::f32, dims);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i)) + 0.2f;
  return x;
}

// The lowered model's executable against the interpreter on `ref` (the graph before lowering) for
// the input x, at 1 and 2 threads: every output within 1e-5 of its largest magnitude (> 0.01).
inline void expect_lowered_matches(const Model& ref, Executable& exe, const Tensor& x, const std::string& what) {
  const auto want = run_model(ref, {{"x", x}});
  for (int threads : {1, 2}) {
    RunOptions opt;
    opt.threads = threads;
    const auto got = exe.run({{"x", x}}, opt);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (const auto& [name, w] : want) {
      const Tensor& g = got.at(name);
      ASSERT_EQ(g.dims(), w.dims()) << what << " " << name;
      const Comparison c = compare_tensors(g, w, 1e-5);
      EXPECT_GT(c.max_abs_ref, 0.01) << what << " " << name;
      EXPECT_TRUE(c.ok) << what << " " << name << " " << c.str() << " threads=" << threads;
    }
  }
}

// The lines of printed IR `text` that hold `needle`.
inline std::string lines_with(const std::string& text, const std::string& needle) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    if (line.find(needle) != std::string::npos) out += line + "\n";
    at = end + 1;
  }
  return out;
}

// The lowering's reason for each node's kernel, by node name.
inline std::map<std::string, std::string> kernel_whys(const LowerReport& r) {
  std::map<std::string, std::string> why;
  for (const auto& k : r.kernels) why[k.node] = k.why;
  return why;
}

// Whether this CPU's kernel table is AVX-512's (the lowering's AVX-512-only layouts and tactics).
inline bool avx512() { return std::string(kernels::gemm_isa()) == "avx512"; }

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

// `kiln compile`: ONNX model -> optimized, lowered, planned artifact.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/specialize.h"
#include "kiln/lower/lower.h"
#include "kiln/passes/pass.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compiler {

struct CompileOptions {
  int opt_level = 2;                       // -O0 .. -O3
  std::string passes;                      // --passes 'a,b,c' replaces the level's pipeline
  std::vector<std::string> disabled;       // --disable-pass NAME (repeatable)
  std::vector<std::string> plugins;        // --pass-plugin lib.so (repeatable)
  bool print_after_all = false;            // textual IR after every pass, to print_stream
  std::ostream* print_stream = nullptr;
  std::string dump_dir;                    // textual IR after every pass + generated sources
  bool explain = false;                    // collect remarks of declined rewrites
  bool verify_each = true;                 // verifier after every pass
  ops::InputSpec inputs;                   // --dim NAME=N / --shape: dims fixed at compile time
  DimRanges ranges;                        // --dim NAME=LO..HI: what the artifact accepts at run time
  std::string cache_dir;                   // generated-kernel cache ("" = default)
  int threads = 0;                         // default thread count recorded in the artifact
};

struct CompileReport {
  std::vector<std::string> passes_run;
  std::vector<passes::Remark> remarks;
  std::vector<lower::KernelChoice> kernels;  // one per node of the lowered graph
  double seconds = 0;
  bool cache_hit = false;
  std::string text;  // human-readable summary (`--report`)
};

// Compiles `model_path` into the artifact at `out_path` (written to a temporary file, then renamed).
CompileReport compile_file(const std::string& model_path, const std::string& out_path, const CompileOptions& opt);

}  // namespace kiln::compiler

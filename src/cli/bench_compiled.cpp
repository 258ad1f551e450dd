// The compiled backend of `kiln bench`. kiln::compiler::compile_file and
// kiln::Executable::load are not linkable in this build yet, so this file only says so; the
// implementation that uses them is bench_compiled.cpp.next, which replaces this file when
// the compiler and the runtime's Executable are merged. Nothing else in `kiln bench` depends
// on which of the two is built.
#include "bench_backends.h"

namespace kiln::cli {

bool compiled_backend_built() { return false; }

std::unique_ptr<CompiledBenchBackend> make_compiled_backend(const CompiledBackendSpec&) {
  throw Error("the compiled backend is not built yet");
}

}  // namespace kiln::cli

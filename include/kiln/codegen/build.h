// Builds generated kernels into one shared library with the system compiler, cached by content.
//
// The cache key is the sha256 of (translation unit + compiler flags + compiler version). A warm
// cache starts no process at all: the compiler's version is itself memoised on disk, keyed by
// the compiler binary's path, size and modification time. Builds happen in a private temporary
// directory inside the cache and are renamed into place, so concurrent builds of the same
// library never expose a partial file.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/emit.h"

namespace kiln::codegen {

struct BuildOptions {
  std::string cache_dir;              // required; `kiln compile --cache-dir` (default default_cache_dir())
  std::string target_isa = "avx512";  // "avx512", "avx2" or "scalar": picks the -m flags
  std::string dump_dir;               // "" = none; else kernels.cpp and kernels.so are copied here
  std::string compiler;               // "" = `c++`, else `g++`, searched on PATH; or a path/name
};

struct KernelLibrary {
  std::string path;            // the shared library in the cache (valid until the cache is cleared)
  std::string key;             // sha256 hex of source + flags + compiler version
  bool cache_hit = false;      // true when the library was already in the cache
  int compiler_runs = 0;       // compiler processes this call started (0 on a warm cache)
  double compile_seconds = 0;  // wall time of the compile (0 on a hit)
};

// One translation unit: the prelude, then every distinct kernel (kernels with the same symbol
// and source appear once; the same symbol with different sources is an error).
std::string library_source(const std::vector<GeneratedKernel>& kernels);

// Compiler flags for a target ISA ("avx512", "avx2", "scalar"); throws kiln::Error otherwise.
std::vector<std::string> compile_flags(std::string_view target_isa);

// Builds (or finds in the cache) the library holding `kernels`. Throws kiln::Error with one line
// when no compiler is found, the compile fails (first error line + where the source was kept),
// or the cache or dump directory cannot be written.
KernelLibrary build_kernel_library(const std::vector<GeneratedKernel>& kernels, const BuildOptions& opt);

// $HOME/.cache/kiln (or ./.kiln-cache without HOME): the value the CLI passes by default.
std::string default_cache_dir();

}  // namespace kiln::codegen

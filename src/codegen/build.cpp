// Builds the kernel library: one translation unit, the system compiler, a content-addressed cache.
//
// Cache layout (all under BuildOptions::cache_dir):
//   <key>.so, <key>.cpp     a built library and its source (key = sha256 of source+flags+version)
//   compilers/<id>.txt      `<compiler> --version`'s first line, id = hash of path, size, mtime
//   tmp-XXXXXX/             a build in progress (renamed into place when done)
//   failed-<key16>/         the source and log of a failed compile, kept for reading
#include "kiln/codegen/build.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kiln/ir/sha256.h"
#include "process.h"

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, std::string_view text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  KILN_CHECK(out.good(), "cannot write ", p.string(), ": ", std::strerror(errno));
}

void ensure_dir(const fs::path& dir, const char* what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  KILN_CHECK(!ec && fs::is_directory(dir), "cannot create ", what, " ", dir.string(), ": ",
             ec ? ec.message() : "not a directory");
}

// A fresh private directory inside `dir` (same file system, so rename() out of it is atomic).
fs::path make_temp_dir(const fs::path& dir) {
  std::string templ = (dir / "tmp-XXXXXX").string();
  KILN_CHECK(::mkdtemp(templ.data()) != nullptr, "kernel cache directory ", dir.string(), " is not writable: ",
             std::strerror(errno));
  return templ;
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first;
}

std::string find_compiler(const std::string& wanted) {
  if (!wanted.empty()) {
    std::string p = find_program(wanted);
    KILN_CHECK(!p.empty(), "C++ compiler '", wanted, "' not found (needed to build generated kernels)");
    return p;
  }
  for (const char* name : {"c++", "g++"})
    if (std::string p = find_program(name); !p.empty()) return p;
  throw Error("no C++ compiler found: looked for c++ and g++ on PATH (needed to build generated kernels)");
}

// First line of `<compiler> --version`, memoised on disk by the binary's identity so that a
// warm cache runs no process.
std::string compiler_version(const std::string& compiler, const fs::path& cache, int* runs) {
  std::error_code ec;
  const fs::path real = fs::canonical(compiler, ec);
  struct stat st {};
  KILN_CHECK(::stat(compiler.c_str(), &st) == 0, "cannot stat compiler ", compiler, ": ", std::strerror(errno));
  const std::string id = sha256_hex(str_cat(ec ? compiler : real.string(), "\n", st.st_size, "\n", st.st_mtim.tv_sec,
                                            ".", st.st_mtim.tv_nsec))
                             .substr(0, 32);
  const fs::path memo = cache / "compilers" / (id + ".txt");
  if (fs::exists(memo)) {
    std::string v = read_text(memo);
    if (!v.empty()) return v;
  }
  ensure_dir(cache / "compilers", "kernel cache directory");
  const fs::path tmp = make_temp_dir(cache);
  const int rc = run_program({compiler, "--version"}, (tmp / "version.txt").string());
  ++*runs;
  std::string version = first_line(read_text(tmp / "version.txt"));
  KILN_CHECK(rc == 0 && !version.empty(), "compiler ", compiler, " --version failed (exit status ", rc, ")");
  write_text(tmp / "memo.txt", version);
  fs::rename(tmp / "memo.txt", memo, ec);  // a concurrent writer wrote the same text
  fs::remove_all(tmp, ec);
  return version;
}

}  // namespace

std::vector<std::string> compile_flags(std::string_view isa) {
  // gnu++17: the prelude uses if constexpr. -ffp-contract=fast lets a*b+c become one fma.
  // -fno-trapping-math lets selects over divisions, int conversions and floor/ceil vectorise
  // (kernels never read floating-point exception flags); it changes no result.
  std::vector<std::string> f = {"-std=gnu++17", "-O3",           "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math",
                                "-ffp-contract=fast"};
  if (isa == "avx512") {
    for (const char* x : {"-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mfma", "-mprefer-vector-width=512"})
      f.emplace_back(x);
  } else if (isa == "avx2") {
    f.emplace_back("-mavx2");
    f.emplace_back("-mfma");
  } else {
    KILN_CHECK(isa == "scalar", "unknown target ISA '", isa, "' (want avx512, avx2 or scalar)");
  }
  return f;
}

std::string library_source(const std::vector<GeneratedKernel>& kernels) {
  std::string text = "// kiln generated kernels: one kiln_fused_fn per kiln.FusedElementwise node (fused_abi.h).\n";
  text += kernel_prelude();
  std::map<std::string, const GeneratedKernel*> seen;
  for (const GeneratedKernel& k : kernels) {
    auto [it, fresh] = seen.emplace(k.symbol, &k);
    if (!fresh) {
      KILN_CHECK(it->second->source == k.source, "two different generated kernels are both named ", k.symbol);
      continue;
    }
    text += "\n" + k.source;
  }
  return text;
}

KernelLibrary build_kernel_library(const std::vector<GeneratedKernel>& kernels, const BuildOptions& opt) {
  KILN_CHECK(!opt.cache_dir.empty(), "build_kernel_library: no kernel cache directory given");
  const std::vector<std::string> flags = compile_flags(opt.target_isa);
  const std::string source = library_source(kernels);
  const std::string compiler = find_compiler(opt.compiler);
  const fs::path cache = opt.cache_dir;
  ensure_dir(cache, "kernel cache directory");

  KernelLibrary lib;
  const std::string version = compiler_version(compiler, cache, &lib.compiler_runs);
  std::string keyed = source + '\0' + version;
  for (const std::string& f : flags) keyed += '\0' + f;
  lib.key = sha256_hex(keyed);
  const fs::path so = cache / (lib.key + ".so");
  lib.path = so.string();
  lib.cache_hit = fs::exists(so);
  if (!lib.cache_hit) {
    const auto start = std::chrono::steady_clock::now();
    const fs::path tmp = make_temp_dir(cache);
    write_text(tmp / "kernels.cpp", source);
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const std::string& a : {std::string("-o"), (tmp / "kernels.so").string(), (tmp / "kernels.cpp").string()})
      argv.push_back(a);
    const int rc = run_program(argv, (tmp / "compile.log").string());
    ++lib.compiler_runs;
    std::error_code ec;
    if (rc != 0) {
      const fs::path kept = cache / ("failed-" + lib.key.substr(0, 16));
      fs::remove_all(kept, ec);
      fs::rename(tmp, kept, ec);
      const fs::path where = ec ? tmp : kept;
      throw Error(str_cat("generated kernels failed to compile: ", first_line(read_text(where / "compile.log")),
                          " (source kept at ", (where / "kernels.cpp").string(), ")"));
    }
    // rename() replaces atomically: a concurrent build of the same key leaves one whole file.
    fs::rename(tmp / "kernels.cpp", cache / (lib.key + ".cpp"), ec);
    fs::rename(tmp / "kernels.so", so, ec);
    KILN_CHECK(!ec, "cannot move the built library into ", cache.string(), ": ", ec.message());
    fs::remove_all(tmp, ec);
    lib.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!opt.dump_dir.empty()) {
    ensure_dir(opt.dump_dir, "dump directory");
    write_text(fs::path(opt.dump_dir) / "kernels.cpp", source);
    std::error_code ec;
    fs::copy_file(so, fs::path(opt.dump_dir) / "kernels.so", fs::copy_options::overwrite_existing, ec);
    KILN_CHECK(!ec, "cannot write ", (fs::path(opt.dump_dir) / "kernels.so").string(), ": ", ec.message());
  }
  return lib;
}

std::string default_cache_dir() {
  const char* home = std::getenv("HOME");
  return home != nullptr && *home != '\0' ? str_cat(home, "/.cache/kiln") : ".kiln-cache";
}

}  // namespace kiln::codegen

// load_pass_plugin: dlopen a user library and let it register its passes.
#include "kiln/passes/plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <memory>

namespace kiln::passes {

std::vector<std::string> load_pass_plugin(const std::string& path, PassRegistry& registry) {
  struct stat st;
  KILN_CHECK(::stat(path.c_str(), &st) == 0, "pass plugin '", path, "': no such file");
  // A bare name would make dlopen search the library path; a plugin is always a file path.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    throw Error(str_cat("pass plugin '", path, "': cannot load: ", err ? err : "unknown error"));
  }
  ::dlerror();
  auto fn = reinterpret_cast<kiln_register_passes_fn>(::dlsym(handle, "kiln_register_passes"));
  KILN_CHECK(fn != nullptr, "pass plugin '", path, "': does not export kiln_register_passes");
  // Register into a scratch registry first, so a duplicate name leaves `registry` untouched.
  auto scratch = std::make_shared<PassRegistry>();
  try {
    fn(scratch.get());
  } catch (const Error& e) {
    throw Error(str_cat("pass plugin '", path, "': ", e.what()));
  }
  std::vector<std::string> added = scratch->names();
  KILN_CHECK(!added.empty(), "pass plugin '", path, "': kiln_register_passes registered no pass");
  for (const auto& n : added)
    KILN_CHECK(!registry.has(n), "pass plugin '", path, "': pass '", n, "' is already registered");
  for (const auto& n : added) registry.add(n, [scratch, n] { return scratch->create(n); });
  return added;
}

}  // namespace kiln::passes

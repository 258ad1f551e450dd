// Loading the generated-kernel library from the artifact's bytes. dlopen needs a path, so the
// bytes go into an anonymous memory file (memfd_create) opened as /proc/self/fd/N; where memfd
// is unavailable, into a private temporary file that is unlinked once loaded.
#include "kiln/runtime/kernel_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kiln/ir/error.h"

namespace kiln::runtime {
namespace {

bool write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::unique_ptr<KernelLibrary> KernelLibrary::load(std::string_view bytes, const std::string& what) {
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary());
  lib->what_ = what;
  std::string path;
  int fd = ::memfd_create("kiln-kernels", MFD_CLOEXEC);
  if (fd >= 0) {
    path = "/proc/self/fd/" + std::to_string(fd);
  } else {
    const char* tmpdir = std::getenv("TMPDIR");
    path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/kiln-kernels-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    KILN_CHECK(fd >= 0, what, ": cannot create a file to load the kernel library from: ", std::strerror(errno));
  }
  lib->fd_ = fd;
  bool written = write_all(fd, bytes);
  int err = errno;
  bool temp_file = path.rfind("/proc/self/fd/", 0) != 0;
  if (!written) {
    if (temp_file) ::unlink(path.c_str());
    throw Error(str_cat(what, ": cannot write the kernel library out for loading: ", std::strerror(err)));
  }
  lib->handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (temp_file) ::unlink(path.c_str());
  if (lib->handle_ == nullptr) {
    const char* msg = ::dlerror();
    throw Error(str_cat(what, ": cannot load the kernel library: ", msg ? msg : "unknown dlopen error"));
  }
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

void* KernelLibrary::symbol(const std::string& name) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = symbols_.find(name);
  if (it != symbols_.end()) return it->second;
  ::dlerror();
  void* p = ::dlsym(handle_, name.c_str());
  KILN_CHECK(p != nullptr, what_, ": the kernel library has no symbol '", name, "'");
  symbols_.emplace(name, p);
  return p;
}

}  // namespace kiln::runtime

// The artifact's generated-kernel library, loaded from bytes without a file of its own on disk
// (memfd_create + dlopen of /proc/self/fd/N; a private temporary file where memfd is missing).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kiln::runtime {

class KernelLibrary {
 public:
  // `what` names the source in errors ("model.kiln: kernels.so").
  static std::unique_ptr<KernelLibrary> load(std::string_view bytes, const std::string& what);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // Address of an exported symbol; throws kiln::Error naming it when absent. Cached.
  void* symbol(const std::string& name) const;

 private:
  KernelLibrary() = default;
  std::string what_;
  void* handle_ = nullptr;
  int fd_ = -1;  // kept open while loaded so no other library gets the same /proc/self/fd path
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, void*> symbols_;
};

}  // namespace kiln::runtime

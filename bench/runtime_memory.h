// What the kernel benchmarks share: buffers allocated as the runtime allocates them, and the
// machine's measured FP32 peak for the "% of peak" counters.
#pragma once

#include <sys/mman.h>

#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::bench {

// The runtime's arena and copied weights (ir/tensor.cpp make_large_buffer): 64-byte aligned, and
// 2 MiB aligned and advised for huge pages from 2 MiB on. A plain std::vector of megabytes starts
// 16 bytes past a cache line (glibc's mmap chunk header), so every 64-byte row of a packed panel
// and every output vector straddles two lines: gemm 1024^3 ran 0.90 of the time aligned on an Ice
// Lake core, paired.
template <class T>
struct RuntimeAlloc {
  using value_type = T;
  RuntimeAlloc() = default;
  template <class U>
  RuntimeAlloc(const RuntimeAlloc<U>&) {}
  T* allocate(size_t n) {
    const size_t huge = size_t{2} << 20, bytes = n * sizeof(T), align = bytes >= huge ? huge : 64;
    const size_t rounded = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (p == nullptr) throw std::bad_alloc();
    if (align == huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice: without it, 4 KiB pages
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  friend bool operator==(const RuntimeAlloc&, const RuntimeAlloc&) { return true; }
};
using Floats = std::vector<float, RuntimeAlloc<float>>;

// The FP32 FMA peak of `threads` threads as `kiln machine` measured and cached (the path rule of
// analysis/machine_cache.cpp): the all-core figure from as many threads as the host has cores
// (two cores together reached 317 GFLOP/s on the Ice Lake host against 2 x 171.5 alone), the
// one-core figure times the threads below that; the project machine's 225 GFLOP/s per core
// (2 x 16-lane FMA per cycle at ~3.5 GHz) when there is no cache.
inline double cached_peak(int threads) {
  std::string path;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) path = std::string(xdg) + "/kiln/machine.json";
  else if (const char* home = std::getenv("HOME"); home && *home) path = std::string(home) + "/.cache/kiln/machine.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  auto number = [&](const std::string& key) {
    const size_t at = s.find("\"" + key + "\":");
    return at == std::string::npos ? 0.0 : std::atof(s.c_str() + at + key.size() + 3);
  };
  const double one = number("fp32_gflops_per_core"), all = number("fp32_gflops_all_cores");
  const int cores = static_cast<int>(number("cores"));
  if (one <= 0) return 225e9 * threads;
  if (threads > 1 && threads >= cores && all > 0) return all * 1e9;
  return one * 1e9 * threads;
}

}  // namespace kiln::bench

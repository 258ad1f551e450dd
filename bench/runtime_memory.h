// What the kernel benchmarks share: buffers allocated as the runtime allocates them, and the
// machine's measured FP32 peak for the "% of peak" counters.
#pragma once

#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/analysis/machine.h"
#include "kiln/ir/tensor.h"

namespace kiln::bench {

// The runtime's arena and copied weights: each allocation is a make_large_buffer block
// (ir/tensor.cpp), so 64-byte aligned, and from 2 MiB on a 2 MiB aligned mapping of its own
// advised for huge pages, as the runtime's are. A plain std::vector of megabytes starts 16 bytes
// past a cache line (glibc's mmap chunk header), so every 64-byte row of a packed panel and
// every output vector straddles two lines: gemm 1024^3 ran 0.90 of the time aligned on an Ice
// Lake core, paired.
template <class T>
struct RuntimeAlloc {
  using value_type = T;
  RuntimeAlloc() = default;
  template <class U>
  RuntimeAlloc(const RuntimeAlloc<U>&) {}
  T* allocate(size_t n) {
    std::shared_ptr<Buffer> block;
    try {
      block = make_large_buffer(n * sizeof(T), false);
    } catch (const std::exception&) {
      throw std::bad_alloc();
    }
    T* p = static_cast<T*>(block->data());
    std::lock_guard<std::mutex> lock(live().mu);
    live().blocks.emplace(p, std::move(block));
    return p;
  }
  void deallocate(T* p, size_t) {
    std::lock_guard<std::mutex> lock(live().mu);
    live().blocks.erase(p);
  }
  friend bool operator==(const RuntimeAlloc&, const RuntimeAlloc&) { return true; }

 private:
  // The blocks handed out, by address, until deallocate releases them.
  struct Live {
    std::mutex mu;
    std::unordered_map<const void*, std::shared_ptr<Buffer>> blocks;
  };
  static Live& live() {
    static Live l;
    return l;
  }
};
using Floats = std::vector<float, RuntimeAlloc<float>>;

// The FP32 FMA peak of `threads` threads as `kiln machine` measured and cached: the all-core
// figure from as many threads as the host has cores (two cores together reached 317 GFLOP/s on
// the Ice Lake host against 2 x 171.5 alone), the one-core figure times the threads below that;
// the project machine's 225 GFLOP/s per core (2 x 16-lane FMA per cycle at ~3.5 GHz) when there
// is no readable cache.
inline double cached_peak(int threads) {
  // Read once per process: every benchmark's report asks.
  static const analysis::MachinePeaks m = [] {
    try {
      const std::string path = analysis::default_machine_cache_path();
      std::ifstream in(path);
      if (!in) return analysis::MachinePeaks{};
      std::stringstream text;
      text << in.rdbuf();
      return analysis::machine_from_json(text.str(), path);
    } catch (const std::exception&) {
      return analysis::MachinePeaks{};
    }
  }();
  if (m.fp32_gflops_per_core <= 0) return 225e9 * threads;
  if (threads > 1 && threads >= m.cores && m.fp32_gflops_all_cores > 0) return m.fp32_gflops_all_cores * 1e9;
  return m.fp32_gflops_per_core * 1e9 * threads;
}

}  // namespace kiln::bench

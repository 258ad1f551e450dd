// A thread's reusable scratch floats on a 64-byte boundary, for the GEMM driver's packed blocks.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace kiln::kernels::detail {

// A std::vector<float> of more than glibc's mmap threshold starts 16 bytes past a cache line (the
// chunk header), smaller ones anywhere on 16 bytes: packed B panels in such a buffer are loaded
// as vectors that straddle two lines on every K step. floats(n) keeps the buffer between calls
// (no allocation per run once warm) and does not keep its contents when it grows.
class LineScratch {
 public:
  float* floats(size_t n) {
    if (n > size_) {
      const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
      float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (p == nullptr) throw std::bad_alloc();
      data_.reset(p);
      size_ = n;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t size_ = 0;
};

}  // namespace kiln::kernels::detail

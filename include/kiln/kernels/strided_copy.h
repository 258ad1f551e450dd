// Copies a strided view into a contiguous buffer (Transpose, Slice, Expand and the other index
// maps of the reference kernels, and the compiled runtime's Transpose).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kiln/kernels/parallel.h"

namespace kiln::kernels {

// Copies a strided view of src into the contiguous dst of `dims`: element (i0..ik) of
// dst = src[offset + sum i_d * strides[d]]. Strides may be 0 (broadcast) or negative.
// Walks an odometer over the outer dims (no div/mod per element); the innermost dim is a
// memcpy when contiguous.
// Dims and strides as r values each; the odometer's digits live on the stack up to rank 16, so
// a call allocates nothing (the compiled runtime calls this on every run).
template <typename T>
void strided_copy(const T* src, int64_t offset, const int64_t* strides, const int64_t* dims, size_t r, T* dst) {
  for (size_t i = 0; i < r; ++i)
    if (dims[i] == 0) return;
  if (r == 0) {
    dst[0] = src[offset];
    return;
  }
  const int64_t inner = dims[r - 1], istride = strides[r - 1];
  constexpr size_t kStackRank = 16;
  int64_t stack_idx[kStackRank] = {};
  std::vector<int64_t> heap_idx(r - 1 > kStackRank ? r - 1 : 0, 0);
  int64_t* idx = r - 1 > kStackRank ? heap_idx.data() : stack_idx;
  int64_t src_pos = offset;
  for (;;) {
    const T* s = src + src_pos;
    if (istride == 1) {
      std::memcpy(dst, s, sizeof(T) * inner);
    } else if (istride == 0) {
      std::fill(dst, dst + inner, *s);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = s[j * istride];
    }
    dst += inner;
    // odometer over dims [0, r-1)
    int64_t d = static_cast<int64_t>(r) - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < dims[d]) {
        src_pos += strides[d];
        break;
      }
      src_pos -= strides[d] * (dims[d] - 1);
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// strided_copy on up to `threads` threads: a copy of 2^16 elements or more with an outer dim
// over 1 splits that dim, each chunk a strided view of its own.
template <typename T>
void strided_copy_threads(const T* src, int64_t offset, const int64_t* strides, const int64_t* dims, size_t r, T* dst,
                          int threads) {
  int64_t n = 1;
  for (size_t i = 0; i < r; ++i) n *= dims[i];
  if (r < 2 || n < (int64_t{1} << 16) || threads <= 1 || dims[0] <= 1)
    return strided_copy<T>(src, offset, strides, dims, r, dst);
  const int64_t row = n / dims[0];
  parallel_for(dims[0], threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      strided_copy<T>(src, offset + i * strides[0], strides + 1, dims + 1, r - 1, dst + i * row);
  });
}

}  // namespace kiln::kernels

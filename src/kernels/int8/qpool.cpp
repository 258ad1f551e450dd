// Max pooling of int8 tensors (the pooling between quantized convolutions runs on the u8 values
// themselves: max commutes with a monotonic per-tensor quantization).
#include <algorithm>
#include <limits>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::int8 {
namespace {

// dst[i] = max(dst[i], src[i]), i < n, 16 bytes at a time (the build's -O2 does not vectorise a
// loop whose pointers may alias); signed bytes compare as unsigned after flipping the sign bit.
template <typename T>
void max_into(T* dst, const T* src, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128i flip = _mm_set1_epi8(std::is_signed_v<T> ? static_cast<char>(0x80) : 0);
  auto step = [&](int64_t at) {
    const __m128i a = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dst + at)), flip);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + at)), flip);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + at), _mm_xor_si128(_mm_max_epu8(a, b), flip));
  };
  for (; i + 16 <= n; i += 16) step(i);
  // The last partial vector as one more that ends at n: taking a max twice changes nothing, and
  // rows here are ~100 bytes, so a scalar tail would cost as much as the vectors.
  if (i < n && n >= 16) {
    step(n - 16);
    return;
  }
#endif
  for (; i < n; ++i) dst[i] = std::max(dst[i], src[i]);
}

// y[j] = full[j * stride], j < n, from a row of `len` starts: stride 2 (the common pooling) 16
// outputs at a time.
template <typename T>
void pick_strided(const T* full, int64_t len, int64_t stride, int64_t n, T* y) {
  int64_t j = 0;
#if defined(__SSE2__)
  if (stride == 2) {
    const __m128i even = _mm_set1_epi16(0x00ff);
    for (; j + 16 <= n && 2 * j + 32 <= len; j += 16) {  // reads full[2j .. 2j + 31]
      const __m128i lo = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(full + 2 * j)), even);
      const __m128i hi = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(full + 2 * j + 16)), even);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j), _mm_packus_epi16(lo, hi));
    }
  }
#endif
  for (; j < n; ++j) y[j] = full[j * stride];
}

// Window starts t = 0 .. Lw - 1 (input column t - pad_left) at stride 1: every pass below is a
// contiguous, branch-free loop that vectorises; the strided output is picked at the end.
int64_t starts(const Pool2d& p) { return (p.OW - 1) * p.stride_w + 1; }

template <typename T>
void pool_plane(const Pool2d& p, const T* x, T* y, T* rows) {
  const T lowest = std::numeric_limits<T>::lowest();
  const int64_t L = starts(p);
  T* full = rows + p.H * L;  // one output row at every window start
  // rows[ih * L + t] = max over the horizontal window starting at t of input row ih.
  for (int64_t ih = 0; ih < p.H; ++ih) {
    const T* xr = x + ih * p.W;
    T* r = rows + ih * L;
    std::fill(r, r + L, lowest);
    for (int64_t k = 0; k < p.kw; ++k) {
      const int64_t off = k - p.pad_left;  // input column of start t: t + off
      const int64_t lo = std::max<int64_t>(0, -off), hi = std::min(L, p.W - off);
      if (lo < hi) max_into(r + lo, xr + lo + off, hi - lo);
    }
  }
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t h0 = oh * p.stride_h - p.pad_top;
    const int64_t a = std::max<int64_t>(h0, 0), b = std::min(h0 + p.kh, p.H);
    std::fill(full, full + L, lowest);
    for (int64_t ih = a; ih < b; ++ih) {
      const T* r = rows + ih * L;
      max_into(full, r, L);
    }
    pick_strided(full, L, p.stride_w, p.OW, y + oh * p.OW);
  }
}

}  // namespace

size_t max_pool_workspace_bytes(const Pool2d& p, int threads) {
  return static_cast<size_t>(std::max(1, threads <= 0 ? default_threads() : threads) * (p.H + 1) * starts(p));
}

void max_pool_2d(const Pool2d& p, bool is_signed, const uint8_t* x, uint8_t* y, uint8_t* workspace, int threads) {
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const int t = threads_for_work(static_cast<double>(p.planes) * p.H * p.W * 2, threads);
  parallel_for(t, t, [&](int64_t tb, int64_t te) {
    for (int64_t w = tb; w < te; ++w) {
      uint8_t* rows = workspace + w * (p.H + 1) * starts(p);
      for (int64_t q = p.planes * w / t; q < p.planes * (w + 1) / t; ++q) {
        const uint8_t* xp = x + q * p.H * p.W;
        uint8_t* yp = y + q * p.OH * p.OW;
        if (is_signed)
          pool_plane(p, reinterpret_cast<const int8_t*>(xp), reinterpret_cast<int8_t*>(yp), reinterpret_cast<int8_t*>(rows));
        else
          pool_plane(p, xp, yp, rows);
      }
    }
  });
}

}  // namespace kiln::kernels::int8

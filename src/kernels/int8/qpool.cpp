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

// Bytes compared as unsigned: signed ones with their sign bit flipped on the way in and out.
template <typename T>
inline uint8_t flip_bits() {
  return std::is_signed_v<T> ? 0x80 : 0;
}

// dst[i] = max over s < nsrc of src[s][i], i < n, 16 bytes at a time, each output stored once:
// passes that re-read a row they just stored at another byte offset stall on store forwarding
// (a 16-byte load over two earlier stores): resnet50's pool took 0.60 ms that way, 0.22 now.
// The last partial vector is one more that ends at n (a max is idempotent).
template <typename T>
void max_of_rows(const T* const* src, int nsrc, int64_t n, T* dst) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (n >= 16) {
    const __m128i flip = _mm_set1_epi8(static_cast<char>(flip_bits<T>()));
    for (int64_t at = 0;; at = std::min(at + 16, n - 16)) {
      __m128i m = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src[0] + at)), flip);
      for (int s = 1; s < nsrc; ++s)
        m = _mm_max_epu8(m, _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src[s] + at)), flip));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + at), _mm_xor_si128(m, flip));
      if (at == n - 16) return;
    }
  }
#endif
  for (; i < n; ++i) {
    T m = src[0][i];
    for (int s = 1; s < nsrc; ++s) m = std::max(m, src[s][i]);
    dst[i] = m;
  }
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

// Window starts t = 0 .. L - 1 (input column t - pad_left) at stride 1: the passes below are
// contiguous loops over whole rows; the strided output is picked at the end.
int64_t starts(const Pool2d& p) { return (p.OW - 1) * p.stride_w + 1; }
// The rows' pitch: whole vectors, so the vertical pass writes each byte of `full` once and the
// strided pick never loads across two of its stores (a failed store forwarding).
int64_t pitch(const Pool2d& p) { return (starts(p) + 15) / 16 * 16; }

// Window taps per pass: kernels wider or taller than this take several passes (the first pass
// writes, the others fold in their maxima).
constexpr int kMaxTaps = 16;

template <typename T>
void pool_plane(const Pool2d& p, const T* x, T* y, T* rows) {
  const T lowest = std::numeric_limits<T>::lowest();
  const int64_t L = starts(p), Lp = pitch(p);
  T* full = rows + p.H * Lp;  // one output row at every window start
  const T* src[kMaxTaps + 1];
  // rows[ih * L + t] = max over the horizontal window starting at t of input row ih (input
  // columns t + k - pad_left). Starts whose taps all lie inside the row take max_of_rows over
  // shifted views of it; the few at the edges take the scalar loop.
  const int64_t t_lo = std::min(L, std::max<int64_t>(0, p.pad_left));
  const int64_t t_hi = std::max(t_lo, std::min(L, p.W - p.kw + p.pad_left + 1));
  for (int64_t ih = 0; ih < p.H; ++ih) {
    const T* xr = x + ih * p.W;
    T* r = rows + ih * Lp;
    std::fill(r + L, r + Lp, lowest);
    auto edge = [&](int64_t t) {
      T m = lowest;
      for (int64_t k = 0; k < p.kw; ++k)
        if (const int64_t c = t + k - p.pad_left; c >= 0 && c < p.W) m = std::max(m, xr[c]);
      r[t] = m;
    };
    for (int64_t t = 0; t < t_lo; ++t) edge(t);
    for (int64_t k0 = 0; k0 < p.kw; k0 += kMaxTaps) {
      const int taps = static_cast<int>(std::min<int64_t>(kMaxTaps, p.kw - k0));
      int n = 0;
      if (k0 > 0) src[n++] = r + t_lo;  // fold the previous passes in
      for (int k = 0; k < taps; ++k) src[n++] = xr + t_lo + k0 + k - p.pad_left;
      max_of_rows(src, n, t_hi - t_lo, r + t_lo);
    }
    for (int64_t t = t_hi; t < L; ++t) edge(t);
  }
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t h0 = oh * p.stride_h - p.pad_top;
    const int64_t a = std::max<int64_t>(h0, 0), b = std::min(h0 + p.kh, p.H);
    if (a >= b) {
      std::fill(full, full + Lp, lowest);
    } else {
      for (int64_t i0 = a; i0 < b; i0 += kMaxTaps) {
        int n = 0;
        if (i0 > a) src[n++] = full;
        for (int64_t ih = i0; ih < std::min(b, i0 + kMaxTaps); ++ih) src[n++] = rows + ih * Lp;
        max_of_rows(src, n, Lp, full);
      }
    }
    pick_strided(full, L, p.stride_w, p.OW, y + oh * p.OW);
  }
}

// The pooling of resnets (3x3, stride 2, padding 1), on bytes already flipped to unsigned order:
// per output row the (up to) 3 input rows' maximum first, then the horizontal window
// max(v[2j - 1], v[2j], v[2j + 1]) from v's even and odd bytes split apart (odd ones shifted by
// one for v[2j - 1]), 16 outputs per 32 input bytes. The generic passes above compute the
// window at every column and every input row, then pick; this does a quarter of their work
// (resnet50's pool: 0.21 -> 0.08 ms, one thread). `row` holds round_up(W, 32) bytes.
#if defined(__SSE2__)
bool pool_3x3s2_applies(const Pool2d& p) {
  return p.kh == 3 && p.kw == 3 && p.stride_h == 2 && p.stride_w == 2 && p.pad_top == 1 && p.pad_left == 1 &&
         p.W >= 16 && p.OH == (p.H - 1) / 2 + 1 && p.OW == (p.W - 1) / 2 + 1;
}

void pool_plane_3x3s2(const Pool2d& p, uint8_t flip_byte, const uint8_t* x, uint8_t* y, uint8_t* row) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(flip_byte)), low_bytes = _mm_set1_epi16(0x00ff);
  const int64_t W = p.W, chunks = (W + 31) / 32;
  // Past W the row stays 0, the lowest unsigned byte: the right padding.
  std::fill(row + W, row + chunks * 32, uint8_t{0});
  alignas(16) uint8_t out[16];
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t a = std::max<int64_t>(2 * oh - 1, 0), b = std::min<int64_t>(2 * oh + 2, p.H);
    // Vertical maximum over rows [a, b); the last vector overlaps the one before it (W >= 16).
    for (int64_t i = 0;; i = std::min(i + 16, W - 16)) {
      __m128i m = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + a * W + i)), flip);
      for (int64_t r = a + 1; r < b; ++r)
        m = _mm_max_epu8(m, _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + r * W + i)), flip));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + i), m);
      if (i == W - 16) break;
    }
    __m128i odd_before = _mm_setzero_si128();  // byte 15: v[-1], the left padding
    uint8_t* yr = y + oh * p.OW;
    for (int64_t c = 0; c < chunks; ++c) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 32 * c));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 32 * c + 16));
      const __m128i even = _mm_packus_epi16(_mm_and_si128(lo, low_bytes), _mm_and_si128(hi, low_bytes));
      const __m128i odd = _mm_packus_epi16(_mm_srli_epi16(lo, 8), _mm_srli_epi16(hi, 8));
      const __m128i prev = _mm_or_si128(_mm_slli_si128(odd, 1), _mm_srli_si128(odd_before, 15));
      odd_before = odd;
      const __m128i m = _mm_xor_si128(_mm_max_epu8(_mm_max_epu8(even, odd), prev), flip);
      const int64_t j0 = 16 * c, n = std::min<int64_t>(16, p.OW - j0);
      if (n == 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + j0), m);
      } else {
        _mm_store_si128(reinterpret_cast<__m128i*>(out), m);
        std::copy(out, out + n, yr + j0);
      }
    }
  }
}
#endif

// Per thread: the generic passes' rows, or pool_plane_3x3s2's one row.
int64_t thread_bytes(const Pool2d& p) { return std::max((p.H + 1) * pitch(p), (p.W + 31) / 32 * 32); }

}  // namespace

size_t max_pool_workspace_bytes(const Pool2d& p, int threads) {
  return static_cast<size_t>(std::max(1, threads <= 0 ? default_threads() : threads) * thread_bytes(p));
}

void max_pool_2d(const Pool2d& p, bool is_signed, const uint8_t* x, uint8_t* y, uint8_t* workspace, int threads) {
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const int t = threads_for_work(static_cast<double>(p.planes) * p.H * p.W * 2, threads);
  parallel_for(t, t, [&](int64_t tb, int64_t te) {
    for (int64_t w = tb; w < te; ++w) {
      uint8_t* rows = workspace + w * thread_bytes(p);
      for (int64_t q = p.planes * w / t; q < p.planes * (w + 1) / t; ++q) {
        const uint8_t* xp = x + q * p.H * p.W;
        uint8_t* yp = y + q * p.OH * p.OW;
#if defined(__SSE2__)
        if (pool_3x3s2_applies(p)) {
          pool_plane_3x3s2(p, is_signed ? 0x80 : 0, xp, yp, rows);
          continue;
        }
#endif
        if (is_signed)
          pool_plane(p, reinterpret_cast<const int8_t*>(xp), reinterpret_cast<int8_t*>(yp), reinterpret_cast<int8_t*>(rows));
        else
          pool_plane(p, xp, yp, rows);
      }
    }
  });
}

}  // namespace kiln::kernels::int8

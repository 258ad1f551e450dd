// Max pooling of int8 tensors (the pooling between quantized convolutions runs on the u8 values
// themselves: max commutes with a monotonic per-tensor quantization).
#include <algorithm>

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::int8 {
namespace {

template <typename T>
void pool_plane(const Pool2d& p, const T* x, T* y, T* rows) {
  const T lowest = std::numeric_limits<T>::lowest();
  // rows[ih * OW + ow] = max over the horizontal window of input row ih, one window column kw at
  // a time over the outputs whose column is inside the row (a branch-free loop that vectorises).
  const int64_t sw = p.stride_w;
  for (int64_t ih = 0; ih < p.H; ++ih) {
    const T* xr = x + ih * p.W;
    T* r = rows + ih * p.OW;
    std::fill(r, r + p.OW, lowest);
    for (int64_t k = 0; k < p.kw; ++k) {
      const int64_t off = k - p.pad_left;  // iw = ow * sw + off
      const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
      const int64_t hi = p.W - 1 - off >= 0 ? std::min(p.OW, (p.W - 1 - off) / sw + 1) : 0;
      for (int64_t ow = lo; ow < hi; ++ow) r[ow] = std::max(r[ow], xr[ow * sw + off]);
    }
  }
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t h0 = oh * p.stride_h - p.pad_top;
    const int64_t a = std::max<int64_t>(h0, 0), b = std::min(h0 + p.kh, p.H);
    T* yr = y + oh * p.OW;
    std::fill(yr, yr + p.OW, lowest);
    for (int64_t ih = a; ih < b; ++ih) {
      const T* r = rows + ih * p.OW;
      for (int64_t ow = 0; ow < p.OW; ++ow) yr[ow] = std::max(yr[ow], r[ow]);  // vectorises
    }
  }
}

}  // namespace

size_t max_pool_workspace_bytes(const Pool2d& p, int threads) {
  return static_cast<size_t>(std::max(1, threads <= 0 ? default_threads() : threads) * p.H * p.OW);
}

void max_pool_2d(const Pool2d& p, bool is_signed, const uint8_t* x, uint8_t* y, uint8_t* workspace, int threads) {
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const int t = threads_for_work(static_cast<double>(p.planes) * p.H * p.W * 2, threads);
  parallel_for(t, t, [&](int64_t tb, int64_t te) {
    for (int64_t w = tb; w < te; ++w) {
      uint8_t* rows = workspace + w * p.H * p.OW;
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

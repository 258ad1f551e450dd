#include "conv_im2col.h"

#include <algorithm>

namespace kiln::kernels::detail {

void im2col_pack_block(const Conv2dShape& s, const float* x, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int nr,
                       float* out) {
  const int64_t OW = s.out_w(), OH = s.out_h(), N = OH * OW, RS = s.R * s.S;
  for (int64_t jp = 0; jp < nc; jp += nr, out += kc * nr) {
    const int64_t first = j0 + jp, cols = std::min<int64_t>(nr, N - first);
    for (int64_t q = 0; q < kc; ++q) {
      const int64_t row = p0 + q, c = row / RS, r = (row % RS) / s.S, sx = row % s.S;
      const float* plane = x + c * s.H * s.W;
      float* dst = out + q * nr;
      // Walk the panel's columns as runs that stay within one output row.
      int64_t oh = first / OW, ow = first % OW, cc = 0;
      while (cc < cols) {
        const int64_t run = std::min(cols - cc, OW - ow);
        const int64_t ih = oh * s.stride_h - s.pad_top + r * s.dil_h;
        if (ih < 0 || ih >= s.H) {
          std::fill(dst + cc, dst + cc + run, 0.f);
        } else {
          const float* src = plane + ih * s.W;
          const int64_t iw0 = ow * s.stride_w - s.pad_left + sx * s.dil_w;
          if (s.stride_w == 1) {
            // Columns with iw in [0, W) copy straight; the rest are padding.
            const int64_t lo = std::clamp<int64_t>(-iw0, 0, run), hi = std::clamp<int64_t>(s.W - iw0, lo, run);
            std::fill(dst + cc, dst + cc + lo, 0.f);
            std::copy(src + iw0 + lo, src + iw0 + hi, dst + cc + lo);
            std::fill(dst + cc + hi, dst + cc + run, 0.f);
          } else {
            for (int64_t u = 0; u < run; ++u) {
              const int64_t iw = iw0 + u * s.stride_w;
              dst[cc + u] = (iw >= 0 && iw < s.W) ? src[iw] : 0.f;
            }
          }
        }
        cc += run;
        ow = 0;
        ++oh;
      }
      std::fill(dst + cols, dst + nr, 0.f);
    }
  }
}

}  // namespace kiln::kernels::detail

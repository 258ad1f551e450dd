#include "conv_phase.h"

#include <algorithm>

namespace kiln::kernels::detail {

PhaseGeometry phase_geometry(const Conv2dShape& s) {
  PhaseGeometry g;
  const int64_t OH = s.out_h(), OW = s.out_w();
  g.Wg = OW + (s.S - 1) * s.dil_w / s.stride_w;
  // One row more than the taps reach: the dropped columns of the last grid row run past it.
  g.Hq = OH + (s.R - 1) * s.dil_h / s.stride_h + 1;
  g.plane = g.Hq * g.Wg;
  g.per_channel = s.stride_h * s.stride_w * g.plane;
  g.grid = OH * g.Wg;
  g.compact = g.Wg != OW;
  return g;
}

void build_phase_planes(const KernelTable& t, const Conv2dShape& s, const PhaseGeometry& g, const float* x,
                        int64_t channels, float* out, bool borders_filled, float pad) {
  // Only the phases some tap reads (a 1x1 stride-2 convolution reads one of four). Undilated,
  // tap `phase` itself reads phase `phase`, and no tap reads one past the window: a test, not a
  // walk over the taps per phase (Silero VAD's STFT, 256 taps at stride 128, spent 15 us of 25
  // in that walk).
  auto used = [](int64_t taps, int64_t dil, int64_t stride, int64_t phase) {
    if (dil == 1) return phase < taps;
    for (int64_t r = 0; r < taps; ++r)
      if (r * dil % stride == phase) return true;
    return false;
  };
  auto row_used = [&](int64_t a) { return used(s.R, s.dil_h, s.stride_h, a); };
  auto col_used = [&](int64_t b) { return used(s.S, s.dil_w, s.stride_w, b); };
  for (int64_t ch = 0; ch < channels; ++ch) {
    const float* src = x + ch * s.H * s.W;
    for (int64_t a = 0; a < s.stride_h; ++a)
      for (int64_t b = 0; b < s.stride_w; ++b) {
        if (!row_used(a) || !col_used(b)) continue;
        float* plane = out + ch * g.per_channel + (a * s.stride_w + b) * g.plane;
        // Columns j whose input column iw = j*sw + b - pad_left lies in [0, W).
        const int64_t j_lo = std::clamp<int64_t>((s.pad_left - b + s.stride_w - 1) / s.stride_w, 0, g.Wg);
        const int64_t j_hi = std::clamp<int64_t>((s.W + s.pad_left - b + s.stride_w - 1) / s.stride_w, j_lo, g.Wg);
        for (int64_t i = 0; i < g.Hq; ++i) {
          float* row = plane + i * g.Wg;
          const int64_t ih = i * s.stride_h + a - s.pad_top;
          if (ih < 0 || ih >= s.H) {
            if (!borders_filled) std::fill(row, row + g.Wg, pad);
            continue;
          }
          const float* in = src + ih * s.W;
          if (!borders_filled) std::fill(row, row + j_lo, pad);
          t.strided_copy(in + j_lo * s.stride_w + b - s.pad_left, s.stride_w, j_hi - j_lo, row + j_lo);
          if (!borders_filled) std::fill(row + j_hi, row + g.Wg, pad);
        }
      }
  }
}

}  // namespace kiln::kernels::detail

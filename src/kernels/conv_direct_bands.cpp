// The direct tactic's stems band by band (conv_direct.h, conv_direct_bands).
//
// Why: a padded planar input (mobilenet_v2's 3 x 224 x 224) went through the general schedule's
// padded copy, a parallel region of its own whose rows the threads split one way while the tiles
// after it split the output another, so each thread read part of the copy from the other core. Here
// each band copies just the input rows its windows reach (3 x 29 rows x 226 floats for 14 output
// rows at stride 2: 77 KiB, in L2) and convolves them at once on the same thread. In the models the
// gain shows where the output goes into bordered planes for the depthwise layer after it:
// efficientnet_b0's stem (SiLU) took 0.240-0.247 ms instead of 0.285-0.312 (kiln profile, two
// threads); mobilenet_v2's, into plain planes, 0.153-0.158 either way.
#include <algorithm>
#include <cstring>

#include "conv_direct.h"
#include "gemm_driver.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/parallel.h"
#include "line_scratch.h"

namespace kiln::kernels::detail {
namespace {

// The rows above (top) and below (bottom) the output in every plane of one image's padded output;
// the band calls write the columns beside their own rows.
void zero_border_rows(const Conv2dShape& s, float* yn, bool top, bool bottom) {
  const int64_t OH = s.out_h(), rows = OH + s.y_pad_top + s.y_pad_bottom;
  const int64_t row = (s.out_w() + s.y_pad_left + s.y_pad_right) * s.y_block;
  for (int64_t b = 0; b < s.K / s.y_block; ++b) {
    float* plane = yn + b * rows * row;
    if (top) std::fill(plane, plane + s.y_pad_top * row, 0.f);
    if (bottom) std::fill(plane + (s.y_pad_top + OH) * row, plane + rows * row, 0.f);
  }
}

// Bands a thread: enough pieces for the pool to even out a slow core, each band still several
// tiles' rows (mobilenet_v2's stem: 112 rows in 8 bands of 14 at two threads).
constexpr int64_t kBandsPerThread = kPiecesPerThread;

int64_t band_count(const Conv2dShape& s, int threads) {
  return std::min<int64_t>(s.out_h(), int64_t{threads} * kBandsPerThread);
}

// The shape of one band of `out_rows` output rows, read from its own unpadded copy of the input
// rows its windows reach and written into the whole output's planes (y_plane_rows); a padded output
// keeps its side borders, the band's caller zeroes the rows above and below.
Conv2dShape band_shape(const Conv2dShape& s, int64_t out_rows) {
  Conv2dShape band = s;
  band.N = 1;
  band.H = (out_rows - 1) * s.stride_h + (s.R - 1) * s.dil_h + 1;
  band.W = s.W + s.pad_left + s.pad_right;
  band.pad_top = band.pad_left = band.pad_bottom = band.pad_right = 0;
  band.y_pad_top = band.y_pad_bottom = 0;
  band.y_plane_rows = s.out_h() + s.y_pad_top + s.y_pad_bottom;
  return band;
}

}  // namespace

bool direct_bands_enabled = env_switch_on("KILN_DIRECT_BANDS");

bool direct_bands_apply(const Conv2dShape& s, const Epilogue& epi, int threads) {
  // Windows up to 3x3 only: resnet18's 7x7 stem (64 channels, p64 tiles) took 0.87-0.94 ms in bands
  // against 0.76-0.81 ms after the copy (kiln profile, two threads), its windows' work outweighing
  // the copy and the bands' shorter tile rows costing more than they save.
  if (!(direct_bands_enabled && threads > 1 && s.padded() && !s.x_blocked && !s.x_padded && s.C % kConvBlock != 0 &&
        s.group == 1 && s.R * s.S <= 9 && s.y_blocked && !s.y_plane_rows && !epi.channel_means && !s.winograd &&
        s.out_h() >= 2 * threads))
    return false;
  if (!s.y_padded()) return true;
  // Into padded planes (the next layer reads them in place, lower/padded_layout.cpp): every band
  // height must have a plan whose tiles stay within a row, as the whole layer's does.
  const int64_t OH = s.out_h(), bands = band_count(s, threads);
  for (int64_t rows : {OH / bands, (OH + bands - 1) / bands})
    if (!conv_tactic_unsupported(ConvTactic::Direct, band_shape(s, rows)).empty()) return false;
  return true;
}

void conv_direct_bands(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                       const Epilogue& epi, int threads) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  const int64_t bands = band_count(s, threads), parts = s.N * bands;
  parallel_for(parts, threads, [&](int64_t p0, int64_t p1) {
    thread_local LineScratch own;
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t n = part / bands, b = part % bands;
      const int64_t oh0 = OH * b / bands, oh1 = OH * (b + 1) / bands;
      const Conv2dShape band = band_shape(s, oh1 - oh0);
      // Padded rows [r0, r0 + rows) of every channel: row r is input row r - pad_top.
      const int64_t r0 = oh0 * s.stride_h, rows = band.H, Wp = band.W;
      float* planes = own.floats(static_cast<size_t>(s.C * rows * Wp));
      for (int64_t c = 0; c < s.C; ++c)
        for (int64_t r = 0; r < rows; ++r) {
          float* dst = planes + (c * rows + r) * Wp;
          const int64_t h = r0 + r - s.pad_top;
          if (h < 0 || h >= s.H) {
            std::fill(dst, dst + Wp, 0.f);
            continue;
          }
          std::fill(dst, dst + s.pad_left, 0.f);
          std::memcpy(dst + s.pad_left, x + ((n * s.C + c) * s.H + h) * s.W, sizeof(float) * s.W);
          std::fill(dst + s.pad_left + s.W, dst + Wp, 0.f);
        }
      float* yn = y + n * s.y_image_floats();
      if (s.y_padded()) zero_border_rows(s, yn, b == 0, b == bands - 1);
      const int64_t row = (OW + s.y_pad_left + s.y_pad_right) * s.y_block;
      const int64_t at = (s.y_pad_top + oh0) * row;
      Epilogue e = epi;
      if (epi.residual) e.residual = epi.residual + n * s.K * OH * OW + at;  // never padded
      conv_direct(t, band, planes, packed_w, yn + at, e, nullptr, 1);
    }
  });
}

}  // namespace kiln::kernels::detail

// The direct tactic's RGB stems as pixel vectors: which layers, and the bands the threads share
// (conv_stem.h). The kernel is avx512/conv_stem_avx512.cpp.
#include "conv_stem.h"

#include <algorithm>

#include "conv_direct.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"
#include "line_scratch.h"

namespace kiln::kernels::detail {

bool direct_stem_enabled = env_switch_on("KILN_DIRECT_STEM");

bool direct_stem_applies(const KernelTable& t, const Conv2dShape& s, const Epilogue& e) {
  if (!direct_stem_enabled || t.isa != Isa::Avx512 || t.conv_shape.nr != 32) return false;  // 32-column panels
  if (s.C < 1 || s.C > kStemMaxChannels || s.group != 1 || s.R != 3 || s.S != 3 || s.stride_h != 2 ||
      s.stride_w != 2 || s.dil_h != 1 || s.dil_w != 1)
    return false;
  if (s.pad_top != 1 || s.pad_left != 1 || s.pad_bottom != 1 || s.pad_right != 1) return false;
  if (s.x_blocked || s.x_padded || s.x_nhwc || s.y_nhwc || !s.y_blocked || s.y_block != kConvBlock || s.y_padded() ||
      s.y_plane_rows)
    return false;
  if (s.p64 || s.winograd || s.K % kConvBlock != 0) return false;
  if (s.W % 2 != 0 || s.out_w() != s.W / 2 || s.out_w() % 16 != 0) return false;
  if (e.residual || e.channel_means) return false;
  return e.act == Act::None || e.act == Act::Relu || e.act == Act::Clip;
}

StemBand stem_band(const Conv2dShape& s, int64_t n, const float* x, const float* packed_w, const Epilogue& epi,
                   float* y, int64_t oh0, int64_t oh1) {
  StemBand sb;
  sb.x = x + n * s.C * s.H * s.W;
  sb.w = packed_w;
  sb.y = y;
  sb.C = s.C, sb.H = s.H, sb.W = s.W, sb.K = s.K, sb.OH = s.out_h(), sb.OW = s.out_w();
  sb.oh0 = oh0, sb.oh1 = oh1;
  sb.alpha = epi.alpha, sb.bias = epi.bias, sb.act = epi.act;
  sb.act_alpha = epi.act_alpha, sb.act_beta = epi.act_beta;
  return sb;
}

void conv_direct_stem(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                      const Epilogue& epi, int threads) {
  KILN_CHECK(direct_stem_applies(t, s, epi), "direct convolution: not a stem the pixel-vector kernel runs");
  if (threads <= 0) threads = default_threads();
  const int64_t OH = s.out_h(), OW = s.out_w();
  // kPiecesPerThread bands a thread, so that the pool can even out a slow core (mobilenet_v2: 8
  // bands of 14 rows at two threads), each band's input rows ~90 KiB of scratch, in L2.
  const int64_t bands = std::min<int64_t>(OH, int64_t{std::max(threads, 1)} * kPiecesPerThread);
  const bool fetch_out = write_prefetch_pays(threads);
  parallel_for(s.N * bands, threads, [&](int64_t p0, int64_t p1) {
    thread_local LineScratch own;
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t n = part / bands, b = part % bands;
      StemBand sb = stem_band(s, n, x, packed_w, epi, y + n * s.K * OH * OW, OH * b / bands, OH * (b + 1) / bands);
      sb.scratch = own.floats(stem_band_scratch_floats(s.C, s.W, sb.oh1 - sb.oh0));
      sb.fetch_for_write = fetch_out;
      stem_band_avx512(sb);
    }
  });
}

}  // namespace kiln::kernels::detail

// The RGB stem, the depthwise layer and the 1x1 projection band by band
// (stem_depthwise_project.h). The stem rows of a band go into the thread's band buffer through
// the stem's own band kernel (StemBand's y_rows / y_row0), the depthwise windows read them there
// and write the band's depthwise rows into a second buffer, and the direct tactic's 1x1 projects
// those into y's planes, as depthwise_project's bands do.
#include "kiln/kernels/stem_depthwise_project.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "conv_direct.h"
#include "conv_stem.h"
#include "depthwise_parts.h"
#include "depthwise_project_band.h"
#include "expand_kept_rows.h"
#include "gemm_driver.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/depthwise_project.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"
#include "line_scratch.h"

namespace kiln::kernels {
namespace {

Epilogue with_act(Act act) {
  Epilogue e;
  e.act = act;
  return e;
}

}  // namespace

namespace detail {
bool stem_bands_enabled = env_switch_on("KILN_STEM_BANDS");
}  // namespace detail

static_assert(kStemMaxInputChannels == detail::kStemMaxChannels);

std::string stem_depthwise_project_unsupported(const Conv2dShape& s, Act stem_act, const Conv2dShape& d,
                                               const Conv2dShape& p) {
  if (std::string why = conv_tactic_unsupported(ConvTactic::Direct, s); !why.empty()) return "the stem: " + why;
  if (!detail::direct_stem_applies(kernel_table(), s, with_act(stem_act)))
    return "the first convolution is not a stem the pixel-vector kernel runs (3x3, stride 2, padding 1, up to 4 "
           "planar input channels, 8-channel blocks out, AVX-512)";
  if (std::string why = depthwise_project_unsupported(d, p); !why.empty()) return why;
  if (d.x_block != kConvBlock || d.N != s.N || d.C != s.K || d.H != s.out_h() || d.W != s.out_w())
    return "the depthwise convolution does not read the stem's output in 8-channel blocks";
  return "";
}

bool stem_depthwise_project_bands(int threads) {
  return threads > 1 && detail::stem_bands_enabled && expand_bands_pay(threads);
}

size_t stem_depthwise_project_workspace_floats(const Conv2dShape& s, const Conv2dShape& d, const Conv2dShape& p,
                                               int threads) {
  const size_t mid = static_cast<size_t>(s.N * s.K * s.out_h() * s.out_w());
  return mid + kLineFloats + std::max(conv_workspace_floats(ConvTactic::Direct, s, threads),
                                      depthwise_project_workspace_floats(d, p, threads));
}

void stem_depthwise_project(const Conv2dShape& s, const Conv2dShape& d, const Conv2dShape& p, const float* x,
                            const float* ws, const Epilogue& epi_s, const float* wd, const Epilogue& epi_d,
                            const float* wp, const Epilogue& epi_p, float* y, float* workspace, int threads) {
  std::string bad = stem_depthwise_project_unsupported(s, epi_s.act, d, p);
  KILN_CHECK(bad.empty(), "stem + depthwise + projection: ", bad);
  KILN_CHECK(!epi_s.residual && !epi_s.channel_means && !epi_d.residual && !epi_d.channel_means &&
                 !epi_p.channel_means && !epi_s.warm,
             "stem + depthwise + projection: no residual or channel means on the stem or the depthwise "
             "convolution, no channel means on the projection");
  if (threads <= 0) threads = default_threads();
  if (!stem_depthwise_project_bands(threads) && workspace) {
    // The stem, then the pair (which picks its own bands or two calls).
    float* mid = workspace;
    float* rest = mid + static_cast<size_t>(s.N * s.K * s.out_h() * s.out_w()) + kLineFloats;
    conv2d(ConvTactic::Direct, s, x, ws, mid, epi_s, rest, threads);
    depthwise_project(d, p, mid, wd, epi_d, wp, epi_p, y, rest, threads);
    return;
  }
  const KernelTable& t = kernel_table();
  const int64_t OH = d.out_h(), OW = d.out_w(), lanes = t.simd_width;
  // kPiecesPerThread bands a thread (mobilenet_v2: 8 bands of 14 rows at two threads, ~0.55 MB of
  // buffers a thread), so that the pool can even out a slow core. Six a thread, or tapered
  // 4 : 3 : 2 : 1 (tapered_start), measured the same in the model with the cores far apart.
  const int64_t bands = std::min<int64_t>(OH, int64_t{threads} * kPiecesPerThread);
  const int64_t parts = d.N * bands;
  const DepthwisePlane whole = detail::depthwise_geometry(d);
  // Every band's stem rows sit in planes of the tallest band's input rows, so that the rows two
  // bands share stay where they are in each block's plane, moved up only.
  int64_t plane_rows = 0, most_out = 0;
  auto band_start = [&](int64_t b) { return OH * b / bands; };
  for (int64_t b = 0; b < bands; ++b) {
    plane_rows = std::max(plane_rows, detail::depthwise_band(whole, band_start(b), band_start(b + 1)).g.H);
    most_out = std::max(most_out, band_start(b + 1) - band_start(b));
  }
  const int64_t stem_blocks = s.K / kConvBlock;
  const int64_t x_plane = kConvBlock * plane_rows * d.W;  // floats between the stem rows' 8-channel blocks
  const int64_t row_floats = kConvBlock * d.W;             // one stem row of one block
  Epilogue e2 = epi_p;
  e2.bias_per_row = true;
  const uint64_t call = detail::next_banded_call();
  parallel_for(parts, std::min<int64_t>(threads, parts), [&](int64_t p0, int64_t p1) {
    // This thread's: the band's stem rows, the stem's column split, the depthwise rows and the
    // depthwise block's scratch. Kept between calls (their sizes do not change within one, so
    // the kept rows stay where they are).
    thread_local detail::LineScratch own_stem, own_split, own_mid, own_scratch;
    thread_local detail::KeptRows kept_rows;
    float* stem_rows = own_stem.floats(static_cast<size_t>(stem_blocks * x_plane));
    float* mid = own_mid.floats(static_cast<size_t>(d.K * most_out * OW));
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t n = part / bands, b = part % bands;
      const int64_t oh0 = band_start(b), oh1 = band_start(b + 1), rows_out = oh1 - oh0;
      const detail::DepthwiseBand bd = detail::depthwise_band(whole, oh0, oh1);
      const int64_t r0 = bd.x_offset / d.W, rows = bd.g.H;
      // The stem rows this band shares with the one this thread ran before it (a pool thread
      // runs its own parts in order), moved up to the top of each block's plane.
      const int64_t kept = kept_rows.take(call, n, stem_rows, r0, rows, stem_blocks, x_plane, row_floats);
      if (kept < rows) {
        detail::StemBand sb = detail::stem_band(s, n, x, ws, epi_s, stem_rows, r0 + kept, r0 + rows);
        sb.y_rows = plane_rows, sb.y_row0 = r0;
        sb.scratch = own_split.floats(detail::stem_band_scratch_floats(s.C, s.W, sb.oh1 - sb.oh0));
        detail::stem_band_avx512(sb);
      }
      // The band's depthwise rows from the stem rows, then their projection (depthwise_project's
      // band).
      float* scratch =
          own_scratch.floats(static_cast<size_t>(depthwise_block_scratch(bd.g, static_cast<int>(lanes)).floats));
      detail::depthwise_band_rows(t, d, bd, stem_rows, x_plane, wd, epi_d, scratch, mid);
      detail::project_band(p, n, oh0, rows_out, mid, wp, e2, y);
    }
  });
}

}  // namespace kiln::kernels

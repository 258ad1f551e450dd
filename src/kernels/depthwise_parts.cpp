// How a depthwise convolution is shared out over threads (depthwise_parts.h).
#include "depthwise_parts.h"

#include "conv_direct.h"
#include "depthwise_halves.h"

namespace kiln::kernels::detail {

bool depthwise_halves_enabled = env_switch_on("KILN_DW_HALVES");
// Auto: only where 512-bit FMAs are double-pumped (depthwise_halves.h).
bool depthwise_halves_s1_enabled = env_switch("KILN_DW_HALVES_S1", cpu_fma512_double_pumped());

DepthwisePlane depthwise_geometry(const Conv2dShape& s) {
  DepthwisePlane g;
  g.H = s.H, g.W = s.W, g.OH = s.out_h(), g.OW = s.out_w(), g.R = s.R, g.S = s.S;
  g.stride_h = s.stride_h, g.stride_w = s.stride_w, g.dil_h = s.dil_h, g.dil_w = s.dil_w;
  g.pad_top = s.pad_top, g.pad_left = s.pad_left;
  return g;
}

// The epilogue of the output channels from c on (one with a Scalar bias, a block with PerRow):
// epi's scale and activation, the residual from `res_offset` with rows `ldr` apart.
TileEpilogue depthwise_epilogue(const Epilogue& epi, int64_t c, TileEpilogue::Bias bias_mode, int64_t res_offset,
                                int64_t ldr) {
  TileEpilogue te;
  te.alpha = epi.alpha;
  if (epi.bias) te.bias = epi.bias + c, te.bias_mode = bias_mode;
  if (epi.residual) te.residual = epi.residual + res_offset, te.ldr = ldr;
  te.act = epi.act, te.act_alpha = epi.act_alpha, te.act_beta = epi.act_beta;
  return te;
}

namespace {
constexpr int64_t kDepthwisePartsPerThread = 4, kMinBandRows = 16;
// Input rows per thread from which planes whose output is too short for two kMinBandRows bands
// are still cut into one band per thread: a stride-2 layer from 56 rows to 28 (mobilenet_v2's
// 144 channels, efficientnet_b0's 5x5) read half of its 1.8 MB input from the other core's
// cache when each thread took whole planes. Paired in process at 2 threads (Xeon 5th gen, 40
// pairs): those layers 0.695 and 0.813, the models 0.992 and 0.981. Planes of 28 input rows or
// fewer keep whole planes: bands there measured 0.94-1.09 (28 -> 28), 1.24-1.43 (14 rows) and
// 1.9 (7 rows), their halo and per-band set-up costing more than the locality gains.
constexpr int64_t kMinBandInputRows = 28;
}  // namespace

DepthwiseSplit depthwise_split(const Conv2dShape& s, int threads, int64_t units) {
  DepthwiseSplit d;
  if (threads <= 1) return d;
  const int64_t target = threads * kDepthwisePartsPerThread;
  d.bands = std::clamp<int64_t>(s.out_h() / kMinBandRows, 1, target);
  // Whole bands per thread: thread t then computes the t-th share of the rows, whose input rows
  // the convolution before it wrote on that thread. 3 bands on 2 threads (mobilenet_v2's
  // 112 -> 56) gave one band's channels half to each thread, so a sixth of the input came from
  // the other core: mobilenet_v2 0.989, efficientnet_b0 0.992 at 2 threads with 2 (paired).
  if (d.bands > threads) d.bands -= d.bands % threads;
  if (d.bands == 1 && s.H >= kMinBandInputRows * threads) d.bands = threads;
  d.groups = std::min(units, (target + d.bands - 1) / d.bands);
  return d;
}

bool depthwise_never_bands(const Conv2dShape& s) {
  return s.out_h() / kMinBandRows <= 1 && s.H < 2 * kMinBandInputRows;  // two threads at least
}

DepthwiseBand depthwise_band(const DepthwisePlane& whole, int64_t oh0, int64_t oh1) {
  DepthwiseBand b;
  b.g = whole;
  const int64_t ih_lo = oh0 * whole.stride_h - whole.pad_top;
  const int64_t ih_hi = (oh1 - 1) * whole.stride_h - whole.pad_top + (whole.R - 1) * whole.dil_h + 1;
  const int64_t lo = std::clamp<int64_t>(ih_lo, 0, whole.H), hi = std::clamp<int64_t>(ih_hi, lo, whole.H);
  b.g.H = hi - lo;
  b.g.OH = oh1 - oh0;
  b.g.pad_top = lo - ih_lo;  // rows of the band's window above the input
  b.x_offset = lo * whole.W;
  b.out_offset = oh0 * whole.OW;
  return b;
}

int64_t depthwise_slot(const Conv2dShape& s, const DepthwiseSplit& d, int lanes, bool blocked) {
  const DepthwisePlane g = depthwise_geometry(s);
  int64_t most = 0;
  for (int64_t b = 0; b < d.bands; ++b) {
    const DepthwisePlane band = depthwise_band(g, g.OH * b / d.bands, g.OH * (b + 1) / d.bands).g;
    most = std::max(most, blocked ? depthwise_block_scratch(band, lanes).floats + 16 : depthwise_padded(band, lanes).floats);
  }
  return most;
}

void fill_block_padding(const DepthwisePlane& g, const DepthwiseBlockScratch& sb, int64_t lanes, float value,
                        float* plane) {
  const int64_t row = sb.Wp * lanes;
  std::fill(plane, plane + g.pad_top * row, value);
  std::fill(plane + (g.pad_top + g.H) * row, plane + sb.Hp * row, value);
  for (int64_t h = g.pad_top; h < g.pad_top + g.H; ++h) {
    float* r = plane + h * row;
    std::fill(r, r + g.pad_left * lanes, value);
    std::fill(r + (g.pad_left + g.W) * lanes, r + row, value);
  }
}

}  // namespace kiln::kernels::detail

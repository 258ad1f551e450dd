// The direct tactic on narrow images, one output row a tile, the padding's taps skipped
// (conv_direct.h, conv_direct_edge_rows).
//
// Why: the general schedule reads a zero-padded copy of the input and a tile's pixels share its K
// loop, so only whole window rows in the top or bottom padding are skipped (row classes); every
// pixel in the first or last column still multiplies a padding zero for a third of its taps. On
// digits_cnn's 16 -> 32 3x3 layer over 8x8 images the pixels of an output column ran 1056 of
// their 1152 K steps, where 968 a column are needed on average (704 in the first and last
// columns): ORT's NCHWc kernel skips them, and with both near the FMA peak ORT's layer
// took 0.92x kiln's (1.777 against 1.893 ms, `kiln profile --vs ort`, one thread, Zen 4). Here a
// tile is a whole output row (KernelTable::conv_edge_row), so the pixels that a window column
// leaves in the padding are known per segment and skip it; and the input is read in place, so
// there is no padded copy (nor its parallel region per image) either.
//
// Numerics: a skipped tap is an FMA of a padding zero, exact (x + 0 * w == x for finite w), and
// the other taps run in the general schedule's K order from zero, with its epilogue: the outputs
// are the general schedule's bit for bit (Conv.EdgeRowsEqualTheGeneralScheduleBitForBit).
#include <algorithm>
#include <vector>

#include "conv_direct.h"
#include "gemm_driver.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::detail {
namespace {

// The segments of output row class `cls` (0: a middle row, 1: the top row, 2: the bottom one;
// 3: an image of one row, both) over K order (kh, kw, channel), and the K step they start at.
struct RowClass {
  std::vector<ConvEdgeSegment> seg;
  int64_t first_step = 0;
};

RowClass row_class(const Conv2dShape& s, int cls) {
  const int64_t B = s.x_block, plane = s.H * s.W * B, row = s.W * B;
  const int64_t kh0 = (cls & 1) ? 1 : 0, kh1 = (cls & 2) ? 2 : 3;
  RowClass rc;
  rc.first_step = kh0 * s.S * s.C;
  for (int64_t kh = kh0; kh < kh1; ++kh)
    for (int64_t kw = 0; kw < 3; ++kw)
      for (int64_t cb = 0; cb < s.C / B; ++cb) {
        ConvEdgeSegment g;
        g.skip = kw == 0 ? 1 : kw == 2 ? 2 : 0;
        // Output pixel ow reads input column ow + kw - 1; the first computed pixel is 1 for
        // the left column (skip 1), else 0.
        const int64_t first_col = (kw == 0 ? 1 : 0) + kw - 1;
        g.offset = cb * plane + (kh - 1) * row + first_col * B;
        g.steps = B;
        rc.seg.push_back(g);
      }
  return rc;
}

}  // namespace

bool direct_edge_rows_enabled = env_switch_on("KILN_DIRECT_EDGE_ROWS");

bool direct_edge_rows_apply(const KernelTable& t, const Conv2dShape& s, const Epilogue& epi) {
  if (!direct_edge_rows_enabled || s.winograd || s.p64 || s.group != 1) return false;
  if (s.R != 3 || s.S != 3 || s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 || s.dil_w != 1) return false;
  if (s.pad_top != 1 || s.pad_left != 1 || s.pad_bottom != 1 || s.pad_right != 1) return false;
  if (!s.x_blocked || s.x_padded || s.x_nhwc || s.C % s.x_block != 0) return false;
  if (!s.y_blocked || s.y_padded() || s.y_plane_rows || s.y_nhwc || s.K % s.y_block != 0) return false;
  // One K block (kDirectKc) holds the whole window: the general schedule then sums every tap in
  // one run from zero, as the edge rows do.
  if (s.W < 2 || s.W > 16 || s.C * 9 > kDirectKc) return false;
  if (epi.channel_means || !ConvTileOut::fused_act(epi.act)) return false;
  const int slot = s.x_block == kConvBlock ? 0 : s.x_block == kConvBlockWide ? 1 : -1;
  return slot >= 0 && t.conv_edge_row[slot][s.W - 1] != nullptr;
}

void conv_direct_edge_rows(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w,
                           float* y, const Epilogue& epi, int threads) {
  const int64_t H = s.H, W = s.W, OHW = H * W, KK = s.C * 9, NR = t.conv_shape.nr;
  const int64_t B = s.x_block, bo = s.y_block, panels = ceil_div(s.K, NR);
  const auto kernel = t.conv_edge_row[B == kConvBlock ? 0 : 1][W - 1];
  // The row classes this height has (a one-row image is top and bottom at once).
  RowClass classes[4];
  for (int cls = 0; cls < 4; ++cls)
    if (H == 1 ? cls == 3 : cls < 3) classes[cls] = row_class(s, cls);
  auto class_of = [&](int64_t oh) -> int {
    if (H == 1) return 3;
    return oh == 0 ? 1 : oh == H - 1 ? 2 : 0;
  };
  threads = gemm_threads(s.N * OHW, s.K, KK, false, threads);
  // Items: output rows of every image, each over every panel (a panel's weights, KK x NR
  // floats, stay in L1 across a thread's rows: 18 KiB for digits_cnn's 16 -> 32).
  parallel_for(s.N * H, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / H, oh = i % H;
      const RowClass& rc = classes[class_of(oh)];
      const float* a = x + n * s.x_image_floats() + oh * W * B;
      float* yn = y + n * s.y_image_floats();
      for (int64_t u = 0; u < panels; ++u) {
        const int64_t k0 = u * NR;
        const int ncols = static_cast<int>(std::min(NR, s.K - k0));
        ConvTileOut o;
        o.dst = yn + k0 * OHW + oh * W * bo;
        o.block_stride = bo * OHW, o.block = bo;
        if (epi.bias) o.bias = epi.bias + k0;
        if (epi.residual) o.residual = epi.residual + n * s.K * OHW + k0 * OHW + oh * W * bo;
        o.alpha = epi.alpha, o.act = epi.act, o.act_alpha = epi.act_alpha, o.act_beta = epi.act_beta;
        kernel(rc.seg.data(), static_cast<int>(rc.seg.size()), a, packed_w + u * KK * NR + rc.first_step * NR, o,
               ncols);
      }
    }
  });
}

}  // namespace kiln::kernels::detail

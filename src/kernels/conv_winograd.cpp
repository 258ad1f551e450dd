#include "conv_winograd.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kiln/ir/error.h"
#include "gemm_driver.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/parallel.h"
#include "line_scratch.h"

namespace kiln::kernels::detail {
namespace {

constexpr int kPositions = 16;  // the 4x4 transformed tile
// Tiles per GEMM block: their V and M (16 x tiles x (C + K) floats) stay in L2 while the 16
// products run, beside the layer's input and output rows. One Xeon 5th gen core: alone, 48-96
// tiles of 64 or 128 channels ran 0.62-0.70 of the direct tactic's time, 192 tiles 0.75;
// inside resnet18 (in-process pairs against the direct tactic) blocks of 28, 56 and 96 tiles
// ran the model in 0.89, 0.80 and 0.82 of its time.
constexpr int64_t kBlockTiles = 56;
// Output sizes below this lose to the direct tactic: 7x7 pads to 8x8 (4x4 tiles), 0.96 of its
// time in the same prototype, against 0.58-0.70 at 14x14 and up.
constexpr int64_t kMinOutput = 14;

struct Geometry {
  int64_t th, tw, rows_per_block, blocks;  // tile rows and columns; a block's tile rows; blocks an image
  // Blocks cut at tiles rather than whole tile rows: when an image is cut only to give each
  // thread a block and its tile rows do not share out evenly (14x14: 7 rows, 4 + 3 on two
  // threads, 28 and 21 tiles), each block takes an even share of the tiles, cut at multiples
  // of the GEMM's mr rows (24 + 25). 256 -> 256 at 14x14 alone, two threads, in-process
  // pairs: 0.85-0.97 of the time; inside resnet18 its three such layers 0.96-0.99, the models
  // (resnet18, resnet50) even within the noise.
  bool by_tiles = false;
  int64_t mr = 1;
  // Block blk's tiles [first, second).
  std::pair<int64_t, int64_t> tiles(int64_t blk) const {
    const int64_t total = th * tw;
    if (!by_tiles) return {blk * rows_per_block * tw, std::min(th, (blk + 1) * rows_per_block) * tw};
    auto cut = [&](int64_t k) { return k >= blocks ? total : std::min(total, (total * k / blocks + mr / 2) / mr * mr); };
    return {cut(blk), cut(blk + 1)};
  }
  // The most tiles a block takes (its V and M are laid out for that many).
  int64_t max_tiles() const {
    int64_t most = 0;
    for (int64_t b = 0; b < blocks; ++b) most = std::max(most, tiles(b).second - tiles(b).first);
    return most;
  }
};

Geometry geometry(const Conv2dShape& s, int threads, int64_t mr) {
  Geometry g;
  g.th = (s.out_h() + 1) / 2, g.tw = (s.out_w() + 1) / 2;
  // Whole tile rows a block (their output rows get the epilogue together); enough blocks for
  // every thread when the batch alone does not give them one.
  const int64_t need = s.N < threads ? (threads + s.N - 1) / s.N : 1;
  const int64_t blocks = std::min(g.th, std::max<int64_t>(need, (g.th * g.tw + kBlockTiles - 1) / kBlockTiles));
  const int64_t r0 = (g.th + blocks - 1) / blocks;
  // Within two rows of that, the nearest count of rows whose tiles fill the GEMM's mr-row tiles
  // exactly, when a shorter last block stays a small part of the image: a block's rows past its
  // whole tiles cost a packed copy of A and two half tiles (14% of a 56-tile block's time).
  // One core: 56x56 in blocks of 84 tiles 0.916 of the time of 56 tiles, 28x28 in 42 instead
  // of 56 0.946; two cores 0.915 / 0.928; 14x14 in 42 + 7 instead of 49 1.15 (not taken).
  auto fills = [&](int64_t r) {
    if (r < 1 || r > g.th || (r * g.tw) % mr != 0) return false;
    const int64_t full = g.th / r, part = g.th % r != 0;
    return full >= (part ? 4 : 1) && full + part >= need;
  };
  g.rows_per_block = r0;
  for (int64_t d = 0, found = 0; d <= 2 && !found; ++d)
    for (const int64_t r : {r0 + d, r0 - d})
      if (!found && fills(r)) g.rows_per_block = r, found = 1;
  g.blocks = (g.th + g.rows_per_block - 1) / g.rows_per_block;
  g.mr = mr;
  g.by_tiles = need > 1 && g.blocks == need && g.th % g.blocks != 0 && g.th * g.tw >= g.blocks * mr;
  return g;
}

}  // namespace

std::string winograd_unsupported(const KernelTable& t, const Conv2dShape& s) {
  if (t.isa != Isa::Avx512) return "Winograd tiles need AVX-512 (16-channel vectors)";
  if (s.group != 1) return "grouped";
  if (s.R != 3 || s.S != 3) return "not a 3x3 window";
  if (s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 || s.dil_w != 1) return "strided or dilated";
  if (s.pad_top != 1 || s.pad_left != 1 || s.pad_bottom != 1 || s.pad_right != 1) return "padding other than 1";
  if (!s.x_blocked || !s.y_blocked) return "input or output not channel-blocked";
  for (const int64_t b : {s.x_block, s.y_block})
    if (b != kConvBlock && b != kConvBlockWide) return "channel blocks of " + std::to_string(b) + " (8 or 16)";
  if (s.C % kConvBlockWide != 0 || s.K % kConvBlockWide != 0) return "channels not a multiple of 16";
  if (s.out_h() < kMinOutput || s.out_w() < kMinOutput)
    return "output under " + std::to_string(kMinOutput) + "x" + std::to_string(kMinOutput) +
           " (4x4 tiles pad it: the direct tactic is faster)";
  if (s.y_padded() && (s.y_pad_top < 0 || s.y_pad_left < 0)) return "negative output padding";
  return "";
}

size_t winograd_packed_weight_floats(const KernelTable& t, const Conv2dShape& s) {
  return kPositions * packed_b_floats_on(t, s.C, s.K);
}

void winograd_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed) {
  const int64_t C = s.C, K = s.K;
  // U_ξ = (G g Gᵀ)_ξ as a C x K matrix per position, G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1].
  std::vector<float> u(static_cast<size_t>(kPositions * C * K));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (k * C + c) * 9;
      float gg[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        gg[0][j] = g[j];
        gg[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        gg[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        gg[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; ++i) {
        const float row[4] = {gg[i][0], 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]),
                              0.5f * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
        for (int j = 0; j < 4; ++j) u[static_cast<size_t>((i * 4 + j) * C + c) * K + k] = row[j];
      }
    }
  const size_t per = packed_b_floats_on(t, C, K);
  for (int xi = 0; xi < kPositions; ++xi)
    pack_b_on(t, u.data() + static_cast<size_t>(xi) * C * K, K, false, C, K, packed + xi * per);
}

void winograd_conv(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                   const Epilogue& epi, int threads) {
  const std::string bad = winograd_unsupported(t, s);
  KILN_CHECK(bad.empty(), "Winograd convolution: ", bad);
  const int64_t C = s.C, K = s.K, OH = s.out_h(), OW = s.out_w(), B = s.y_block;
  const Geometry geo = geometry(s, threads, t.gemm.mr);
  const int64_t block_tiles = geo.max_tiles();
  const size_t per = packed_b_floats_on(t, C, K);
  const int64_t xph = s.x_padded ? s.H + s.pad_top + s.pad_bottom : s.H;
  const int64_t xpw = s.x_padded ? s.W + s.pad_left + s.pad_right : s.W;
  const int64_t yph = OH + s.y_pad_top + s.y_pad_bottom, ypw = OW + s.y_pad_left + s.y_pad_right;
  // The epilogue in the output transform's registers; activations other than these (Silu, ...)
  // over each stored row afterwards.
  const bool act_in_regs = epi.act == Act::None || epi.act == Act::Relu || epi.act == Act::Clip ||
                           epi.act == Act::LeakyRelu;
  KILN_CHECK(!epi.channel_means, "Winograd convolution: channel means are not computed on this path");
  auto unit = [&](int64_t u) {
    const int64_t n = u / geo.blocks, blk = u % geo.blocks;
    const auto [t0, t1] = geo.tiles(blk);
    const int64_t count = t1 - t0;
    if (count <= 0) return;
    // This thread's V and M: 16 positions x the block's tiles x (C + K), on cache lines.
    thread_local LineScratch scratch;
    float* V = scratch.floats(static_cast<size_t>(kPositions * block_tiles * (C + K)));
    float* M = V + kPositions * block_tiles * C;
    const WinogradInput in{x + n * s.x_image_floats(), s.x_block, C / 16, xph, xpw, s.x_padded ? 0 : -1,
                           s.x_padded ? 0 : -1};
    winograd_input_avx512(in, geo.tw, t0, count, V, block_tiles * C);
    // Each product's last strip fetches the next one's first weight panel into L2, as its other
    // strips fetch their next panel (without it every position began on a panel from L3 or DRAM).
    // resnet50, in-process pairs (Zen 5): its Winograd layers 0.945-0.99 of the time at one
    // thread, the model 0.993 at one thread and 0.991 at two.
    for (int xi = 0; xi < kPositions; ++xi)
      gemm_packed_b_then(t, count, K, C, V + xi * block_tiles * C, C, packed_w + xi * per, M + xi * block_tiles * K, K,
                         Epilogue{}, 1, xi + 1 < kPositions ? packed_w + (xi + 1) * per : nullptr);
    float* yn = y + n * s.y_image_floats();
    WinogradOutput out{yn, B, K / 16, yph, ypw, s.y_pad_top, s.y_pad_left, OH, OW};
    out.alpha = epi.alpha, out.bias = epi.bias;
    // A residual has the output's layout (never padded planes: lower/padded_layout.cpp).
    out.residual = epi.residual ? epi.residual + n * K * OH * OW : nullptr;
    if (act_in_regs) out.act = epi.act, out.act_alpha = epi.act_alpha, out.act_beta = epi.act_beta;
    winograd_output_avx512(out, geo.tw, t0, count, M, block_tiles * K);
    // The block's output rows, channel block by channel block: the padded planes' border zeros
    // (a row's left and right by the block that holds its first tile), and an activation the
    // transform does not apply over the pixels this block wrote (a pixels x B matrix a row).
    for (int64_t kb = 0; kb < K / B; ++kb) {
      float* plane = yn + kb * yph * ypw * B;
      if (s.y_padded()) {
        if (t0 == 0) std::fill(plane, plane + s.y_pad_top * ypw * B, 0.f);
        if (t1 == geo.th * geo.tw) std::fill(plane + (s.y_pad_top + OH) * ypw * B, plane + yph * ypw * B, 0.f);
      }
      for (int64_t ty = t0 / geo.tw; ty * geo.tw < t1; ++ty) {
        const int64_t tx0 = std::max(t0, ty * geo.tw) - ty * geo.tw, tx1 = std::min(t1, (ty + 1) * geo.tw) - ty * geo.tw;
        const int64_t ox0 = 2 * tx0, ox1 = std::min(OW, 2 * tx1);
        for (int64_t oy = 2 * ty; oy < std::min(OH, 2 * ty + 2); ++oy) {
          float* line = plane + (s.y_pad_top + oy) * ypw * B;
          if (s.y_padded() && tx0 == 0) {
            std::fill(line, line + s.y_pad_left * B, 0.f);
            std::fill(line + (s.y_pad_left + OW) * B, line + ypw * B, 0.f);
          }
          if (act_in_regs) continue;
          TileEpilogue te;
          te.act = epi.act, te.act_alpha = epi.act_alpha, te.act_beta = epi.act_beta;
          t.epilogue_tile(line + (s.y_pad_left + ox0) * B, B, ox1 - ox0, B, te);
        }
      }
    }
  };
  const int64_t units = s.N * geo.blocks;
  parallel_for(units, std::min<int64_t>(threads, units), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) unit(u);
  });
}

}  // namespace kiln::kernels::detail

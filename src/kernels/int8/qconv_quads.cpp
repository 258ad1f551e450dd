// INT8 convolution reading its activations in place, as *channel quads*: when each group's
// channel count is a multiple of 4, the input is copied once into phase planes (see qconv.cpp)
// whose positions hold 4 consecutive channels' bytes together —
//   quad plane (c4, ph, pw)[i * Wq + j][q] = the padded input of channel 4 c4 + q at row
//   i * stride_h + ph, column j * stride_w + pw —
// which is the cols operand's own layout: with the GEMM's k ordered (c4, kh, kw, q), 4-k group
// (c4, kh, kw) of output columns j0 .. j0 + nr - 1 is the nr * 4 contiguous bytes at the tap's
// offset plus j0 * 4. The micro-kernel reads them there (tile_s8u8_gather), so a 3x3
// convolution copies its input once instead of packing it nine times (im2col). The weights are
// packed once in the same k order; the zero-point compensation (a sum over all k) does not change.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kiln/kernels/parallel.h"
#include "qconv_internal.h"

namespace kiln::kernels::int8::detail {
namespace {

struct QuadGeometry {
  int64_t P, Cg, C4, Mg, taps, kgroups, Hq, Wq, N, phases;
  explicit QuadGeometry(const Conv2dShape& s)
      : P(s.out_h() * s.out_w()), Cg(s.C / s.group), C4(Cg / 4), Mg(s.K / s.group), taps(s.R * s.S),
        kgroups(C4 * taps), Hq(ceil_div(s.H + s.pad_top + s.pad_bottom, s.stride_h)), Wq(row_width(s)),
        N((s.out_h() - 1) * Wq + s.out_w()), phases(s.stride_h * s.stride_w) {}
  // A row's width in the planes. At stride 1 the right padding is shared with the next row's
  // left padding: a row is pad_left pad columns, W inputs, then only the pad columns that the
  // rightmost taps read beyond those the next row starts with (3x3, pad 1: W + 1, not W + 2).
  // The GEMM columns are the grid's, so a narrower grid is less wasted work: 7x7 images 55
  // columns for 49 outputs instead of 61, 14x14 209 for 196 instead of 222. The last row's
  // overreach lands on the next plane's left pad columns, or the workspace's slack.
  static int64_t row_width(const Conv2dShape& s) {
    if (s.stride_w != 1) return ceil_div(s.W + s.pad_left + s.pad_right, s.stride_w);
    const int64_t past_end = std::max<int64_t>(0, s.out_w() - 1 + (s.S - 1) * s.dil_w - s.pad_left - (s.W - 1));
    return s.W + std::max(s.pad_left, past_end);
  }
  int64_t planes_bytes() const { return C4 * phases * Hq * Wq * 4; }
  // Byte offset of group (c4, kh, kw)'s column 0 in the quad planes.
  int64_t group_offset(const Conv2dShape& s, int64_t c4, int64_t kh, int64_t kw) const {
    const int64_t dh = kh * s.dil_h, dw = kw * s.dil_w;
    const int64_t plane = (c4 * s.stride_h + dh % s.stride_h) * s.stride_w + dw % s.stride_w;
    return (plane * Hq * Wq + dh / s.stride_h * Wq + dw / s.stride_w) * 4;
  }
};

// Workspace: [quad planes][slack: the last column window reads up to nr positions past the
// planes' end, into columns the epilogue drops][group offsets]
struct QuadLayout {
  int64_t planes, slack, offsets;
  QuadLayout(const QKernels& k, const QuadGeometry& g)
      : planes(round_up(g.planes_bytes(), 64)), slack(round_up(k.nr * 4, 64)), offsets(round_up(g.kgroups * 8, 64)) {}
  int64_t total() const { return planes + slack + offsets; }
};

// dst[j * 4 + q] = r[q][j] ^ flip for j < n: byte-interleave rows 0/1 and 2/3, then
// 16-bit-interleave the pairs, 16 positions at a time (the last 16 again, overlapping, for a
// ragged end).
void interleave_quad(const uint8_t* const r[4], int64_t n, uint8_t flip, uint8_t* dst) {
  int64_t j = 0;
#if defined(__SSE2__)
  if (n >= 16) {
    const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
    for (int64_t j0 = 0;; j0 = std::min(j0 + 16, n - 16)) {
      const __m128i a = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + j0)), f);
      const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + j0)), f);
      const __m128i c = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + j0)), f);
      const __m128i d = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + j0)), f);
      const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
      const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
      uint8_t* o = dst + j0 * 4;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm_unpacklo_epi16(ab_lo, cd_lo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16), _mm_unpackhi_epi16(ab_lo, cd_lo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 32), _mm_unpacklo_epi16(ab_hi, cd_hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 48), _mm_unpackhi_epi16(ab_hi, cd_hi));
      if (j0 == n - 16) break;
    }
    j = n;
  }
#endif
  for (; j < n; ++j)
    for (int q = 0; q < 4; ++q) dst[j * 4 + q] = static_cast<uint8_t>(r[q][j] ^ flip);
}

// The group's quad planes that some tap reads. At stride 1 a row's inside columns are
// interleaved straight from the input; at larger strides through four phase rows first.
void fill_quad_planes(const Conv2dShape& s, const QuadGeometry& g, const uint8_t* x, uint8_t flip, uint8_t pad,
                      uint8_t* dst, int threads) {
  const std::vector<char> used_h = used_phases(s.stride_h, s.R, s.dil_h), used_w = used_phases(s.stride_w, s.S, s.dil_w);
  const int64_t plane = g.Hq * g.Wq * 4;
  parallel_for(g.C4 * g.phases, threads_for_work(static_cast<double>(g.planes_bytes()), threads), [&](int64_t b,
                                                                                                      int64_t e) {
    std::vector<uint8_t> rows(static_cast<size_t>(4 * g.Wq));
    for (int64_t cp = b; cp < e; ++cp) {
      const int64_t c4 = cp / g.phases, ph = cp % g.phases / s.stride_w, pw = cp % s.stride_w;
      if (!used_h[static_cast<size_t>(ph)] || !used_w[static_cast<size_t>(pw)]) continue;
      const PhaseColumns pc(s, g.Wq, pw);
      uint8_t* d = dst + cp * plane;
      for (int64_t i = 0; i < g.Hq; ++i, d += g.Wq * 4) {
        const int64_t ih = i * s.stride_h + ph - s.pad_top;
        if (ih < 0 || ih >= s.H) {
          std::memset(d, pad, static_cast<size_t>(g.Wq * 4));
          continue;
        }
        const uint8_t* r[4];
        for (int q = 0; q < 4; ++q) {
          const uint8_t* src = x + ((c4 * 4 + q) * s.H + ih) * s.W;
          if (s.stride_w == 1) {
            r[q] = src + pc.first + pc.j_lo;
          } else {
            fill_phase_row(src, pc, s.stride_w, flip, pad, g.Wq, rows.data() + q * g.Wq);
            r[q] = rows.data() + q * g.Wq;
          }
        }
        if (s.stride_w == 1) {
          std::memset(d, pad, static_cast<size_t>(pc.j_lo * 4));
          interleave_quad(r, pc.j_hi - pc.j_lo, flip, d + pc.j_lo * 4);
          std::memset(d + pc.j_hi * 4, pad, static_cast<size_t>((g.Wq - pc.j_hi) * 4));
        } else {
          interleave_quad(r, g.Wq, 0, d);
        }
      }
    }
  });
}

}  // namespace

// Only for stride-1 kernels wider than one tap: a 1x1 convolution packs each input byte once
// anyway, and reading quads in place costs it more (each group's bytes a whole plane apart, where
// a packed panel is contiguous) than the packing does. Measured on resnet50 (one thread): 1x1
// convolutions 10-40 % slower in place, 3x3 stride-1 ones 10-20 % faster, 3x3 stride-2 ones
// (four phase planes per quad) 3-20 % slower.
bool qconv_uses_quads(const QKernels& k, const Conv2dShape& s) {
  return k.tile_s8u8_gather != nullptr && (s.C / s.group) % 4 == 0 && s.R * s.S > 1 && s.stride_h == 1 &&
         s.stride_w == 1;
}

void qconv_pack_weight_quads(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed) {
  const QuadGeometry g(s);
  const int64_t Kc = g.Cg * g.taps;
  const size_t per_group = packed_rows_bytes(k, g.Mg, Kc);
  // k order (c4, tap, q): the quad planes' order.
  pack_reordered_weight(
      s, w, [&](int64_t c, int64_t t) { return (c / 4 * g.taps + t) * 4 + c % 4; },
      [&](const uint8_t* ordered, int64_t gi) { pack_rows(k, ordered, Kc, g.Mg, Kc, 0, packed + gi * per_group); });
}

int64_t qconv_quads_columns(const Conv2dShape& s) { return QuadGeometry(s).N; }

size_t qconv_workspace_bytes_quads(const QKernels& k, const Conv2dShape& s) {
  return static_cast<size_t>(QuadLayout(k, QuadGeometry(s)).total());
}

// Per image and group: fill the quad planes (one parallel pass), then the tiles. Split over
// threads by column windows or by row tiles, whichever balances better (split_by_panels); the
// weights stream once per chunk of windows (row tiles outer, the chunk's windows inner).
void qconv2d_quads(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                   const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  const QuadGeometry g(s);
  const QuadLayout l(k, g);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  uint8_t* planes = workspace;
  std::memset(planes + g.planes_bytes(), pad, static_cast<size_t>(l.planes + l.slack - g.planes_bytes()));
  int64_t* offsets = reinterpret_cast<int64_t*>(workspace + l.planes + l.slack);
  for (int64_t c4 = 0; c4 < g.C4; ++c4)
    for (int64_t t = 0; t < g.taps; ++t) offsets[c4 * g.taps + t] = g.group_offset(s, c4, t / s.S, t % s.S);
  const size_t w_per_group = packed_rows_bytes(k, g.Mg, g.kgroups * 4);
  const int64_t nt = ceil_div(g.N, k.nr), mt = ceil_div(g.Mg, k.mr);
  constexpr int64_t kChunkBytes = 256 << 10;  // the packed path's chunk (qconv.cpp), in cols bytes
  const int64_t chunk = std::clamp<int64_t>(kChunkBytes / (g.kgroups * k.nr * 4), 1, nt);
  const int work_threads = threads_for_work(static_cast<double>(g.Mg) * g.N * g.kgroups, threads);
  // On a tie, split the larger operand, so each thread streams only its share of it: the
  // columns on large maps, the weights on small ones (a 7x7 map's 55 columns, 512 channels).
  const bool by_windows = split_by_panels(k, g.N, mt, work_threads, g.N >= g.Mg);
  const int64_t slots = std::min<int64_t>(work_threads, by_windows ? nt : mt);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      fill_quad_planes(s, g, x + (n * s.C + gi * g.Cg) * s.H * s.W, flip, pad, planes, threads);
      const GroupOutput go = group_output(e, s, n, gi, g.Wq, y);
      const QEpilogue& eg = go.e;
      const bool fused = k.tile_s8u8_epilogue && (eg.grid_w == 0 || k.tile_epilogue_grid);
      const uint8_t* wg = packed_w + gi * w_per_group;
      parallel_for(slots, static_cast<int>(slots), [&](int64_t sb, int64_t se) {
        alignas(64) int32_t acc[16 * 64];  // mr * nr <= 16 * 64 for every table
        for (int64_t slot = sb; slot < se; ++slot) {
          const int64_t p_begin = by_windows ? nt * slot / slots : 0, p_end = by_windows ? nt * (slot + 1) / slots : nt;
          const int64_t t_begin = by_windows ? 0 : mt * slot / slots, t_end = by_windows ? mt : mt * (slot + 1) / slots;
          for (int64_t c0 = p_begin; c0 < p_end; c0 += chunk) {
            const int64_t c1 = std::min(p_end, c0 + chunk);
            for (int64_t t = t_begin; t < t_end; ++t) {
              const int rows_here = static_cast<int>(std::min<int64_t>(k.mr, g.Mg - t * k.mr));
              const uint8_t* wt = wg + t * g.kgroups * k.mr * 4;
              for (int64_t p = c0; p < c1; ++p) {
                const int cols_here = static_cast<int>(std::min<int64_t>(k.nr, g.N - p * k.nr));
                const uint8_t* cols = planes + p * k.nr * 4;
                if (fused) {
                  k.tile_s8u8_epilogue(g.kgroups, wt, cols, offsets, rows_here, cols_here, eg, t * k.mr, p * k.nr,
                                       go.y, g.P);
                  continue;
                }
                k.tile_s8u8_gather(g.kgroups, wt, cols, offsets, acc);
                epilogue_tile(k, acc, rows_here, t * k.mr, p * k.nr, cols_here, eg, go.y, g.P);
              }
            }
          }
        }
      });
    }
}

}  // namespace kiln::kernels::int8::detail

// INT8 convolution with the output pixels as the GEMM's rows ("pixels"): the input is copied
// once into a padded image whose positions hold all the group's channels together,
//   image[(i * Wp + j) * Cg + c] = the padded input of channel c at row i, column j,
// and the micro-kernel (QKernels::tile_u8s8_pixels) reads each output pixel's window in place:
// with the GEMM's k ordered (kh, kw, c), tap (kh, kw)'s channels are Cg contiguous bytes at the
// pixel's position plus the tap's offset, for any stride or dilation. The weights are the cols
// operand, packed once into panels of nr output channels.
//
// Why: the other paths put the pixels along the register tile's 16 (or 32) columns, and a small
// map wastes columns: a 7x7 image's 49 outputs fill 56 or 64, a 14x14 one's phase grid (209
// columns for 196 outputs) 216-224; the stride-2 grids waste more. Here the pixels fill rows of
// mr (5 or 6: 49 in 50, 196 in 200) and the channels, multiples of 16 in the models we run, fill
// the columns. The accumulators come out pixel-major; each tile is transposed into a
// channel-major buffer whose epilogue then runs over whole rows of pixels, the same
// k.epilogue as every path, so the bytes are the same.
//
// Pixel-major activations (Conv2dShape::x_nhwc / y_nhwc, lower/int8_nhwc_layout.cpp): an NHWC
// input is the image already (read in place when unpadded, else its rows copied inside the
// padding: copy_image); an NHWC output is written by QKernels::pixels_epilogue_strip straight
// from the registers, a pixel's channels one row (run_pixel_major_output), with no buffer.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kiln/kernels/parallel.h"
#include "qconv_internal.h"

namespace kiln::kernels::int8::detail {
namespace {

struct PixelGeometry {
  int64_t P, OW, Cg, Mg, taps, Hp, Wp;
  explicit PixelGeometry(const Conv2dShape& s)
      : P(s.out_h() * s.out_w()), OW(s.out_w()), Cg(s.C / s.group), Mg(s.K / s.group), taps(s.R * s.S),
        Hp(s.H + s.pad_top + s.pad_bottom), Wp(s.W + s.pad_left + s.pad_right) {}
  int64_t image_bytes() const { return Hp * Wp * Cg; }
  int64_t kc() const { return taps * Cg; }
  // Where output pixel p's window starts in the image.
  int64_t pixel_offset(const Conv2dShape& s, int64_t p) const {
    return ((p / OW) * s.stride_h * Wp + (p % OW) * s.stride_w) * Cg;
  }
  int64_t tap_offset(const Conv2dShape& s, int64_t kh, int64_t kw) const {
    return (kh * s.dil_h * Wp + kw * s.dil_w) * Cg;
  }
};

// Row tiles per work item: the item's accumulators wait in a channel-major buffer of
// nr x (kTilesPerItem * mr) int32 (20 KB for 16 x 5) for one epilogue call per channel.
constexpr int64_t kTilesPerItem = 64;

// A row of the channel-major accumulator buffer: a work item's pixels, and the 8 - mr lanes
// the last tile may write past them.
int64_t buffer_row(const QKernels& k) { return kTilesPerItem * k.mr + 8; }

// Workspace: [image][run offsets][pixel offsets]; each thread keeps its work item's
// channel-major accumulators (per_slot) in its own scratch (thread_scratch).
struct PixelLayout {
  int64_t image, offsets, pixels, per_slot;
  PixelLayout(const QKernels& k, const PixelGeometry& g, int64_t images = 1)
      : image(round_up(images * g.image_bytes(), 64)), offsets(round_up(g.taps * 8, 64)),
        pixels(round_up(images * g.P * 8, 64)), per_slot(round_up(k.nr * buffer_row(k) * 4, 64)) {}
  int64_t total() const { return image + offsets + pixels; }
};

#if defined(__SSE2__)
// out[j] (16 bytes) = byte j of in[0..15]: a 16 x 16 byte transpose, interleaving bytes, then
// 16-, 32- and 64-bit units.
void transpose16(__m128i (&v)[16]) {
  __m128i t[16];
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm_unpacklo_epi8(v[2 * i], v[2 * i + 1]);      // rows 2i, 2i+1 of columns 0-7
    t[i + 8] = _mm_unpackhi_epi8(v[2 * i], v[2 * i + 1]);  // columns 8-15
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      v[h * 8 + i] = _mm_unpacklo_epi16(t[h * 8 + 2 * i], t[h * 8 + 2 * i + 1]);      // rows 4i..4i+3, columns 8h + 0-3
      v[h * 8 + i + 4] = _mm_unpackhi_epi16(t[h * 8 + 2 * i], t[h * 8 + 2 * i + 1]);  // columns 8h + 4-7
    }
  // v[h * 8 + b * 4 + i]: rows 4i..4i+3 of the 4 columns starting at 8h + 4b.
  for (int hb = 0; hb < 4; ++hb)
    for (int i = 0; i < 2; ++i) {
      t[hb * 4 + i] = _mm_unpacklo_epi32(v[hb * 4 + 2 * i], v[hb * 4 + 2 * i + 1]);      // rows 8i..8i+7, 2 columns
      t[hb * 4 + i + 2] = _mm_unpackhi_epi32(v[hb * 4 + 2 * i], v[hb * 4 + 2 * i + 1]);  // the next 2 columns
    }
  // t[hb * 4 + c * 2 + i]: rows 8i..8i+7 of columns 4 hb + 2c, 4 hb + 2c + 1.
  for (int hb = 0; hb < 4; ++hb)
    for (int c = 0; c < 2; ++c) {
      v[hb * 4 + c * 2] = _mm_unpacklo_epi64(t[hb * 4 + c * 2], t[hb * 4 + c * 2 + 1]);
      v[hb * 4 + c * 2 + 1] = _mm_unpackhi_epi64(t[hb * 4 + c * 2], t[hb * 4 + c * 2 + 1]);
    }
}
#endif

#if defined(__x86_64__)
// 16 channels (rows c0.., HW apart, XOR f) of 32 pixels from q stored as 32 pixels' 16 bytes at
// dst[j] + c0: transpose16's steps on both 128-bit lanes at once (lane 0 pixels 0-15, lane 1
// pixels 16-31). Only the 256-bit tables, which all have AVX2, take the pixels path. The 32
// vectors spill either way; at 32 pixels per pass the spills carry twice the data.
__attribute__((target("avx2"))) void transpose_store32_avx2(const uint8_t* x, int64_t HW, int64_t q, int64_t c0,
                                                           uint8_t flip, uint8_t* const* dst) {
  const __m256i f = _mm256_set1_epi8(static_cast<char>(flip));
  __m256i v[16], t[16];
  for (int c = 0; c < 16; ++c)
    v[c] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + (c0 + c) * HW + q)), f);
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm256_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
    t[i + 8] = _mm256_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      v[h * 8 + i] = _mm256_unpacklo_epi16(t[h * 8 + 2 * i], t[h * 8 + 2 * i + 1]);
      v[h * 8 + i + 4] = _mm256_unpackhi_epi16(t[h * 8 + 2 * i], t[h * 8 + 2 * i + 1]);
    }
  for (int hb = 0; hb < 4; ++hb)
    for (int i = 0; i < 2; ++i) {
      t[hb * 4 + i] = _mm256_unpacklo_epi32(v[hb * 4 + 2 * i], v[hb * 4 + 2 * i + 1]);
      t[hb * 4 + i + 2] = _mm256_unpackhi_epi32(v[hb * 4 + 2 * i], v[hb * 4 + 2 * i + 1]);
    }
  for (int hb = 0; hb < 4; ++hb)
    for (int c = 0; c < 2; ++c) {
      v[hb * 4 + c * 2] = _mm256_unpacklo_epi64(t[hb * 4 + c * 2], t[hb * 4 + c * 2 + 1]);
      v[hb * 4 + c * 2 + 1] = _mm256_unpackhi_epi64(t[hb * 4 + c * 2], t[hb * 4 + c * 2 + 1]);
    }
  for (int j = 0; j < 16; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst[j] + c0), _mm256_castsi256_si128(v[j]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst[16 + j] + c0), _mm256_extracti128_si256(v[j], 1));
  }
}
#endif

// The group's image: `pad` on the border, x ^ flip inside. The input pixels are taken 32 at a
// time (then 16, then one) in their flat order (q = ih * W + iw, across row ends, so 7-wide
// maps are not scalar), 16 channels at a time, each transposed block stored pixel by pixel.
// The transposes spill (perf: stack stores and loads were the fill's hot spots); with AVX2's 32
// pixels per transpose the fill took 2.3-2.4 % of a 64-channel 3x3 layer at 56x56, with SSE2's
// 16 2.7 % (one thread).
void fill_image(const Conv2dShape& s, const PixelGeometry& g, const uint8_t* x, uint8_t flip, uint8_t pad, uint8_t* img,
                int threads) {
  const int64_t HW = s.H * s.W, row = g.Wp * g.Cg;
  for (int64_t i = 0; i < g.Hp; ++i) {
    const bool inside = i >= s.pad_top && i < s.pad_top + s.H;
    if (!inside) {
      std::memset(img + i * row, pad, static_cast<size_t>(row));
      continue;
    }
    std::memset(img + i * row, pad, static_cast<size_t>(s.pad_left * g.Cg));
    std::memset(img + i * row + (s.pad_left + s.W) * g.Cg, pad, static_cast<size_t>(s.pad_right * g.Cg));
  }
  // Threads split the pixels, not the channel blocks: a pixel's Cg bytes share cache lines, and
  // with the blocks split two threads wrote 16-byte pieces of the same lines (a 128-channel
  // stride-2 layer's fill took 3.6x the thread time at 2 threads that it took at 1; the layer ran
  // 391 -> 352 us; split by pixels 300).
  const int64_t blocks = g.Cg / 16, W = s.W, Cg = g.Cg, row_jump = (g.Wp - W) * Cg;
  const int64_t per_item = std::max<int64_t>(32, round_up(ceil_div(HW, 8 * std::max(threads, 1)), 32));
  const int64_t items = ceil_div(HW, per_item);
  parallel_for(items, threads_for_work(static_cast<double>(g.Cg) * HW, threads), [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t q0 = item * per_item, q1 = std::min(HW, q0 + per_item);
      // Block by block over the item's pixels: 16 input rows stream at a time (all the
      // channels per 32 pixels instead, Cg rows at once, ran resnet50 int8 1.2 % slower).
      // The last block: the channels past the 16-channel blocks, one byte at a time.
      for (int64_t cb = 0; cb <= blocks; ++cb) {
        const int64_t c0 = cb * 16, c1 = cb == blocks ? Cg : c0 + 16;
        if (c0 == c1) continue;
        // Where input pixel q's channels go, stepped along with q (locals: the byte stores would
        // otherwise make the compiler reload every shape field after each one).
        int64_t iw = q0 % W, q = q0;
        uint8_t* d = img + ((s.pad_top + q0 / W) * g.Wp + s.pad_left + iw) * Cg;
        auto next = [&] {
          d += Cg;
          if (++iw == W) iw = 0, d += row_jump;
        };
        if (cb < blocks) {
#if defined(__x86_64__)
          for (; q + 32 <= q1; q += 32) {
            uint8_t* dst[32];
            for (int j = 0; j < 32; ++j, next()) dst[j] = d;
            transpose_store32_avx2(x, HW, q, c0, flip, dst);
          }
#endif
#if defined(__SSE2__)
          const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
          for (; q + 16 <= q1; q += 16) {
            __m128i v[16];
            for (int c = 0; c < 16; ++c)
              v[c] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + (c0 + c) * HW + q)), f);
            transpose16(v);
            for (int j = 0; j < 16; ++j, next()) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + c0), v[j]);
          }
#endif
        }
        for (; q < q1; ++q, next())
          for (int64_t c = c0; c < c1; ++c) d[c] = static_cast<uint8_t>(x[c * HW + q] ^ flip);
      }
    }
  });
}

// The group's image from a pixel-major input (Conv2dShape::x_nhwc, group 1): each input row's
// W * C bytes are already the image row's interior, so the fill is a copy (XOR flip) plus the
// padding border.
void copy_image(const Conv2dShape& s, const PixelGeometry& g, const uint8_t* x, uint8_t flip, uint8_t pad, uint8_t* img,
                int threads) {
  const int64_t row = g.Wp * g.Cg, inner = s.W * g.Cg;
  parallel_for(g.Hp, threads_for_work(static_cast<double>(g.Hp) * row, threads), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint8_t* d = img + i * row;
      const int64_t ih = i - s.pad_top;
      if (ih < 0 || ih >= s.H) {
        std::memset(d, pad, static_cast<size_t>(row));
        continue;
      }
      std::memset(d, pad, static_cast<size_t>(s.pad_left * g.Cg));
      std::memset(d + s.pad_left * g.Cg + inner, pad, static_cast<size_t>(s.pad_right * g.Cg));
      const uint8_t* src = x + ih * inner;
      uint8_t* dst = d + s.pad_left * g.Cg;
      if (flip == 0) {
        std::memcpy(dst, src, static_cast<size_t>(inner));
        continue;
      }
      int64_t j = 0;
#if defined(__SSE2__)
      const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
      for (; j + 16 <= inner; j += 16)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                         _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j)), f));
#endif
      for (; j < inner; ++j) dst[j] = static_cast<uint8_t>(src[j] ^ flip);
    }
  });
}

}  // namespace

}  // namespace kiln::kernels::int8::detail

namespace kiln::kernels::int8 {
void planes_to_pixels(const uint8_t* x, int64_t N, int64_t C, int64_t H, int64_t W, uint8_t* y, int threads) {
  // An unpadded 1x1 convolution's image is the input pixel-major.
  Conv2dShape s;
  s.C = s.K = C, s.H = H, s.W = W;
  const detail::PixelGeometry g(s);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  for (int64_t n = 0; n < N; ++n) detail::fill_image(s, g, x + n * C * H * W, 0, 0, y + n * C * H * W, threads);
}

bool qconv_nhwc_supported(const QKernels& k, const Conv2dShape& s) {
  if (s.group != 1) return k.depthwise_nhwc != nullptr && s.group == s.C && s.C == s.K && qconv_is_depthwise(k, s);
  return k.tile_u8s8_pixels != nullptr && k.pixels_epilogue_strip != nullptr && s.C % 4 == 0;
}
}  // namespace kiln::kernels::int8

namespace kiln::kernels::int8::detail {

// The choice compares the share of each path's tiles that is wasted: the column-major paths
// compute their grid's columns in panels of nr (a panel at most half valid costs half) and round
// the output channels up to mr rows; this one rounds the pixels up to mr rows and the channels up
// to nr columns. Windows wider than one tap come here unless that wastes over 5 % more:
// resnet50's 3x3 convolutions took 0.75-0.88x the time of the other paths at stride 2, 0.85-0.86x
// on 7x7 and 14x14 maps, 0.94-0.98x on 28x28 and 56x56 (qconv_bench, AVX2's 7-bit kernels, one
// thread), while a grouped convolution with 4 output channels per group would compute 16 here.
// A 1x1 convolution reads its planes in place on the other path (no image to fill), with the
// epilogue fused into the tile; it comes here only when the other path's columns waste over 8 %
// more than the pixel rows do — a 7x7 map's 49 outputs in 56 columns, against 50 rows here
// (0.87-0.94x) — not at 14x14 (196 in 200 columns; 1.04-1.21x here), and never for its channels:
// mobilenet_v2's 16- and 32-channel outputs (20 and 35 rows there) took 1.3-1.9x here.
//
// AVX-512's 8 x 32 tile (kiln profile of resnet50, Zen 5, one thread, against the session's
// binary without it): the stride-2 3x3 layers 0.51 -> 0.37, 0.56 -> 0.34, 0.80 -> 0.46 ms, the
// 3x3s on 28x28 to 7x7 maps 3-22% faster, but the 56x56 ones 0.336 -> 0.39 ms (the channel quads
// read in place win on large maps) and 7x7 1x1s with more output than input channels (512 ->
// 2048: 0.23 -> 0.26 ms; 2048 -> 512 went 0.257 -> 0.215): there the buffered epilogue, over
// four times as many outputs, outweighs the wasted columns. Those two stay on the other paths.
// A strided 1x1 does not read its planes in place there (it fills a phase plane first): resnet50's
// 1024 -> 2048 stride-2 downsample onto 7x7 took 0.87x the time here at 1 and at 2 threads
// (qconv_bench, 5 paired rounds); the larger maps' (28x28, 14x14) stay on the column paths by the
// waste rule below (they ran 1.04-1.5x here).
bool qconv_uses_pixels(const QKernels& k, const Conv2dShape& s) {
  if (s.x_nhwc || s.y_nhwc) return true;  // qconv_nhwc_supported holds (the caller's contract)
  if (k.tile_u8s8_pixels == nullptr || (s.C / s.group) % 4 != 0) return false;
  const int64_t P = s.out_h() * s.out_w(), Mg = s.K / s.group, half = k.nr / 2;
  const bool in_place_1x1 = s.R * s.S == 1 && s.stride_h == 1 && s.stride_w == 1;
  if (k.nr > 16 && (P > 1024 || (in_place_1x1 && s.C / s.group < Mg))) return false;
  const int64_t N = qconv_uses_quads(k, s) ? qconv_quads_columns(s) : qconv_packed_columns(s);
  const int64_t rem = N % k.nr, cols_done = N - rem + (rem == 0 ? 0 : rem <= half ? half : k.nr);
  auto ratio = [](int64_t done, int64_t useful) { return static_cast<double>(done) / static_cast<double>(useful); };
  const double other_cols = ratio(cols_done, P), pixel_rows = ratio(round_up(P, k.mr), P);
  if (s.R * s.S == 1) return other_cols > 1.08 * pixel_rows;
  return ratio(round_up(Mg, k.nr), Mg) * pixel_rows <= 1.05 * ratio(round_up(Mg, k.mr), Mg) * other_cols;
}

size_t qconv_packed_weight_bytes_pixels(const QKernels& k, const Conv2dShape& s) {
  const PixelGeometry g(s);
  return static_cast<size_t>(s.group) * packed_cols_bytes(k, g.kc(), g.Mg);
}

void qconv_pack_weight_pixels(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed) {
  const PixelGeometry g(s);
  const int64_t Kc = g.kc();
  const size_t per_group = packed_cols_bytes(k, Kc, g.Mg);
  // k order (tap, c): the image's order.
  pack_reordered_weight(
      s, w, [&](int64_t c, int64_t t) { return t * g.Cg + c; },
      [&](const uint8_t* ordered, int64_t gi) { pack_cols(k, ordered, Kc, true, Kc, g.Mg, packed + gi * per_group); });
}

namespace {
// Work items are (channel panel, run of row tiles) pairs. Channel-panel-major, a thread's items
// share each weight panel while it is in cache, but every thread reads the whole image, half of
// it written by the other core just before. Run-major (pixel_major), each thread reads the image
// rows it filled itself (fill_image splits the pixels the same way) and every weight panel: the
// choice when the weights are no larger than the image. qconv_bench, 2 threads, Zen 5, us,
// panel- / run-major: 128 -> 128 3x3 stride 2 at 56x56 (image 430 KB, weights 147 KB) 355 /
// 282; 512 -> 512 at 7x7 (2.4 MB of weights) 220 / 240. In a model the weights come from L3, so
// reading all of them costs more than in the benchmark: resnet50's 256 -> 256 layers at 14x14
// (590 KB of weights, a 65 KB image) ran 0.184 -> 0.206 ms run-major (kiln profile).
// A pixel-major output (y_nhwc) is always split run-major: a channel panel is 32 bytes of each
// pixel's row, so two threads on neighbouring panels would write halves of the same lines.
struct PixelWork {
  int64_t panels, tiles, runs, per_run, items;
  int slots;
  bool pixel_major;
  PixelWork(const QKernels& k, const Conv2dShape& s, const PixelGeometry& g, int threads)
      : panels(ceil_div(g.Mg, k.nr)), tiles(ceil_div(g.P, k.mr)) {
    const int t = threads_for_work(static_cast<double>(g.Mg) * g.P * g.kc(), threads);
    runs = ceil_div(tiles, kTilesPerItem);
    pixel_major = t > 1 && tiles >= t && (s.y_nhwc || g.Mg * g.kc() <= g.image_bytes());
    if (pixel_major) {
      runs = std::min(tiles, round_up(std::max<int64_t>(runs, t), t));
      per_run = ceil_div(tiles, runs);
      runs = ceil_div(tiles, per_run);
    } else {
      per_run = kTilesPerItem;
    }
    items = panels * runs;
    slots = static_cast<int>(std::min<int64_t>(t, items));
  }
  int64_t panel(int64_t item) const { return pixel_major ? item % panels : item / runs; }
  int64_t run(int64_t item) const { return pixel_major ? item / panels : item % runs; }
};
}  // namespace

namespace {
// Image n's tiles with the epilogue in registers (QKernels::pixels_epilogue_strip), each
// pixel's channels stored as a row of the pixel-major output y [N, OH, OW, K] (group 1); the
// residual is pixel-major too. The channels are the epilogue's columns.
void run_pixel_major_output(const QKernels& k, const Conv2dShape& s, const PixelGeometry& g, const PixelWork& work,
                            const uint8_t* image, const int64_t* run_offsets, int64_t runs, int64_t run_groups,
                            const int64_t* pixel_offsets, const uint8_t* wg, int64_t panel_bytes, const QEpilogue& e,
                            int64_t n, void* y) {
  QEpilogue en = e;
  en.per_row = false;
  const int64_t first = n * g.P * s.K;  // element (n, 0, 0, 0)
  if (e.residual) {
    en.residual = static_cast<const char*>(e.residual) + first * (e.residual_type == QType::F32 ? 4 : 1);
    en.ldr = s.K;
  }
  void* yn = static_cast<char*>(y) + first * (e.out == QType::F32 ? 4 : 1);
  const int slots = work.slots;
  parallel_for(slots, slots, [&](int64_t sb, int64_t se) {
    for (int64_t slot = sb; slot < se; ++slot)
      for (int64_t item = work.items * slot / slots; item < work.items * (slot + 1) / slots; ++item) {
        const int64_t panel = work.panel(item), t0 = work.run(item) * work.per_run;
        const int64_t t1 = std::min(work.tiles, t0 + work.per_run);
        const int channels = static_cast<int>(std::min<int64_t>(k.nr, g.Mg - panel * k.nr));
        const uint8_t* cols = wg + panel * panel_bytes;
        k.pixels_epilogue_strip(image, pixel_offsets, t0 * k.mr, std::min(g.P, t1 * k.mr), run_offsets, runs,
                                run_groups, cols, channels, en, panel * k.nr, yn, s.K);
      }
  });
}
}  // namespace

namespace {
// On maps of at most kMostPixelsToBatch output pixels a pixel-major convolution takes the
// batch's images at once: each padded image in its own slot of the workspace, the pixel offsets
// running on across them, the output rows the batch's pixels in order (y is [N, OH, OW, K]).
// Each weight panel then streams once for the batch, not once per image and thread, and 49
// pixels stop being a parallel region of their own: resnet50 INT8 at batch 8, 0.947 at two
// threads (layer4's 3x3s 1.00 -> 0.79 ms an image). Not on larger maps, whose own pixels already
// amortise the weights: its 28x28 and 56x56 1x1s ran 4-16 % slower so.
constexpr int64_t kMostPixelsToBatch = 256;
int64_t images_at_once(const Conv2dShape& s) {
  const bool whole_batch = s.N > 1 && s.x_nhwc && s.y_nhwc && s.group == 1 && s.out_h() * s.out_w() <= kMostPixelsToBatch;
  return whole_batch ? s.N : 1;
}
// A 1x1 among those, unpadded, is simpler still: one image N times as tall has the same pixels
// in the same order and (when each image's rows divide by the stride) the same outputs.
Conv2dShape batch_as_one_image(Conv2dShape s) {
  if (images_at_once(s) > 1 && s.R == 1 && s.S == 1 && !s.padded() && s.H % s.stride_h == 0) {
    s.H *= s.N;
    s.N = 1;
  }
  return s;
}
}  // namespace

size_t qconv_workspace_bytes_pixels(const QKernels& k, const Conv2dShape& shape, int /*threads*/) {
  const Conv2dShape s = batch_as_one_image(shape);
  return static_cast<size_t>(PixelLayout(k, PixelGeometry(s), images_at_once(s)).total());
}

void qconv2d_pixels(const QKernels& k, const Conv2dShape& shape, const uint8_t* x, uint8_t flip, uint8_t pad,
                    const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  const Conv2dShape s = batch_as_one_image(shape);
  const int64_t images = images_at_once(s);  // whose pixels one pass of the tiles covers
  const PixelGeometry g(s);
  PixelGeometry pass = g;
  pass.P = images * g.P;
  const PixelLayout l(k, g, images);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const PixelWork work(k, s, pass, threads);
  const int slots = work.slots;
  uint8_t* img = workspace;
  // The window as runs of contiguous bytes: with no horizontal dilation a kernel row's taps
  // are adjacent pixels, so a row of S taps is one run of S * Cg bytes (a 3x3 convolution: 3
  // runs, not 9; fewer loop ends, though no faster on resnet50's 64-channel layers).
  const bool rows_contiguous = s.dil_w == 1;
  const int64_t runs = rows_contiguous ? s.R : g.taps, run_groups = g.kc() / 4 / runs;
  int64_t* run_offsets = reinterpret_cast<int64_t*>(workspace + l.image);
  for (int64_t u = 0; u < runs; ++u)
    run_offsets[u] = rows_contiguous ? g.tap_offset(s, u, 0) : g.tap_offset(s, u / s.S, u % s.S);
  int64_t* pixel_offsets = reinterpret_cast<int64_t*>(workspace + l.image + l.offsets);
  for (int64_t i = 0; i < images; ++i)
    for (int64_t p = 0; p < g.P; ++p) pixel_offsets[i * g.P + p] = i * g.image_bytes() + g.pixel_offset(s, p);
  const size_t w_per_group = packed_cols_bytes(k, g.kc(), g.Mg);
  const int64_t panel_bytes = (g.kc() / 4) * k.nr * 4, ldb = buffer_row(k);
  if (images > 1) {  // pixel-major in and out, group 1: the images side by side, one pass
    const bool in_place = !s.padded() && flip == 0;  // the input images are the padded images
    for (int64_t n = 0; !in_place && n < s.N; ++n)
      copy_image(s, g, x + n * s.H * s.W * s.C, flip, pad, img + n * g.image_bytes(), threads);
    run_pixel_major_output(k, s, pass, work, in_place ? x : img, run_offsets, runs, run_groups, pixel_offsets, packed_w,
                           panel_bytes, e, 0, y);
    return;
  }
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      // The image the tiles read: a pixel-major unpadded input as it is (group 1), else filled.
      const uint8_t* image = img;
      if (!s.x_nhwc) fill_image(s, g, x + (n * s.C + gi * g.Cg) * s.H * s.W, flip, pad, img, threads);
      else if (!s.padded() && flip == 0) image = x + n * s.H * s.W * s.C;
      else copy_image(s, g, x + n * s.H * s.W * s.C, flip, pad, img, threads);
      const uint8_t* wg = packed_w + gi * w_per_group;
      if (s.y_nhwc) {
        run_pixel_major_output(k, s, g, work, image, run_offsets, runs, run_groups, pixel_offsets, wg, panel_bytes, e,
                               n, y);
        continue;
      }
      const GroupOutput go = group_output(e, s, n, gi, 0, y);
      parallel_for(slots, slots, [&](int64_t sb, int64_t se) {
        int32_t* buf = reinterpret_cast<int32_t*>(thread_scratch(l.per_slot));
        for (int64_t slot = sb; slot < se; ++slot) {
          for (int64_t item = work.items * slot / slots; item < work.items * (slot + 1) / slots; ++item) {
            const int64_t panel = work.panel(item), t0 = work.run(item) * work.per_run;
            const int64_t t1 = std::min(work.tiles, t0 + work.per_run), p0 = t0 * k.mr;
            const int channels = static_cast<int>(std::min<int64_t>(k.nr, g.Mg - panel * k.nr));
            const uint8_t* cols = wg + panel * panel_bytes;
            for (int64_t t = t0; t < t1; ++t) {
              const uint8_t* rows[16];  // mr <= 16; rows past the last pixel repeat it
              for (int r = 0; r < k.mr; ++r) rows[r] = image + pixel_offsets[std::min(t * k.mr + r, g.P - 1)];
              k.tile_u8s8_pixels(rows, run_offsets, runs, run_groups, cols, buf + (t * k.mr - p0), ldb);
            }
            const int pixels = static_cast<int>(std::min(g.P, t1 * k.mr) - p0);
            k.epilogue(buf, static_cast<int>(ldb), channels, pixels, go.e, panel * k.nr, p0, go.y, g.P);
          }
        }
      });
    }
}

}  // namespace kiln::kernels::int8::detail

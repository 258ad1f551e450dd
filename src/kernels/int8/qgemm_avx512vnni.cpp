// AVX-512 VNNI: vpdpbusd on zmm with an 8 x 32 register tile (16 accumulators), and the
// requantization epilogue 16 lanes at a time with masked tails: after the tile (from its int32
// accumulators in memory), or fused into it (tile_s8u8_epilogue: straight from the registers,
// one instance per output and residual type, so the per-element code has no branches).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kiln/kernels/int8.h"
#include "qepilogue_dispatch.h"
#include "qconv_internal.h"
#include "qepilogue_zmm.h"
#include "qtranspose_ymm.h"

namespace kiln::kernels::int8 {

using QV = __m512i;
constexpr int QV_LANES = 16, QV_MR = 8, QV_NV = 2;
inline QV qv_zero() { return _mm512_setzero_si512(); }
inline QV qv_load(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline void qv_store(int32_t* p, QV v) { _mm512_storeu_si512(p, v); }
inline QV qv_set1(int32_t w) { return _mm512_set1_epi32(w); }
inline QV qv_dpbusd(QV acc, QV u8, QV s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }

#include "qgemm_vnni.inl"

namespace {

template <QType Out, Res R>
void epilogue_rows(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo) {
  const EpiConsts k(e);
  for (int r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    // Per-row parameters once per row (per_row), else loaded per column below.
    const __m512i row_bias = _mm512_set1_epi32(e.per_row && e.bias ? e.bias[row] : 0);
    const __m512 row_scale = _mm512_set1_ps(e.per_row ? e.scale[row] : 0.f);
    const __m512 row_bias_f = _mm512_set1_ps(e.per_row && e.bias_f ? e.bias_f[row] : 0.f);
    for (int j = 0; j < cols; j += 16) {
      const __mmask16 mask = lane_mask(cols - j);
      const int64_t col = col0 + j;
      __m512i a = _mm512_maskz_loadu_epi32(mask, acc + r * nr + j);
      __m512 scale = row_scale, bf = row_bias_f;
      if (e.per_row) {
        a = _mm512_add_epi32(a, row_bias);
      } else {
        if (e.bias) a = _mm512_add_epi32(a, _mm512_maskz_loadu_epi32(mask, e.bias + col));
        scale = _mm512_maskz_loadu_ps(mask, e.scale + col);
        if (e.bias_f) bf = _mm512_maskz_loadu_ps(mask, e.bias_f + col);
      }
      const void* rp = R == Res::None ? nullptr : static_cast<const char*>(e.residual) + (row * e.ldr + col) * res_size(R);
      epilogue_lanes<Out, R>(k, a, scale, e.bias_f, bf, rp, static_cast<char*>(out) + (row * ldo + col) * out_size(Out),
                             mask);
    }
  }
}

// The tile's accumulators requantized straight from registers (per_row epilogues); k holds e's
// constants. A panel with at most 16 valid columns (the last of a 14x14 map's 196) multiplies
// only its first vector. Through a phase grid (e.grid_w: the quad and phase planes' rows carry
// padding columns the output drops), a vector whose 16 columns are not 16 consecutive output
// columns is stored in pieces, one masked store per grid row it touches, its lanes requantized
// once per piece (the same lanes, so the same bytes as epilogue_rows).
template <QType Out, Res R, bool Grid>
__attribute__((always_inline)) inline void tile_epilogue_with(const EpiConsts& k, int64_t kgroups, const uint8_t* rows,
                                                              const uint8_t* cols, const int64_t* offsets,
                                                              int rows_valid, int cols_valid, const QEpilogue& e,
                                                              int64_t row0, int64_t col0, void* out, int64_t ldo) {
  QV c[QV_MR][QV_NV];
  const bool half = cols_valid <= QV_LANES;
  if (offsets) {
    if (half) vnni_accumulate<true, true, 1>(kgroups, rows, cols, offsets, c);
    else vnni_accumulate<true, true>(kgroups, rows, cols, offsets, c);
  } else {
    if (half) vnni_accumulate<true, false, 1>(kgroups, rows, cols, nullptr, c);
    else vnni_accumulate<true>(kgroups, rows, cols, nullptr, c);
  }
  // Row r's constants, and the store of a vector's lanes (`mask`) whose lane 0 is output column col.
  struct RowConsts {
    int64_t row;
    __m512i bias;
    __m512 scale, bf;
  };
  auto row_consts = [&](int r) {
    const int64_t row = row0 + r;
    return RowConsts{row, _mm512_set1_epi32(e.bias ? e.bias[row] : 0), _mm512_set1_ps(e.scale[row]),
                     _mm512_set1_ps(e.bias_f ? e.bias_f[row] : 0.f)};
  };
  auto store = [&](const RowConsts& rc, __m512i a, int64_t col, __mmask16 mask) {
    const void* rp =
        R == Res::None ? nullptr : static_cast<const char*>(e.residual) + (rc.row * e.ldr + col) * res_size(R);
    epilogue_lanes<Out, R>(k, _mm512_add_epi32(a, rc.bias), rc.scale, e.bias_f, rc.bf, rp,
                           static_cast<char*>(out) + (rc.row * ldo + col) * out_size(Out), mask);
  };
  // Where each vector's lanes go, as (output column of lane 0, lanes) stores: without a grid one,
  // from column col0 + 16 v; through a grid one when the vector's valid lanes lie in one grid
  // row, else one per grid row it touches (a grid row is at least 2 columns wide, so 16 lanes
  // touch at most 9).
  constexpr int kPieces = Grid ? 9 : 1;
  int64_t base[QV_NV][kPieces];
  __mmask16 masks[QV_NV][kPieces];
  int pieces[QV_NV];
  for (int v = 0; v < QV_NV; ++v) {
    const int64_t j = col0 + v * 16;
    const int n = std::min(16, cols_valid - v * 16);
    pieces[v] = 0;
    if (n <= 0) continue;
    if (!Grid || j % e.grid_w + n <= e.grid_valid) {
      base[v][0] = detail::output_column(e, j), masks[v][0] = lane_mask(n), pieces[v] = 1;
      continue;
    }
    if constexpr (Grid) {
      for (int l = 0; l < n;) {
        const int64_t in_row = (j + l) % e.grid_w;
        const int row_end = static_cast<int>(std::min<int64_t>(n, l + e.grid_w - in_row));
        const int valid_end =
            static_cast<int>(std::min<int64_t>(row_end, l + std::max<int64_t>(0, e.grid_valid - in_row)));
        if (valid_end > l) {
          base[v][pieces[v]] = detail::output_column(e, j + l) - l;
          masks[v][pieces[v]++] = static_cast<__mmask16>(lane_mask(valid_end) & ~lane_mask(l));
        }
        l = row_end;
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < QV_MR; ++r) {
    if (r >= rows_valid) break;
    const RowConsts rc = row_consts(r);
#pragma GCC unroll 4
    for (int v = 0; v < QV_NV; ++v) {
      if (pieces[v] == 0) break;
      if constexpr (!Grid) store(rc, c[r][v], base[v][0], masks[v][0]);
      else
        for (int p = 0; p < pieces[v]; ++p) store(rc, c[r][v], base[v][p], masks[v][p]);
    }
  }
}

struct EpilogueRows {
  template <QType Out, Res R>
  static void call(const int32_t* acc, int nr, int rows, int cols, const QEpilogue* e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo) {
    epilogue_rows<Out, R>(acc, nr, rows, cols, *e, row0, col0, out, ldo);
  }
};
// `count` tiles over consecutive packed panels (pbytes apart; GEMM columns from col0, ncols of
// them valid), or one tile whose cols are read through `offsets`: the epilogue's constants and
// the dispatch on its types paid once, as in the 256-bit tables' strip. Measured (kiln profile of
// resnet50 INT8, Zen 5, 1 thread, best of 3, with the half panels above): the 14x14 1x1s 1-4%
// faster, the other 1x1s within the noise.
struct TileEpilogue {
  template <QType Out, Res R>
  static void call(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int64_t pbytes, int64_t count,
                   const int64_t* offsets, int rows_valid, int64_t ncols, const QEpilogue* e, int64_t row0,
                   int64_t col0, void* out, int64_t ldo) {
    const EpiConsts k(*e);
    constexpr int nr = QV_NV * QV_LANES;
    for (int64_t p = 0; p < count; ++p) {
      const int cols_valid = static_cast<int>(std::min<int64_t>(nr, ncols - p * nr));
      if (e->grid_w != 0)
        tile_epilogue_with<Out, R, true>(k, kgroups, rows, cols + p * pbytes, offsets, rows_valid, cols_valid, *e, row0,
                                         col0 + p * nr, out, ldo);
      else
        tile_epilogue_with<Out, R, false>(k, kgroups, rows, cols + p * pbytes, offsets, rows_valid, cols_valid, *e,
                                          row0, col0 + p * nr, out, ldo);
    }
  }
};

void epilogue_avx512(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e_in, int64_t row0, int64_t col0,
                     void* out, int64_t ldo) {
  // A local copy: the byte stores could alias the caller's struct, which would make the compiler
  // reload every field after each store.
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<EpilogueRows>(e, acc, nr, rows, cols, &e, row0, col0, out, ldo);
}

void tile_s8u8_epilogue_avx512(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                               int rows_valid, int cols_valid, const QEpilogue& e_in, int64_t row0, int64_t col0,
                               void* out, int64_t ldo) {
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<TileEpilogue>(e, kgroups, rows, cols, int64_t{0}, int64_t{1}, offsets, rows_valid,
                                          static_cast<int64_t>(cols_valid), &e, row0, col0, out, ldo);
}

void tile_s8u8_epilogue_strip_avx512(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int64_t pbytes,
                                     int64_t count, int rows_valid, int64_t ncols, const QEpilogue& e_in, int64_t row0,
                                     int64_t col0, void* out, int64_t ldo) {
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<TileEpilogue>(e, kgroups, rows, cols, pbytes, count, static_cast<const int64_t*>(nullptr),
                                          rows_valid, ncols, &e, row0, col0, out, ldo);
}

// QKernels::tile_u8s8_pixels on the 8 x 32 tile: 8 output pixels by 32 output channels, stored
// transposed (acc[j * ldb + r] = c[r][j]) as four 8 x 8 blocks per pair of zmm columns.
void zmm_tile_pixels(const uint8_t* const* rows, const int64_t* run_offsets, int64_t runs, int64_t run_groups,
                     const uint8_t* cols, int32_t* acc, int64_t ldb) {
  static_assert(QV_MR == 8);
  QV c[QV_MR][QV_NV];
  vnni_accumulate_pixels(rows, run_offsets, runs, run_groups, cols, c);
  for (int v = 0; v < QV_NV; ++v)
    for (int h = 0; h < 2; ++h) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i) r[i] = h ? _mm512_extracti64x4_epi64(c[i][v], 1) : _mm512_castsi512_si256(c[i][v]);
      store_transposed_8x8(r, acc + (v * QV_LANES + h * 8) * ldb, ldb);
    }
}

// QKernels::pixels_epilogue_strip on the 8 x 32 tile: the pixels' accumulators requantized
// from registers with per-column (per-channel) constants set up once per strip, each pixel's
// channels stored as one row of the pixel-major output (the residual read the same way). Per
// tile, the call, the dispatch and the constants cost as much as a 64-channel 1x1's products
// (resnet50's 64 -> 256 at 56x56: 501 us a tile at a time, one thread).
struct PixelsEpilogue {
  template <QType Out, Res R>
  static void call(const uint8_t* image, const int64_t* pixel_offsets, int64_t p0, int64_t p1,
                   const int64_t* run_offsets, int64_t runs, int64_t run_groups, const uint8_t* cols, int cols_valid,
                   const QEpilogue* ep, int64_t col0, void* out, int64_t ldo) {
    const QEpilogue& e = *ep;
    const __mmask16 mask0 = lane_mask(cols_valid), mask1 = lane_mask(cols_valid - QV_LANES);
    for (int64_t t = p0; t < p1; t += QV_MR) {
      const uint8_t* rows[QV_MR];  // rows past the strip's last pixel repeat it
#pragma GCC unroll 16
      for (int r = 0; r < QV_MR; ++r) rows[r] = image + pixel_offsets[std::min<int64_t>(t + r, p1 - 1)];
      QV c[QV_MR][QV_NV];
      vnni_accumulate_pixels(rows, run_offsets, runs, run_groups, cols, c);
      // The constants are loaded after the products, per tile: held across them, with the 16
      // accumulators, they spilled into the k loop (1.3-1.5x the time).
      const EpiConsts k(e);
      __m512i bias[QV_NV];
      __m512 scale[QV_NV], bf[QV_NV];
      const __mmask16 mask[QV_NV] = {mask0, mask1};
#pragma GCC unroll 4
      for (int v = 0; v < QV_NV; ++v) {
        const int64_t col = col0 + v * QV_LANES;
        bias[v] = e.bias ? _mm512_maskz_loadu_epi32(mask[v], e.bias + col) : _mm512_setzero_si512();
        scale[v] = _mm512_maskz_loadu_ps(mask[v], e.scale + col);
        bf[v] = e.bias_f ? _mm512_maskz_loadu_ps(mask[v], e.bias_f + col) : _mm512_setzero_ps();
      }
      const int rows_valid = static_cast<int>(std::min<int64_t>(QV_MR, p1 - t));
#pragma GCC unroll 16
      for (int r = 0; r < QV_MR; ++r) {
        if (r >= rows_valid) break;
        const int64_t row = t + r;
#pragma GCC unroll 4
        for (int v = 0; v < QV_NV; ++v) {
          if (mask[v] == 0) break;
          const int64_t col = col0 + v * QV_LANES;
          const void* rp =
              R == Res::None ? nullptr : static_cast<const char*>(e.residual) + (row * e.ldr + col) * res_size(R);
          epilogue_lanes<Out, R>(k, _mm512_add_epi32(c[r][v], bias[v]), scale[v], e.bias_f, bf[v], rp,
                                 static_cast<char*>(out) + (row * ldo + col) * out_size(Out), mask[v]);
        }
      }
    }
  }
};

void zmm_pixels_epilogue_strip(const uint8_t* image, const int64_t* pixel_offsets, int64_t p0, int64_t p1,
                               const int64_t* run_offsets, int64_t runs, int64_t run_groups, const uint8_t* cols,
                               int cols_valid, const QEpilogue& e_in, int64_t col0, void* out, int64_t ldo) {
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<PixelsEpilogue>(e, image, pixel_offsets, p0, p1, run_offsets, runs, run_groups, cols,
                                            cols_valid, &e, col0, out, ldo);
}

}  // namespace

QKernels make_avx512vnni_qkernels() {
  QKernels k = vnni_qkernels(QIsa::Avx512Vnni);
  k.epilogue = epilogue_avx512;
  k.tile_s8u8_epilogue = tile_s8u8_epilogue_avx512;
  k.tile_epilogue_grid = true;
  k.tile_s8u8_epilogue_strip = tile_s8u8_epilogue_strip_avx512;
  k.tile_u8s8_pixels = zmm_tile_pixels;
  k.pixels_epilogue_strip = zmm_pixels_epilogue_strip;
  k.depthwise_nhwc = detail::qdepthwise_nhwc_avx512;
  return k;
}

}  // namespace kiln::kernels::int8

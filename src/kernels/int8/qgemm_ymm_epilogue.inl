// The requantizing epilogue fused into the 256-bit VNNI-style tile (qgemm_vnni.inl with
// qgemm_ymm.inl: AVX-VNNI, and AVX2's narrow-operand kernels): the accumulators go from registers
// to u8/s8/f32 outputs, 8 lanes at a time, without the round trip through an int32 tile in memory
// and a second pass that branches on the epilogue's options per vector. On resnet50's 1x1
// convolutions (K = 64) that round trip was as long as the products.
//
// Vectors whose 8 columns are not 8 consecutive output columns (the ragged right edge, or a
// phase-grid row's end, where the grid's extra columns are dropped) are computed the same way
// into a buffer (their residual lanes gathered into one first) and their valid lanes copied
// out. The lanes are qepilogue_ymm.h's. The including file has included qgemm_vnni.inl,
// qepilogue_ymm.h and qtranspose_ymm.h; its translation unit builds with -ffp-contract=off. The
// table's output-pixels-as-rows tile (tile_u8s8_pixels, qconv_pixels.cpp) is here too.

namespace {

using detail::Res;

// One tile and its epilogue; k holds e's constants (built once per strip of tiles). Upper:
// pair_needs_upper_clamp for the tile's rows.
template <QType Out, Res R, bool BiasF, bool Upper>
__attribute__((always_inline)) inline void tile_epilogue_ymm(const EpiConstsY& k, int64_t kgroups, const uint8_t* rows,
                                                             const uint8_t* cols, const int64_t* offsets,
                                                             int rows_valid, int cols_valid, const QEpilogue& e,
                                                             int64_t row0, int64_t col0, void* out, int64_t ldo) {
  QV c[QV_MR][QV_NV];
  // The accumulators start at the int32 bias (one add fewer per 8 outputs: with 16-64 input
  // channels the epilogue is as long as the products).
  alignas(32) int32_t bias[QV_MR] = {};
  if (e.bias)
    for (int r = 0; r < QV_MR && r < rows_valid; ++r) bias[r] = e.bias[row0 + r];
  // A panel with at most 8 valid columns (e.g. the last of a 7x7 image's 49) reads and multiplies
  // only its first vector: half the work of the full tile.
  const bool half = cols_valid <= QV_LANES;
  if (offsets) {
    if (half) vnni_accumulate<true, true, 1>(kgroups, rows, cols, offsets, c, bias);
    else vnni_accumulate<true, true>(kgroups, rows, cols, offsets, c, bias);
  } else {
    if (half) vnni_accumulate<true, false, 1>(kgroups, rows, cols, nullptr, c, bias);
    else vnni_accumulate<true>(kgroups, rows, cols, nullptr, c, bias);
  }
  // Output column of each vector's first lane when its lanes are 8 consecutive output columns;
  // else -1, and lane_col holds each lane's output column (-1: no output, past cols_valid or a
  // dropped grid column).
  int64_t dst[QV_NV], lane_col[QV_NV][QV_LANES];
  for (int v = 0; v < QV_NV; ++v) {
    const int64_t j = col0 + v * QV_LANES;
    const int n = cols_valid - v * QV_LANES;
    const bool whole = n >= QV_LANES && (e.grid_w == 0 || j % e.grid_w + QV_LANES <= e.grid_valid);
    dst[v] = whole ? detail::output_column(e, j) : -1;
    if (whole) continue;
    for (int l = 0; l < QV_LANES; ++l) lane_col[v][l] = l < n ? detail::output_column(e, j + l) : -1;
  }
  const size_t osize = detail::out_size(Out), rsize = detail::res_size(R);
  const bool pair = QV_NV == 2 && dst[0] >= 0 && dst[QV_NV - 1] == dst[0] + QV_LANES;
#pragma GCC unroll 16
  for (int r = 0; r < QV_MR; ++r) {
    if (r >= rows_valid) break;
    const int64_t row = row0 + r;
    const __m256 scale = _mm256_set1_ps(e.scale[row]);
    const __m256 bf = _mm256_set1_ps(BiasF ? e.bias_f[row] : 0.f);
    char* out_row = static_cast<char*>(out) + row * ldo * osize;
    const char* res_row = R == Res::None ? nullptr : static_cast<const char*>(e.residual) + row * e.ldr * rsize;
    if constexpr (Out != QType::F32 && QV_NV == 2) {
      if (pair) {  // the row's 16 outputs are consecutive: packed and stored together
        const char* rp = R == Res::None ? nullptr : res_row + dst[0] * rsize;
        epilogue_pair16<Out, R, BiasF, Upper>(k, c[r][0], c[r][1], scale, bf, rp, out_row + dst[0]);
        continue;
      }
    }
#pragma GCC unroll 4
    for (int v = 0; v < QV_NV; ++v) {
      const __m256i a = c[r][v];
      if (dst[v] >= 0) {
        const char* rp = R == Res::None ? nullptr : res_row + dst[v] * rsize;
        epilogue_lanes8<Out, R, BiasF>(k, a, scale, bf, rp, out_row + dst[v] * osize);
        continue;
      }
      // Scattered lanes: the residual gathered, all 8 lanes computed into a buffer, the valid
      // ones copied out (the dropped lanes compute on a zero residual and are not stored).
      alignas(32) char res_lanes[QV_LANES * 4] = {}, out_lanes[QV_LANES * 4];
      for (int l = 0; l < QV_LANES; ++l)
        if (R != Res::None && lane_col[v][l] >= 0) std::memcpy(res_lanes + l * rsize, res_row + lane_col[v][l] * rsize, rsize);
      epilogue_lanes8<Out, R, BiasF>(k, a, scale, bf, res_lanes, out_lanes);
      for (int l = 0; l < QV_LANES; ++l)
        if (lane_col[v][l] >= 0) std::memcpy(out_row + lane_col[v][l] * osize, out_lanes + l * osize, osize);
    }
  }
}

// `count` tiles of consecutive packed panels (pbytes apart; GEMM columns from col0, ncols of them
// valid), or one tile whose cols are read through `offsets`: the epilogue's set-up (its
// constants, the dispatch on its types, the struct's copy) paid once per strip. With few input
// channels (mobilenet_v2's 1x1 layers, 16-32 of them) a tile's products are short and that
// set-up was a quarter of a layer's time.
// Out of line: inlined into their dispatcher, the four instances per type ran 4-8 % slower.
template <QType Out, Res R, bool BiasF, bool Upper>
__attribute__((noinline)) void strip_epilogue_ymm(int64_t kgroups, const uint8_t* rows, const uint8_t* cols,
                                                  int64_t pbytes, int64_t count, const int64_t* offsets,
                                                  int rows_valid, int64_t ncols, const QEpilogue& e, int64_t row0,
                                                  int64_t col0, void* out, int64_t ldo) {
  const EpiConstsY k(e);
  constexpr int nr = QV_NV * QV_LANES;
  for (int64_t p = 0; p < count; ++p) {
    const int cols_valid = static_cast<int>(std::min<int64_t>(nr, ncols - p * nr));
    tile_epilogue_ymm<Out, R, BiasF, Upper>(k, kgroups, rows, cols + p * pbytes, offsets, rows_valid, cols_valid, e,
                                            row0, col0 + p * nr, out, ldo);
  }
}

// run.template operator()<BiasF, Upper>() for e's f32 bias and pair_needs_upper_clamp on rows
// [row0, row0 + rows); f32 outputs take no pair path and always keep the clamp (one instance).
template <QType Out, class Run>
void with_bias_and_upper(const QEpilogue& e, int64_t row0, int rows, const Run& run) {
  if constexpr (Out == QType::F32) {
    e.bias_f ? run.template operator()<true, true>() : run.template operator()<false, true>();
  } else {
    const bool upper = pair_needs_upper_clamp(e, row0, rows);
    if (e.bias_f) upper ? run.template operator()<true, true>() : run.template operator()<true, false>();
    else upper ? run.template operator()<false, true>() : run.template operator()<false, false>();
  }
}

struct StripEpilogueY {
  template <QType Out, Res R>
  static void call(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int64_t pbytes, int64_t count,
                   const int64_t* offsets, int rows_valid, int64_t ncols, const QEpilogue* e, int64_t row0,
                   int64_t col0, void* out, int64_t ldo) {
    with_bias_and_upper<Out>(*e, row0, rows_valid, [&]<bool BiasF, bool Upper>() {
      strip_epilogue_ymm<Out, R, BiasF, Upper>(kgroups, rows, cols, pbytes, count, offsets, rows_valid, ncols, *e, row0,
                                               col0, out, ldo);
    });
  }
};

void tile_s8u8_epilogue_strip_ymm(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int64_t pbytes,
                                  int64_t count, int rows_valid, int64_t ncols, const QEpilogue& e_in, int64_t row0,
                                  int64_t col0, void* out, int64_t ldo) {
  // A local copy: the byte stores could alias the caller's struct, which would make the compiler
  // reload every field after each store.
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<StripEpilogueY>(e, kgroups, rows, cols, pbytes, count, static_cast<const int64_t*>(nullptr),
                                            rows_valid, ncols, &e, row0, col0, out, ldo);
}

void tile_s8u8_epilogue_ymm(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                            int rows_valid, int cols_valid, const QEpilogue& e_in, int64_t row0, int64_t col0,
                            void* out, int64_t ldo) {
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<StripEpilogueY>(e, kgroups, rows, cols, int64_t{0}, int64_t{1}, offsets, rows_valid,
                                            static_cast<int64_t>(cols_valid), &e, row0, col0, out, ldo);
}

// QKernels::epilogue for per-row epilogues (the pixels path's channel-major buffers, tiles
// whose epilogue is not fused): a row's outputs 16 at a time through the same lane functions as
// the fused tiles, one instance per output and residual type. Per-column epilogues (QMatMul)
// take AVX2's general one.
template <QType Out, Res R, bool BiasF, bool Upper>
__attribute__((noinline)) void rows_epilogue_ymm(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e,
                                                 int64_t row0, int64_t col0, void* out, int64_t ldo) {
  const EpiConstsY k(e);
  const size_t osize = detail::out_size(Out), rsize = detail::res_size(R);
  for (int r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    const __m256i bias = _mm256_set1_epi32(e.bias ? e.bias[row] : 0);
    const __m256 scale = _mm256_set1_ps(e.scale[row]);
    const __m256 bf = _mm256_set1_ps(BiasF ? e.bias_f[row] : 0.f);
    const int32_t* a = acc + static_cast<int64_t>(r) * nr;
    char* out_row = static_cast<char*>(out) + (row * ldo + col0) * osize;
    const char* res_row =
        R == Res::None ? nullptr : static_cast<const char*>(e.residual) + (row * e.ldr + col0) * rsize;
    auto lanes = [&](int j) {
      return _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j)), bias);
    };
    int j = 0;
    if constexpr (Out != QType::F32) {
      for (; j + 16 <= cols; j += 16)
        epilogue_pair16<Out, R, BiasF, Upper>(k, lanes(j), lanes(j + 8), scale, bf,
                                              R == Res::None ? nullptr : res_row + j * rsize, out_row + j);
    }
    for (; j + 8 <= cols; j += 8)
      epilogue_lanes8<Out, R, BiasF>(k, lanes(j), scale, bf, R == Res::None ? nullptr : res_row + j * rsize,
                                     out_row + j * osize);
    for (; j < cols; ++j) epilogue_element(e, a[j], row, col0 + j, out, ldo);
  }
}

struct RowsEpilogueY {
  template <QType Out, Res R>
  static void call(const int32_t* acc, int nr, int rows, int cols, const QEpilogue* e, int64_t row0, int64_t col0,
                   void* out, int64_t ldo) {
    with_bias_and_upper<Out>(*e, row0, rows, [&]<bool BiasF, bool Upper>() {
      rows_epilogue_ymm<Out, R, BiasF, Upper>(acc, nr, rows, cols, *e, row0, col0, out, ldo);
    });
  }
};

void epilogue_ymm(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e_in, int64_t row0, int64_t col0,
                  void* out, int64_t ldo) {
  if (!e_in.per_row) return epilogue_avx2(acc, nr, rows, cols, e_in, row0, col0, out, ldo);
  // A local copy, as in tile_s8u8_epilogue_strip_ymm: the byte stores could alias the caller's.
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<RowsEpilogueY>(e, acc, nr, rows, cols, &e, row0, col0, out, ldo);
}

// The tile transposed, 8 x 8 int32 blocks through registers: acc[j * ldb + r] = c[r][j] for
// j < 16 and r < 8, the rows past QV_MR written as zeros.
inline void store_transposed_ymm(const QV (&c)[QV_MR][QV_NV], int32_t* acc, int64_t ldb) {
  static_assert(QV_MR <= 8);
  for (int v = 0; v < QV_NV; ++v) {
    QV r[8];
    for (int i = 0; i < 8; ++i) r[i] = i < QV_MR ? c[i][v] : qv_zero();
    store_transposed_8x8(r, acc + v * QV_LANES * ldb, ldb);
  }
}

// QKernels::tile_u8s8_pixels of the 256-bit tables (measured on resnet50's layers, AVX2's 7-bit
// kernels); AVX-512 VNNI's is in qgemm_avx512vnni.cpp.
void ymm_tile_pixels(const uint8_t* const* rows, const int64_t* run_offsets, int64_t runs, int64_t run_groups,
                     const uint8_t* cols, int32_t* acc, int64_t ldb) {
  QV c[QV_MR][QV_NV];
  vnni_accumulate_pixels(rows, run_offsets, runs, run_groups, cols, c);
  store_transposed_ymm(c, acc, ldb);
}

// The 256-bit VNNI-style table with the fused epilogue and epilogue_ymm (per-column epilogues
// through AVX2's, qgemm_avx2.cpp).
QKernels ymm_qkernels(QIsa isa) {
  QKernels k = vnni_qkernels(isa);
  k.epilogue = epilogue_ymm;
  k.tile_s8u8_epilogue = tile_s8u8_epilogue_ymm;
  k.tile_s8u8_epilogue_strip = tile_s8u8_epilogue_strip_ymm;
  k.tile_epilogue_grid = true;
  k.tile_u8s8_pixels = ymm_tile_pixels;
  return k;
}

}  // namespace

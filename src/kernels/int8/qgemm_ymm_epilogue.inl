// The requantizing epilogue fused into the 256-bit VNNI-style tile (qgemm_vnni.inl with
// qgemm_ymm.inl: AVX-VNNI, and AVX2's narrow-operand kernels): the accumulators go from registers
// to u8/s8/f32 outputs, 8 lanes at a time, without the round trip through an int32 tile in memory
// and a second pass that branches on the epilogue's options per vector. On resnet50's 1x1
// convolutions (K = 64) that round trip was as long as the products.
//
// Vectors whose 8 columns are not 8 consecutive output columns (the ragged right edge, or a
// phase-grid row's end, where the grid's extra columns are dropped) are computed the same way
// into a buffer (their residual lanes gathered into one first) and their valid lanes copied
// out. The including file has included qgemm_vnni.inl; its translation unit builds with
// -ffp-contract=off.

namespace {

using detail::Res;

struct EpiConstsY {
  __m256 lo, hi, inv, qmin, qmax, rscale, res_lo, res_hi;
  __m256i zp, rzp;
  explicit EpiConstsY(const QEpilogue& e)
      : lo(_mm256_set1_ps(e.lo)), hi(_mm256_set1_ps(e.hi)), inv(_mm256_set1_ps(e.out_inv_scale)),
        rscale(_mm256_set1_ps(e.residual_scale)), res_lo(_mm256_set1_ps(e.res_lo)), res_hi(_mm256_set1_ps(e.res_hi)),
        zp(_mm256_set1_epi32(e.out_zp)), rzp(_mm256_set1_epi32(e.residual_zp)) {
    // The activation clamp and the saturation as one clamp of v * inv: bit-identical, for the
    // reasons given in qgemm_avx512vnni.cpp's EpiConsts (multiplying by inv > 0 is monotonic, the
    // saturation bounds minus the zero point are integers). The +-2^30 bound of quantize_value
    // is inside them.
    const float ql = e.out == QType::U8 ? 0.f : -128.f, qh = e.out == QType::U8 ? 255.f : 127.f;
    qmin = _mm256_set1_ps(std::max(e.lo * e.out_inv_scale, ql - static_cast<float>(e.out_zp)));
    qmax = _mm256_set1_ps(std::min(e.hi * e.out_inv_scale, qh - static_cast<float>(e.out_zp)));
  }
};

// 8 lanes: accumulators a (bias added) times scale, plus bf, the residual at rp, the clamp,
// stored as Out at op. The float operations of epilogue_real + quantize_value, in their order.
template <QType Out, Res R, bool BiasF>
inline void epilogue_lanes8(const EpiConstsY& k, __m256i a, __m256 scale, __m256 bf, const void* rp, void* op) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), scale);
  if constexpr (BiasF) v = _mm256_add_ps(v, bf);
  if constexpr (R != Res::None) {
    __m256 rv;
    if constexpr (R == Res::F32) {
      rv = _mm256_loadu_ps(static_cast<const float*>(rp));
    } else {
      const __m128i raw = _mm_loadl_epi64(static_cast<const __m128i*>(rp));
      const __m256i ri = R == Res::U8 ? _mm256_cvtepu8_epi32(raw) : _mm256_cvtepi8_epi32(raw);
      rv = _mm256_cvtepi32_ps(_mm256_sub_epi32(ri, k.rzp));
    }
    v = _mm256_min_ps(_mm256_max_ps(v, k.res_lo), k.res_hi);
    v = R == Res::F32 ? _mm256_add_ps(v, rv) : _mm256_fmadd_ps(rv, k.rscale, v);
  }
  if constexpr (Out == QType::F32) {
    _mm256_storeu_ps(static_cast<float*>(op), _mm256_min_ps(_mm256_max_ps(v, k.lo), k.hi));
  } else {
    const __m256 x = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, k.inv), k.qmin), k.qmax);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(x), k.zp);  // round half to even (MXCSR default)
    // In range, so the packs only select each lane's low byte.
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i q8 = Out == QType::U8 ? _mm_packus_epi16(q16, q16) : _mm_packs_epi16(q16, q16);
    _mm_storel_epi64(static_cast<__m128i*>(op), q8);
  }
}

template <QType Out, Res R, bool BiasF>
void tile_epilogue_ymm(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                       int rows_valid, int cols_valid, const QEpilogue& e, int64_t row0, int64_t col0, void* out,
                       int64_t ldo) {
  QV c[QV_MR][QV_NV];
  // A panel with at most 8 valid columns (e.g. the last of a 7x7 image's 49) reads and multiplies
  // only its first vector: half the work of the full tile.
  const bool half = cols_valid <= QV_LANES;
  if (offsets) {
    if (half) vnni_accumulate<true, true, 1>(kgroups, rows, cols, offsets, c);
    else vnni_accumulate<true, true>(kgroups, rows, cols, offsets, c);
  } else {
    if (half) vnni_accumulate<true, false, 1>(kgroups, rows, cols, nullptr, c);
    else vnni_accumulate<true>(kgroups, rows, cols, nullptr, c);
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
  const EpiConstsY k(e);
  const size_t osize = detail::out_size(Out), rsize = detail::res_size(R);
#pragma GCC unroll 16
  for (int r = 0; r < QV_MR; ++r) {
    if (r >= rows_valid) break;
    const int64_t row = row0 + r;
    const __m256i bias = _mm256_set1_epi32(e.bias ? e.bias[row] : 0);
    const __m256 scale = _mm256_set1_ps(e.scale[row]);
    const __m256 bf = _mm256_set1_ps(BiasF ? e.bias_f[row] : 0.f);
    char* out_row = static_cast<char*>(out) + row * ldo * osize;
    const char* res_row = R == Res::None ? nullptr : static_cast<const char*>(e.residual) + row * e.ldr * rsize;
#pragma GCC unroll 4
    for (int v = 0; v < QV_NV; ++v) {
      const __m256i a = _mm256_add_epi32(c[r][v], bias);
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

template <QType Out, Res R>
struct TileEpilogueY {
  static void call(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets, int rows_valid,
                   int cols_valid, const QEpilogue* e, int64_t row0, int64_t col0, void* out, int64_t ldo) {
    if (e->bias_f) tile_epilogue_ymm<Out, R, true>(kgroups, rows, cols, offsets, rows_valid, cols_valid, *e, row0, col0, out, ldo);
    else tile_epilogue_ymm<Out, R, false>(kgroups, rows, cols, offsets, rows_valid, cols_valid, *e, row0, col0, out, ldo);
  }
};

void tile_s8u8_epilogue_ymm(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                            int rows_valid, int cols_valid, const QEpilogue& e_in, int64_t row0, int64_t col0,
                            void* out, int64_t ldo) {
  // A local copy: the byte stores could alias the caller's struct, which would make the compiler
  // reload every field after each store.
  const QEpilogue e = e_in;
  detail::dispatch_epilogue<TileEpilogueY>(e, kgroups, rows, cols, offsets, rows_valid, cols_valid, &e, row0, col0,
                                           out, ldo);
}

// The 256-bit VNNI-style table with the fused epilogue; the separate one is AVX2's (qgemm_avx2.cpp).
QKernels ymm_qkernels(QIsa isa) {
  QKernels k = vnni_qkernels(isa);
  k.epilogue = epilogue_avx2;
  k.tile_s8u8_epilogue = tile_s8u8_epilogue_ymm;
  k.tile_epilogue_grid = true;
  return k;
}

}  // namespace

// The GEMM micro-kernel, written once over the ISA's vector type V and instantiated per
// register tile: ROWS rows of C (<= GMR) by NVEC vectors of columns. The accumulators
// (ROWS x NVEC vectors) live in registers for the whole K loop: each step loads NVEC vectors
// of the packed B panel and broadcasts ROWS floats of the packed A panel (which the compiler
// folds into the FMAs as embedded broadcasts on AVX-512).
// Needs constexpr GMR (A panel stride) and GNR (B panel stride) in the including namespace.

// Floats ahead of the B read pointer prefetched by the few-row tiles.
constexpr int64_t kStreamAhead = 512;

// Where step p of the K loop finds its row of B, and how it loads it.
// A packed panel: rows nr floats apart, zero-padded, always loaded whole.
struct PackedPanel {
  static constexpr bool kStream = true;  // GEMV-like tiles stream it: prefetch ahead
  const float* b;
  const float* row(int64_t p) const { return b + p * GNR; }
  V load(const float* r, int v, int nvec) const { return V::load(r + v * V::W); }
};
// Rows in place (a convolution's input planes): row p at rows[p] + col. With MASKED the last
// vector loads only `last` floats, so a partial panel never reads past its row's data.
template <bool MASKED>
struct RowPointers {
  static constexpr bool kStream = false;
  const float* const* rows;
  int64_t col;
  int last;
  const float* row(int64_t p) const { return rows[p] + col; }
  V load(const float* r, int v, int nvec) const {
    return (MASKED && v == nvec - 1) ? V::load_first(r + v * V::W, last) : V::load(r + v * V::W);
  }
};

// Where step p of the K loop finds the tile's A values: a packed panel (the GMR floats of a
// step consecutive) or A in place (row r of the tile at a + r * lda, one float a step).
struct PackedA {
  float at(const float* ap, int r) const { return ap[r]; }
  int64_t step() const { return GMR; }
};
struct RowsA {
  int64_t lda;
  float at(const float* ap, int r) const { return ap[r * lda]; }
  int64_t step() const { return 1; }
};

// The common full tile: per-row bias or none, optional residual, Relu or no activation, in
// the order of the general path below (so bit-identical to it), without its per-vector checks.
template <int ROWS, int NVEC, bool RES>
__attribute__((always_inline)) inline void store_full_tile(V (&acc)[ROWS][NVEC], float* __restrict c, int64_t ldc,
                                                           bool load_c, const TileEpilogue& e) {
  const bool bias = e.bias_mode == TileEpilogue::Bias::PerRow, relu = e.act == Act::Relu;
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* cr = c + r * ldc;
    const V row_bias = bias ? V::set1(e.bias[r]) : V::zero();
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) {
      V x = acc[r][v];
      if (load_c) x = x + V::load(cr + v * V::W);
      x = x + row_bias;
      if constexpr (RES) x = x + V::load(e.residual + r * e.ldr + v * V::W);
      if (relu) x = activate<Act::Relu>(x, V::zero(), V::zero());
      x.store(cr + v * V::W);
    }
  }
}

// acc (+ C) through the epilogue e (epilogue_in_registers) into C: the operations of
// epilogue_rows, in its order, while the tile is still in registers. For mobilenet_v2's
// pointwise layers (K = 16..32 input channels, so a short K loop per tile) the separate pass
// over each stored tile took 12% of the whole model's time on Zen 3.
template <int ROWS, int NVEC>
__attribute__((always_inline)) inline void store_tile_epilogue(V (&acc)[ROWS][NVEC], float* __restrict c, int64_t ldc,
                                                               int nr, bool load_c, const TileEpilogue& e) {
  if (nr == NVEC * V::W && e.alpha == 1.f &&
      (e.bias_mode == TileEpilogue::Bias::None || e.bias_mode == TileEpilogue::Bias::PerRow) &&
      (e.act == Act::None || e.act == Act::Relu)) {
    if (e.residual) store_full_tile<ROWS, NVEC, true>(acc, c, ldc, load_c, e);
    else store_full_tile<ROWS, NVEC, false>(acc, c, ldc, load_c, e);
    return;
  }
  const V alpha = V::set1(e.alpha), lo = V::set1(e.act_alpha), hi = V::set1(e.act_beta);
  const bool scale = e.alpha != 1.f, col_bias = e.bias_mode == TileEpilogue::Bias::PerCol;
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* cr = c + r * ldc;
    const float* res = e.residual ? e.residual + r * e.ldr : nullptr;
    V row_bias = V::zero();
    if (e.bias_mode == TileEpilogue::Bias::PerRow) row_bias = V::set1(e.bias[r]);
    if (e.bias_mode == TileEpilogue::Bias::Scalar) row_bias = V::set1(e.bias[0]);
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) {
      const int col = v * V::W;
      if (nr <= col) continue;
      const bool full = nr >= col + V::W;
      const int n = full ? V::W : nr - col;
      V x = acc[r][v];
      if (load_c) x = x + (full ? V::load(cr + col) : V::load_first(cr + col, n));
      x = epilogue_sum(x, scale, alpha, row_bias, col_bias ? e.bias + col : nullptr, res ? res + col : nullptr, n);
      if (e.act == Act::Relu) x = activate<Act::Relu>(x, lo, hi);
      if (e.act == Act::Clip) x = activate<Act::Clip>(x, lo, hi);
      if (full)
        x.store(cr + col);
      else
        x.store_first(cr + col, n);
    }
  }
}

// The next strip's B panel, fetched into L2 a line per K step by the strips' tiles (col_strip):
// prepacked weights wider than L2 (a 1024 x 1024 B is 4 MiB) come from L3 or DRAM, and the
// first tile of every strip otherwise waited on its panel (gemm 1024^3 on one Ice Lake core,
// paired: 0.91 of the time; the hardware prefetchers do not cross to the next panel, 128 KiB
// away).
struct NextPanel {
  const float* lines = nullptr;  // the first of this tile's share of lines
  int64_t count = 0;             // lines in the share
};

template <int ROWS, int NVEC, class BSource, class ASource = PackedA>
inline void tile_core(int64_t kc, const float* __restrict a, const BSource& b, float* __restrict c, int64_t ldc,
                      int nr, bool load_c, const TileEpilogue* epi, NextPanel next = {}, ASource as = {}) {
  V acc[ROWS][NVEC];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) acc[r][v] = V::zero();

  // The C tile is read or written after the loop: start fetching its lines now (each row's
  // second line too: 0.98 of the time for gemm 1024^3 on one Ice Lake core, paired).
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    prefetch(c + r * ldc);
    if constexpr (NVEC * V::W > kLineFloats) prefetch(c + r * ldc + kLineFloats);
  }

  auto step = [&](const float* ap, const float* bp) __attribute__((always_inline)) {
    V bv[NVEC];
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) bv[v] = b.load(bp, v, NVEC);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      V ar = V::set1(as.at(ap, r));
#pragma GCC unroll 4
      for (int v = 0; v < NVEC; ++v) acc[r][v] = fma(ar, bv[v], acc[r][v]);
    }
  };
  // Few rows: the kernel streams B (a GEMV reads each packed weight once), so fetch it well
  // ahead, across page boundaries the hardware prefetcher stops at.
  if constexpr (ROWS <= 2 && BSource::kStream) {
    for (int64_t p = 0; p < kc; ++p, a += as.step()) {
      prefetch(b.row(p) + kStreamAhead);
      step(a, b.row(p));
    }
  } else {
    int64_t p = 0;
    for (const int64_t n = std::min(next.count, kc); p < n; ++p, a += as.step()) {
      prefetch_l2(next.lines + p * kLineFloats);
      step(a, b.row(p));
    }
    // Two steps an iteration: one pointer update and one loop test for 2 x ROWS x NVEC FMAs
    // (the scalar adds otherwise take issue slots on the FMA ports): gemm 1024^3 on one core
    // 0.966 of the time, BERT's 128 x 3072 x 768 0.968 and 128 x 768 x 3072 0.977, two cores
    // 0.997 (in-process pairs, Xeon 5th gen; by four: 0.991, noisier).
    for (; p + 2 <= kc; p += 2, a += 2 * as.step()) {
      step(a, b.row(p));
      step(a + as.step(), b.row(p + 1));
    }
    if (p < kc) step(a, b.row(p));
  }
  if (epi) {
    store_tile_epilogue<ROWS, NVEC>(acc, c, ldc, nr, load_c, *epi);
    return;
  }

#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) {
      const int col = v * V::W;
      if (nr >= col + V::W) {
        if (load_c) acc[r][v] = acc[r][v] + V::load(cr + col);
        acc[r][v].store(cr + col);
      } else if (nr > col) {
        const int n = nr - col;
        if (load_c) acc[r][v] = acc[r][v] + V::load_first(cr + col, n);
        acc[r][v].store_first(cr + col, n);
      }
    }
  }
}

// C[0:ROWS, 0:nr] (=|+=) A panel (kc x GMR) · packed B panel (kc x GNR), then epi.
template <int ROWS, int NVEC>
void gemm_tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int nr, bool load_c,
               const TileEpilogue* epi) {
  tile_core<ROWS, NVEC>(kc, a, PackedPanel{b}, c, ldc, nr, load_c, epi);
}

// The same with B read in place: row p of the tile's B at brows[p] + col.
template <int ROWS, int NVEC, bool MASKED>
void gemm_tile_rows(int64_t kc, const float* a, const float* const* brows, int64_t col, float* c, int64_t ldc, int nr,
                    bool load_c, const TileEpilogue* epi) {
  const int last = nr - (NVEC - 1) * V::W;
  tile_core<ROWS, NVEC>(kc, a, RowPointers<MASKED>{brows, col, last}, c, ldc, nr, load_c, epi);
}

// KernelTable::tile_rows_strip: GMR rows by `count` whole panels.
void gemm_tile_rows_strip(int64_t kc, const float* a, const float* const* brows, int64_t col, float* c, int64_t ldc,
                          int64_t count, bool load_c, const TileEpilogue* epi) {
  TileEpilogue e = epi ? *epi : TileEpilogue{};
  for (int64_t q = 0; q < count; ++q, col += GNR, c += GNR) {
    tile_core<GMR, GNR / V::W>(kc, a, RowPointers<false>{brows, col, V::W}, c, ldc, GNR, load_c, epi ? &e : nullptr);
    if (e.bias_mode == TileEpilogue::Bias::PerCol) e.bias += GNR;
    if (e.residual) e.residual += GNR;
  }
}

// `count` whole GMR-row tiles down one GNR-column panel of B (BSource), NV vectors of it, the
// first nr columns stored; the tiles' A a_stride floats apart (ASource); next_b (or null): the
// next strip's panel, each tile fetching its share of the lines.
template <int NV, class BSource, class ASource = PackedA>
inline void col_strip(int64_t kc, const float* a, int64_t a_stride, const BSource& b, float* c, int64_t ldc, int nr,
                      int64_t count, bool load_c, const TileEpilogue* epi, const float* next_b = nullptr,
                      ASource as = {}) {
  TileEpilogue e = epi ? *epi : TileEpilogue{};
  const int64_t lines = next_b ? kc * GNR / kLineFloats : 0, share = (lines + count - 1) / count;
  for (int64_t q = 0; q < count; ++q, a += a_stride, c += GMR * ldc) {
    const int64_t first = std::min(lines, q * share);
    const NextPanel next{next_b ? next_b + first * kLineFloats : nullptr, std::min(lines - first, share)};
    tile_core<GMR, NV>(kc, a, b, c, ldc, nr, load_c, epi ? &e : nullptr, next, as);
    if (e.bias_mode == TileEpilogue::Bias::PerRow) e.bias += GMR;
    if (e.residual) e.residual += GMR * e.ldr;
  }
}
// KernelTable::tile_col_strip: over one packed panel.
void gemm_tile_col_strip(int64_t kc, const float* a, int64_t a_stride, const float* b, float* c, int64_t ldc,
                         int64_t count, bool load_c, const TileEpilogue* epi, const float* next_b) {
  col_strip<GNR / V::W>(kc, a, a_stride, PackedPanel{b}, c, ldc, GNR, count, load_c, epi, next_b);
}
// KernelTable::tile_a_rows_col_strip[NV - 1]: over one packed panel, A read in place.
template <int NV>
void gemm_tile_a_rows_col_strip(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                int nr, int64_t count, bool load_c, const TileEpilogue* epi, const float* next_b) {
  col_strip<NV>(kc, a, GMR * lda, PackedPanel{b}, c, ldc, nr, count, load_c, epi, next_b, RowsA{lda});
}
// KernelTable::tile_rows_col_strip: over B's rows in place, columns col .. col + GNR.
void gemm_tile_rows_col_strip(int64_t kc, const float* a, int64_t a_stride, const float* const* brows, int64_t col,
                              float* c, int64_t ldc, int64_t count, bool load_c, const TileEpilogue* epi) {
  col_strip<GNR / V::W>(kc, a, a_stride, RowPointers<false>{brows, col, V::W}, c, ldc, GNR, count, load_c, epi);
}

// One panel's first NV vectors of columns (K * GNR floats from p), its first `cols` stored.
template <int NV>
inline void gemv_panel(int64_t K, const float* __restrict a, const float* __restrict p, float* __restrict cq, int cols) {
  V s0[NV], s1[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) s0[v] = s1[v] = V::zero();
  int64_t k = 0;
  for (; k + 2 <= K; k += 2, p += 2 * GNR) {
    const V a0 = V::set1(a[k]), a1 = V::set1(a[k + 1]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      s0[v] = fma(a0, V::load(p + v * V::W), s0[v]);
      s1[v] = fma(a1, V::load(p + GNR + v * V::W), s1[v]);
    }
  }
  if (k < K) {
    const V a0 = V::set1(a[k]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s0[v] = fma(a0, V::load(p + v * V::W), s0[v]);
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int col = v * V::W;
    const V x = s0[v] + s1[v];
    if (cols >= col + V::W) x.store(cq + col);
    else if (cols > col) x.store_first(cq + col, cols - col);
  }
}
// gemv_panel on `vecs` (1..NV) vectors.
template <int NV>
inline void gemv_panel_of(int vecs, int64_t K, const float* a, const float* p, float* cq, int cols) {
  if constexpr (NV > 1)
    if (vecs < NV) return gemv_panel_of<NV - 1>(vecs, K, a, p, cq, cols);
  gemv_panel<NV>(K, a, p, cq, cols);
}
// KernelTable::gemv_panels: c = a · B over `panels` packed GNR-column panels of the full K (K * GNR
// floats apart), the last one's first `last` columns stored. The one-row tile of the blocked
// driver read its row of A from a packed panel GMR floats a step (for K = 768, 43 KB beside each
// 96 KB panel of B) and fetched B ahead in software; a panel read front to back with A in place
// and no prefetch streamed GPT-2's weights at 21 -> 26 GB/s on one Zen 4 core (the plain read
// loop: 26.8). Two K steps on two accumulator sets keep two FMA chains per vector in flight.
void gemv_panels(int64_t K, const float* __restrict a, const float* __restrict b, int64_t panels, float* __restrict c,
                 int last) {
  for (int64_t q = 0; q + 1 < panels; ++q) gemv_panel<GNR / V::W>(K, a, b + q * K * GNR, c + q * GNR, GNR);
  // The last panel reads only the vectors its columns need: a squeeze-and-excitation layer's 20
  // outputs on a 64-column panel would stream 3.2 times the weight it uses.
  if (panels > 0)
    gemv_panel_of<GNR / V::W>((last + V::W - 1) / V::W, K, a, b + (panels - 1) * K * GNR, c + (panels - 1) * GNR, last);
}

// KernelTable::pack_row_panels: GNR-column panels of kc rows given by pointer. Row by row, so
// each row's nc floats are read front to back, one stream for the hardware prefetcher: panel by
// panel (64 rows 12.5 KB apart: 64 streams) packing was 10% of a 64->256 1x1 at 56x56 with
// misaligned rows on Zen 3, row by row 5.5%.
void pack_row_panels(const float* const* rows, int64_t kc, int64_t col, int64_t nc, float* out) {
  constexpr int kVecs = GNR / V::W;
  const int64_t whole = nc / GNR, panel = kc * GNR;
  for (int64_t q = 0; q < kc; ++q) {
    const float* src = rows[q] + col;
    float* dst = out + q * GNR;
    for (int64_t jp = 0; jp < whole; ++jp, src += GNR, dst += panel)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) V::load(src + v * V::W).store(dst + v * V::W);
    if (whole * GNR == nc) continue;
    for (int v = 0; v < kVecs; ++v) {
      const int64_t n = nc - whole * GNR - v * V::W;
      const float* p = src + v * V::W;
      const V x = n >= V::W ? V::load(p) : n > 0 ? V::load_first(p, static_cast<int>(n)) : V::zero();
      x.store(dst + v * V::W);
    }
  }
}

// Fills table.tile[ROWS-1][v-1] (and tile_rows) for v = 1..NV vectors of columns.
template <int ROWS, int NV>
void fill_tile_widths(KernelTable& t) {
  if constexpr (NV > 0) {
    static_assert(NV <= KernelTable::kMaxTileVectors, "a panel of more vectors than the table holds");
    t.tile[ROWS - 1][NV - 1] = gemm_tile<ROWS, NV>;
    if constexpr (ROWS == GMR) t.tile_a_rows_col_strip[NV - 1] = gemm_tile_a_rows_col_strip<NV>;
    t.tile_rows[ROWS - 1][NV - 1][0] = gemm_tile_rows<ROWS, NV, false>;
    t.tile_rows[ROWS - 1][NV - 1][1] = gemm_tile_rows<ROWS, NV, true>;
    fill_tile_widths<ROWS, NV - 1>(t);
  }
}
// ... for rows 1..ROWS, every width up to the whole panel's GNR columns.
template <int ROWS>
void fill_tiles(KernelTable& t) {
  if constexpr (ROWS > 0) {
    fill_tile_widths<ROWS, GNR / V::W>(t);
    fill_tiles<ROWS - 1>(t);
  }
}

// The GEMM micro-kernel, written once over the ISA's vector type V and instantiated per
// register tile: ROWS rows of C (<= MR) by NVEC vectors of columns. The accumulators
// (ROWS x NVEC vectors) live in registers for the whole K loop: each step loads NVEC vectors
// of the packed B panel and broadcasts ROWS floats of the packed A panel (which the compiler
// folds into the FMAs as embedded broadcasts on AVX-512).
// Needs constexpr MR (A panel stride) and NR (B panel stride) in the including namespace.

// Floats ahead of the B read pointer prefetched by the few-row tiles.
constexpr int64_t kStreamAhead = 512;

template <int ROWS, int NVEC>
void gemm_tile(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t ldc,
               int nr, bool load_c) {
  V acc[ROWS][NVEC];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) acc[r][v] = V::zero();

  // The C tile is read or written after the loop: start fetching its lines now.
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) prefetch(c + r * ldc);

  int64_t p = 0;
  auto step = [&](const float* ap, const float* bp) __attribute__((always_inline)) {
    V bv[NVEC];
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) bv[v] = V::load(bp + v * V::W);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      V ar = V::set1(ap[r]);
#pragma GCC unroll 4
      for (int v = 0; v < NVEC; ++v) acc[r][v] = fma(ar, bv[v], acc[r][v]);
    }
  };
  // Few rows: the kernel streams B (a GEMV reads each packed weight once), so fetch it well
  // ahead, across page boundaries the hardware prefetcher stops at.
  if constexpr (ROWS <= 2) {
    for (; p < kc; ++p, a += MR, b += NR) {
      prefetch(b + kStreamAhead);
      step(a, b);
    }
  } else {
    for (; p < kc; ++p, a += MR, b += NR) step(a, b);
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

// Fills table.tile[rows-1][half] for rows 1..MR: [0] covers NR/2 columns, [1] all NR.
template <int ROWS>
void fill_tiles(KernelTable& t) {
  if constexpr (ROWS > 0) {
    t.tile[ROWS - 1][0] = gemm_tile<ROWS, NR / V::W / 2 == 0 ? 1 : NR / V::W / 2>;
    t.tile[ROWS - 1][1] = gemm_tile<ROWS, NR / V::W>;
    fill_tiles<ROWS - 1>(t);
  }
}

// Row kernels over the ISA's vector type V: softmax, layer norm, the depthwise plane and one
// attention query tile. Included inside an ISA namespace after vecmath.inl.

inline int64_t round_up_w(int64_t n) { return (n + V::W - 1) / V::W * V::W; }
// (No std::min: an ISA file instantiates no std templates, which another ISA's file could
// otherwise share through the linker.)
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

void softmax_row(const float* x, float* y, int64_t n) {
  int64_t j = 0;
  V vm = V::set1(-__builtin_inff());
  for (; j + V::W <= n; j += V::W) vm = max(vm, V::load(x + j));
  float m = vm.max();
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  if (m == -__builtin_inff()) {  // every element masked out: no distribution, give zeros
    for (j = 0; j < n; ++j) y[j] = 0.f;
    return;
  }
  const V vmax = V::set1(m);
  V vs = V::zero();
  for (j = 0; j + V::W <= n; j += V::W) {
    V e = exp_v(V::load(x + j) - vmax);
    vs = vs + e;
    e.store(y + j);
  }
  float s = vs.sum();
  if (j < n) {
    const int rest = static_cast<int>(n - j);
    V e = exp_v(V::load_first(x + j, rest) - vmax);
    e.store_first(y + j, rest);
    for (int i = 0; i < rest; ++i) s += y[j + i];
  }
  const V inv = V::set1(1.f / s);
  for (j = 0; j + V::W <= n; j += V::W) (V::load(y + j) * inv).store(y + j);
  if (j < n) (V::load_first(y + j, static_cast<int>(n - j)) * inv).store_first(y + j, static_cast<int>(n - j));
}

void layer_norm_row(const float* x, const float* scale, const float* bias, float eps, float* y, int64_t n) {
  int64_t j = 0;
  V acc = V::zero();
  for (; j + V::W <= n; j += V::W) acc = acc + V::load(x + j);
  if (j < n) acc = acc + V::load_first(x + j, static_cast<int>(n - j));
  const float mean = acc.sum() / static_cast<float>(n);
  const V vmean = V::set1(mean);
  V sq = V::zero();
  for (j = 0; j + V::W <= n; j += V::W) {
    V d = V::load(x + j) - vmean;
    sq = fma(d, d, sq);
  }
  float var = sq.sum();
  for (; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  var /= static_cast<float>(n);
  const V rstd = V::set1(1.f / __builtin_sqrtf(var + eps));
  for (j = 0; j < n; j += V::W) {
    const int w = n - j < V::W ? static_cast<int>(n - j) : V::W;
    const bool full = w == V::W;
    V xv = full ? V::load(x + j) : V::load_first(x + j, w);
    V sv = full ? V::load(scale + j) : V::load_first(scale + j, w);
    V out = (xv - vmean) * rstd * sv;
    if (bias) out = out + (full ? V::load(bias + j) : V::load_first(bias + j, w));
    if (full)
      out.store(y + j);
    else
      out.store_first(y + j, w);
  }
}

// dst[j] = src[j * stride] for j < n (a row of a stride-phase plane, conv_phase.h).
void strided_copy(const float* src, int64_t stride, int64_t n, float* dst) {
  int64_t j = 0;
  if (stride == 1) {
    for (; j + V::W <= n; j += V::W) V::load(src + j).store(dst + j);
    if (j < n) V::load_first(src + j, static_cast<int>(n - j)).store_first(dst + j, static_cast<int>(n - j));
    return;
  } else if (stride == 2) {
    // load_even reads 2W floats: stop while the last one read is still inside the row.
    for (; j + V::W <= n && 2 * (j + V::W) - 1 <= 2 * (n - 1); j += V::W) V::load_even(src + 2 * j).store(dst + j);
    for (; j < n; j += V::W) {
      const int rest = n - j < V::W ? static_cast<int>(n - j) : V::W;
      V::load_even_first(src + 2 * j, rest).store_first(dst + j, rest);
    }
    return;
  }
  for (; j < n; ++j) dst[j] = src[j * stride];
}

// ---- depthwise -----------------------------------------------------------------------------

// out[j] = sum over taps t of w[t] * taps[t][j], j in [0, n): one depthwise output grid, each
// tap a contiguous (shifted) slice of a stride-phase plane (conv_phase.h). Four vectors at a
// time keep four FMA chains in flight.
void depthwise_grid(const float* const* taps, const float* w, int64_t ntaps, int64_t n, float* out) {
  int64_t j = 0;
  for (; j + 4 * V::W <= n; j += 4 * V::W) {
    V a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    for (int64_t t = 0; t < ntaps; ++t) {
      const V wv = V::set1(w[t]);
      const float* p = taps[t] + j;
      a0 = fma(wv, V::load(p), a0);
      a1 = fma(wv, V::load(p + V::W), a1);
      a2 = fma(wv, V::load(p + 2 * V::W), a2);
      a3 = fma(wv, V::load(p + 3 * V::W), a3);
    }
    a0.store(out + j), a1.store(out + j + V::W), a2.store(out + j + 2 * V::W), a3.store(out + j + 3 * V::W);
  }
  for (; j < n; j += V::W) {
    const int rest = n - j < V::W ? static_cast<int>(n - j) : V::W;
    V acc = V::zero();
    for (int64_t t = 0; t < ntaps; ++t) {
      const V x = rest == V::W ? V::load(taps[t] + j) : V::load_first(taps[t] + j, rest);
      acc = fma(V::set1(w[t]), x, acc);
    }
    if (rest == V::W)
      acc.store(out + j);
    else
      acc.store_first(out + j, rest);
  }
}

// out[j] = max over taps t of taps[t][j], j in [0, n): a max-pooling grid on the stride-phase
// planes (padding there holds -inf). Exact: max is order-independent.
// KernelTable::max_blocked_row. VV: V, a template parameter so that only the branch for its
// width is compiled.
template <class VV = V>
void max_blocked_row_on(const float* row, int64_t n, int64_t S, int64_t sw, int64_t dw, float* out) {
  constexpr int kB = 8;  // kConvBlock
  if constexpr (VV::W == 2 * kB) {  // output pixels ow and ow + 1 in one vector
    int64_t ow = 0;
    for (; ow + 2 <= n; ow += 2) {
      const float* p = row + ow * sw * kB;
      VV m = VV::load_halves(p, p + sw * kB);
      for (int64_t kw = 1; kw < S; ++kw) m = max(m, VV::load_halves(p + kw * dw * kB, p + (sw + kw * dw) * kB));
      m.store(out + ow * kB);
    }
    if (ow < n) {
      const float* p = row + ow * sw * kB;
      VV m = VV::load_first(p, kB);
      for (int64_t kw = 1; kw < S; ++kw) m = max(m, VV::load_first(p + kw * dw * kB, kB));
      m.store_first(out + ow * kB, kB);
    }
  } else {
    static_assert(kB % VV::W == 0);
    for (int64_t ow = 0; ow < n; ++ow)
      for (int q = 0; q < kB; q += VV::W) {
        const float* p = row + ow * sw * kB + q;
        VV m = VV::load(p);
        for (int64_t kw = 1; kw < S; ++kw) m = max(m, VV::load(p + kw * dw * kB));
        m.store(out + ow * kB + q);
      }
  }
}
void max_blocked_row(const float* row, int64_t n, int64_t S, int64_t sw, int64_t dw, float* out) {
  max_blocked_row_on(row, n, S, sw, dw, out);
}

void max_grid(const float* const* taps, int64_t ntaps, int64_t n, float* out) {
  int64_t j = 0;
  for (; j + 4 * V::W <= n; j += 4 * V::W) {
    const float* p0 = taps[0] + j;
    V a0 = V::load(p0), a1 = V::load(p0 + V::W), a2 = V::load(p0 + 2 * V::W), a3 = V::load(p0 + 3 * V::W);
    for (int64_t t = 1; t < ntaps; ++t) {
      const float* p = taps[t] + j;
      a0 = max(a0, V::load(p));
      a1 = max(a1, V::load(p + V::W));
      a2 = max(a2, V::load(p + 2 * V::W));
      a3 = max(a3, V::load(p + 3 * V::W));
    }
    a0.store(out + j), a1.store(out + j + V::W), a2.store(out + j + 2 * V::W), a3.store(out + j + 3 * V::W);
  }
  for (; j < n; j += V::W) {
    const int rest = n - j < V::W ? static_cast<int>(n - j) : V::W;
    auto at = [&](int64_t t) { return rest == V::W ? V::load(taps[t] + j) : V::load_first(taps[t] + j, rest); };
    V acc = at(0);
    for (int64_t t = 1; t < ntaps; ++t) acc = max(acc, at(t));
    if (rest == V::W)
      acc.store(out + j);
    else
      acc.store_first(out + j, rest);
  }
}

// KernelTable::max_pool_3x3s2_row: the three rows' maximum first, column by column, into a
// buffer on the stack (border columns copied from the nearest inside one), then each output the
// maximum of that buffer's columns 2j, 2j + 1 and 2j + 2 (its even elements, odd elements, and
// even elements one pair on). Both passes are whole vectors but for masked tails. Taking all
// nine taps per output from the rows instead, with scalar loops for the borders and the tail,
// ran resnet's 64 x 112 x 112 pool at 230 us on Zen 5 (8 of a row's 56 outputs were scalar).
void max_pool_3x3s2_row(const float* const* rows, int64_t n, int64_t width, int64_t pad_left, float* out) {
  constexpr int64_t kBlock = 64;  // outputs per pass: their 2 * 64 + 1 columns stay in L1
  alignas(64) float col[2 * kBlock + 4 * V::W];
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nb = n - j0 < kBlock ? n - j0 : kBlock;
    // Columns a .. b of the rows are col[0 .. 2 nb]; those inside the rows, lo .. hi, are read.
    const int64_t a = 2 * j0 - pad_left, b = a + 2 * nb;
    const int64_t lo = a > 0 ? a : 0, hi = b < width - 1 ? b : width - 1;
    float* c = col + (lo - a);
    for (int64_t k = 0; k <= hi - lo; k += V::W) {
      const int rest = static_cast<int>(hi - lo + 1 - k < V::W ? hi - lo + 1 - k : V::W);
      const float* r0 = rows[0] + lo + k;
      const float* r1 = rows[1] + lo + k;
      const float* r2 = rows[2] + lo + k;
      if (rest == V::W)
        max(max(V::load(r0), V::load(r1)), V::load(r2)).store(c + k);
      else  // masked: nothing past the row is read
        max(max(V::load_first(r0, rest), V::load_first(r1, rest)), V::load_first(r2, rest)).store(c + k);
    }
    for (int64_t i = 0; i < lo - a; ++i) col[i] = col[lo - a];
    for (int64_t i = hi - a + 1; i <= b - a; ++i) col[i] = col[hi - a];
    float* o = out + j0;
    int64_t j = 0;
    // A whole vector uses col up to 2 (j + W) <= 2 nb; load_even also loads the float after
    // that (inside col, not always written) and its permute drops it.
    for (; j + V::W <= nb; j += V::W)
      max(max(V::load_even(col + 2 * j), V::load_odd(col + 2 * j)), V::load_even(col + 2 * j + 2)).store(o + j);
    if (j < nb) {
      const int rest = static_cast<int>(nb - j);
      max(max(V::load_even_first(col + 2 * j, rest), V::load_even_first(col + 2 * j + 1, rest)),
          V::load_even_first(col + 2 * j + 2, rest))
          .store_first(o + j, rest);
    }
  }
}

// ---- pixel-row GEMM panels (conv_pixel.cpp) -----------------------------------------------

// One mr-row A panel of the pixel-row convolution GEMM: out[q*mr + r] is im2col row q at the
// panel's pixel r. The panel's pixels come as runs of consecutive offsets into each row:
// run i copies rows[q][runs[i].src + 0..len) to out[q*mr + runs[i].dst + 0..len). Panel rows
// no run covers (past the last pixel) are zero when covered < mr.
void pack_a_runs(const float* const* rows, int64_t kc, const PixelRun* runs, int nruns, int covered, int mr,
                 float* out) {
  for (int64_t q = 0; q < kc; ++q, out += mr) {
    if (covered < mr)
      for (int r = 0; r < mr; r += V::W) {
        const int n = mr - r < V::W ? mr - r : V::W;
        V::zero().store_first(out + r, n);
      }
    const float* row = rows[q];
    for (int i = 0; i < nruns; ++i) {
      const float* src = row + runs[i].src;
      float* dst = out + runs[i].dst;
      for (int j = 0; j < runs[i].len; j += V::W) {
        const int n = runs[i].len - j < V::W ? runs[i].len - j : V::W;
        if (n == V::W)
          V::load(src + j).store(dst + j);
        else
          V::load_first(src + j, n).store_first(dst + j, n);
      }
    }
  }
}

// The W x W block of src at (i0, j0), ni rows by nj columns of it (the rest zero), transposed in
// registers: r[j] = column j0 + j, rows i0 .. i0 + ni.
[[gnu::always_inline]] inline void load_block_transposed(const float* src, int64_t lds, int64_t i0, int64_t j0, int ni, int nj, V r[V::W]) {
#pragma GCC unroll 16
  for (int i = 0; i < V::W; ++i) {
    const float* p = src + (i0 + i) * lds + j0;
    r[i] = i >= ni ? V::zero() : nj == V::W ? V::load(p) : V::load_first(p, nj);
  }
  transpose_square(r);
}

// dst[j*ldd + i] = src[i*lds + j] for i < rows, j < cols, in W x W register blocks.
void transpose_blocks(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  for (int64_t i0 = 0; i0 < rows; i0 += V::W) {
    const int ni = static_cast<int>(imin(V::W, rows - i0));
    for (int64_t j0 = 0; j0 < cols; j0 += V::W) {
      const int nj = static_cast<int>(imin(V::W, cols - j0));
      V r[V::W];
      load_block_transposed(src, lds, i0, j0, ni, nj, r);
      // Unrolled over the whole block, so r stays in registers (a loop to nj kept it in memory).
#pragma GCC unroll 16
      for (int j = 0; j < V::W; ++j) {
        if (j >= nj) break;
        if (ni == V::W) r[j].store(dst + (j0 + j) * ldd + i0);
        else r[j].store_first(dst + (j0 + j) * ldd + i0, ni);
      }
    }
  }
}

// transpose_blocks with the epilogue applied to each destination row while it is in a register:
// the same operations, in the same order, as the transpose followed by epilogue_tile(dst, ldd,
// cols, rows, e) (destination row j is the epilogue's row j; its vectors start at multiples of W
// as epilogue_rows's do). The direct and pixel-gemm convolutions write NCHW this way.
template <Act A>
void transpose_epilogue_rows(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd,
                             const TileEpilogue& e) {
  const V alpha = V::set1(e.alpha), a = V::set1(e.act_alpha), b = V::set1(e.act_beta);
  const bool scale = e.alpha != 1.f, col_bias = e.bias_mode == TileEpilogue::Bias::PerCol;
  for (int64_t i0 = 0; i0 < rows; i0 += V::W) {
    const int ni = static_cast<int>(imin(V::W, rows - i0));
    for (int64_t j0 = 0; j0 < cols; j0 += V::W) {
      const int nj = static_cast<int>(imin(V::W, cols - j0));
      V r[V::W];
      load_block_transposed(src, lds, i0, j0, ni, nj, r);
#pragma GCC unroll 16
      for (int j = 0; j < V::W; ++j) {
        if (j >= nj) break;
        const int64_t row = j0 + j;
        V row_bias = V::zero();
        if (e.bias_mode == TileEpilogue::Bias::PerRow) row_bias = V::set1(e.bias[row]);
        if (e.bias_mode == TileEpilogue::Bias::Scalar) row_bias = V::set1(e.bias[0]);
        const float* res = e.residual ? e.residual + row * e.ldr + i0 : nullptr;
        V x = epilogue_sum(r[j], scale, alpha, row_bias, col_bias ? e.bias + i0 : nullptr, res, ni);
        x = activate<A>(x, a, b);
        if (ni == V::W) x.store(dst + row * ldd + i0);
        else x.store_first(dst + row * ldd + i0, ni);
      }
    }
  }
}

void transpose_epilogue(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd,
                        const TileEpilogue& e) {
  with_act(e.act, [&]<Act A>() { transpose_epilogue_rows<A>(src, lds, rows, cols, dst, ldd, e); });
}

// Sum of x[0:n] in double, four accumulators (the AVX-512 table overrides it with vectors).
// Double sums of floats are exact until the values span 2^29 in magnitude, so the result
// matches a sequential double sum (the reference kernels') in practice.
double sum_row(const float* x, int64_t n) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) a0 += x[j], a1 += x[j + 1], a2 += x[j + 2], a3 += x[j + 3];
  for (; j < n; ++j) a0 += x[j];
  return (a0 + a1) + (a2 + a3);
}

// Per-lane sums of rows of 8 floats in double, two sets of partial sums (the AVX2 and AVX-512
// tables override it with vectors).
void sum_block_rows(const float* x, int64_t rows, double* acc) {
  double a[8] = {}, b[8] = {};
  int64_t i = 0;
  for (; i + 2 <= rows; i += 2, x += 16)
    for (int l = 0; l < 8; ++l) a[l] += x[l], b[l] += x[8 + l];
  for (; i < rows; ++i, x += 8)
    for (int l = 0; l < 8; ++l) a[l] += x[l];
  for (int l = 0; l < 8; ++l) acc[l] = a[l] + b[l];
}

// ---- attention -----------------------------------------------------------------------------
// Flash-style: per key block, S = Q·Kᵀ and O += P·V for groups of kAttnRows query rows with
// register tiles (kAttnRows rows x 4 vectors), the online softmax in between on whole rows.

// Query rows per register tile: rows x 4 vectors of accumulators plus 4 loaded vectors must fit
// the register file (32 zmm: 4 rows, 6 measured no faster; 16 ymm/xmm: 2 rows). At most 8.
constexpr int kAttnRows = V::W >= 16 ? 4 : 2;

// sc[r*BK + j] = q_r · kt[:, j] for r < R, j < n; kt is [D][BK] (the key block transposed,
// zero past n up to whole vectors). Accumulators stay in registers: every index is a constant
// after unrolling.
template <int R>
inline void attention_scores(const float* q, int64_t q_rs, const float* kt, int64_t D, int64_t n, float* sc) {
  constexpr int64_t BK = kAttentionKeyBlock;
  int64_t j = 0;
  for (; j + 4 * V::W <= n; j += 4 * V::W) {
    V acc[R][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[r][u] = V::zero();
    for (int64_t d = 0; d < D; ++d) {
      const float* k = kt + d * BK + j;
      V kv[4];
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) kv[u] = V::load(k + u * V::W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V qd = V::set1(q[r * q_rs + d]);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) acc[r][u] = fma(qd, kv[u], acc[r][u]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[r][u].store(sc + r * BK + j + u * V::W);
  }
  for (; j < n; j += V::W) {  // one vector of keys at a time (zero-padded in kt)
    V acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = V::zero();
    for (int64_t d = 0; d < D; ++d) {
      const V kv = V::load(kt + d * BK + j);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r] = fma(V::set1(q[r * q_rs + d]), kv, acc[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r].store(sc + r * BK + j);
  }
}

// o[r*Dv + :] += sum_j p[r*BK + j] * v[j*v_rs + :] for r < R, j < n.
template <int R>
inline void attention_pv(const float* p, int64_t n, const float* v, int64_t v_rs, int64_t Dv, float* o) {
  constexpr int64_t BK = kAttentionKeyBlock;
  int64_t dv = 0;
  for (; dv + 4 * V::W <= Dv; dv += 4 * V::W) {
    V acc[R][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[r][u] = V::load(o + r * Dv + dv + u * V::W);
    for (int64_t j = 0; j < n; ++j) {
      const float* vp = v + j * v_rs + dv;
      V vb[4];
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) vb[u] = V::load(vp + u * V::W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V pr = V::set1(p[r * BK + j]);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) acc[r][u] = fma(pr, vb[u], acc[r][u]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[r][u].store(o + r * Dv + dv + u * V::W);
  }
  for (; dv < Dv; dv += V::W) {  // one (possibly partial) vector of Dv at a time
    const int w = Dv - dv < V::W ? static_cast<int>(Dv - dv) : V::W;
    V acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = V::load_first(o + r * Dv + dv, w);
    for (int64_t j = 0; j < n; ++j) {
      const V vb = V::load_first(v + j * v_rs + dv, w);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r] = fma(V::set1(p[r * BK + j]), vb, acc[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r].store_first(o + r * Dv + dv, w);
  }
}

// One group of R query rows against one key block: scores, online softmax, O update.
template <int R>
inline void attention_rows(const AttentionTile& t, int64_t g, int64_t j0, int64_t nb, const float* kt, float* sc,
                           float* o, float* m, float* l) {
  constexpr int64_t BK = kAttentionKeyBlock;
  const float neg_inf = -__builtin_inff();
  // Keys row r may see in this block (causal: up to its own position + offset).
  int64_t lim[R], n = 0;
  for (int r = 0; r < R; ++r) {
    lim[r] = nb;
    if (t.causal) lim[r] = imin(nb, t.i0 + g + r + t.causal_offset + 1 - j0);
    n = lim[r] > n ? lim[r] : n;
  }
  if (n <= 0) return;
  attention_scores<R>(t.q + g * t.q_rs, t.q_rs, kt, t.D, n, sc);
  const V vscale = V::set1(t.scale);
  for (int r = 0; r < R; ++r) {
    float* s = sc + r * BK;
    const float* mrow = t.mask ? t.mask + (g + r) * t.mask_rs + j0 * t.mask_cs : nullptr;
    // Scale, add the mask, hide keys past the row's causal limit; block max.
    V vmx = V::set1(neg_inf);
    for (int64_t j = 0; j < n; j += V::W) {
      const int w = n - j < V::W ? static_cast<int>(n - j) : V::W;
      V x = V::load_first(s + j, w) * vscale;
      if (mrow) {
        if (t.mask_cs == 1) x = x + V::load_first(mrow + j, w);
        else if (t.mask_cs == 0) x = x + V::set1(mrow[0]);
        else {
          alignas(64) float mv[V::W];
          for (int q = 0; q < w; ++q) mv[q] = mrow[(j + q) * t.mask_cs];
          x = x + V::load_first(mv, w);
        }
      }
      x.store_first(s + j, w);
    }
    for (int64_t j = lim[r] > 0 ? lim[r] : 0; j < n; ++j) s[j] = neg_inf;  // past the causal limit
    int64_t j = 0;
    for (; j + V::W <= n; j += V::W) vmx = max(vmx, V::load(s + j));
    for (; j < n; ++j) vmx = max(vmx, V::set1(s[j]));
    const float bmax = vmx.max();
    const float m_new = bmax > m[g + r] ? bmax : m[g + r];
    float* orow = o + (g + r) * t.Dv;
    if (m_new == neg_inf) {  // every key so far masked out: this row adds nothing yet
      for (int64_t j = 0; j < n; ++j) s[j] = 0.f;
      continue;
    }
    const float corr = m[g + r] == neg_inf ? 0.f : __builtin_expf(m[g + r] - m_new);
    const V vm = V::set1(m_new);
    V vs = V::zero();
    for (int64_t j = 0; j < n; j += V::W) {
      const int w = n - j < V::W ? static_cast<int>(n - j) : V::W;
      V e = exp_v(V::load_first(s + j, w) - vm);
      if (w < V::W) {
        e.store_first(s + j, w);
        e = V::load_first(s + j, w);  // lanes past n read as 0
      } else {
        e.store(s + j);
      }
      vs = vs + e;
    }
    l[g + r] = l[g + r] * corr + vs.sum();
    m[g + r] = m_new;
    if (corr != 1.f) {
      const V vc = V::set1(corr);
      for (int64_t dv = 0; dv < t.Dv; dv += V::W) {
        const int w = t.Dv - dv < V::W ? static_cast<int>(t.Dv - dv) : V::W;
        (V::load_first(orow + dv, w) * vc).store_first(orow + dv, w);
      }
    }
  }
  attention_pv<R>(sc, n, t.v + j0 * t.v_rs, t.v_rs, t.Dv, o + g * t.Dv);
}

void attention_tile(const AttentionTile& t) {
  constexpr int64_t BK = kAttentionKeyBlock;
  float* kt = t.scratch;                // [D][BK]
  float* sc = kt + t.D * BK;            // [kAttnRows][BK] scores / probabilities of a row group
  static_assert(kAttnRows <= 8, "attention_scratch_floats holds 8 rows of scores");
  float* o = sc + kAttnRows * BK;       // [rows][Dv] running outputs
  float* m = o + t.rows * t.Dv;         // [rows] running max
  float* l = m + t.rows;                // [rows] running sum
  for (int64_t i = 0; i < t.rows * t.Dv; ++i) o[i] = 0.f;
  for (int64_t i = 0; i < t.rows; ++i) m[i] = -__builtin_inff(), l[i] = 0.f;
  int64_t key_end = t.Sk;
  if (t.causal) key_end = imin(t.Sk, t.i0 + t.rows + t.causal_offset);
  for (int64_t j0 = 0; j0 < key_end; j0 += BK) {
    const int64_t nb = imin(BK, key_end - j0);
    // The key block transposed (zero past nb up to whole vectors).
    t.transpose(t.k + j0 * t.k_rs, t.k_rs, nb, t.D, kt, BK);
    for (int64_t d = 0; d < t.D; ++d)
      for (int64_t j = nb; j < round_up_w(nb) && j < BK; ++j) kt[d * BK + j] = 0.f;
    int64_t g = 0;
    for (; g + kAttnRows <= t.rows; g += kAttnRows) attention_rows<kAttnRows>(t, g, j0, nb, kt, sc, o, m, l);
    switch (t.rows - g) {  // the last, partial group
      case 5: attention_rows<5>(t, g, j0, nb, kt, sc, o, m, l); break;
      case 4: attention_rows<4>(t, g, j0, nb, kt, sc, o, m, l); break;
      case 3: attention_rows<3>(t, g, j0, nb, kt, sc, o, m, l); break;
      case 2: attention_rows<2>(t, g, j0, nb, kt, sc, o, m, l); break;
      case 1: attention_rows<1>(t, g, j0, nb, kt, sc, o, m, l); break;
      default: break;
    }
  }
  for (int64_t i = 0; i < t.rows; ++i) {
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
    for (int64_t dv = 0; dv < t.Dv; ++dv) t.y[i * t.y_rs + dv] = o[i * t.Dv + dv] * inv;
  }
}

// ---- panel packing ---------------------------------------------------------------------------

// The A panel through register transposes, for tables whose mr fits in one vector (AVX2's 6 of
// 8, AVX-512's 6 of 16): out[q*mr + r] = A[r*lda + q], W columns of A at a time. Each column is
// stored as a whole vector (its lanes past mr are zero rows and spill into the next columns'
// slots, which the next stores overwrite) while the vector ends inside the panel, the last
// columns as their mr lanes only. The reference interpreter's GEMMs pack their A operand per
// call; on silero_vad the scalar packer was a quarter of the run.
void pack_a_panel_blocks(const float* A, int64_t lda, int64_t rows, int64_t kc, int mr, float* out) {
  for (int64_t q0 = 0; q0 < kc; q0 += V::W) {
    const int nq = static_cast<int>(imin(V::W, kc - q0));
    V r[V::W];
    load_block_transposed(A, lda, 0, q0, static_cast<int>(rows), nq, r);
#pragma GCC unroll 16
    for (int j = 0; j < V::W; ++j) {
      if (j >= nq) break;
      float* dst = out + (q0 + j) * mr;
      if ((q0 + j) * mr + V::W <= kc * mr) r[j].store(dst);
      else r[j].store_first(dst, mr);
    }
  }
}

// The scalar A panel packer, for tables whose mr is wider than a vector.
void pack_a_panel_portable(const float* A, int64_t lda, int64_t rows, int64_t kc, int mr, float* out) {
  for (int64_t r = 0; r < mr; ++r) {
    if (r < rows) {
      const float* src = A + r * lda;
      for (int64_t q = 0; q < kc; ++q) out[q * mr + r] = src[q];
    } else {
      for (int64_t q = 0; q < kc; ++q) out[q * mr + r] = 0.f;
    }
  }
}

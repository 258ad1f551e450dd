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

// ---- attention -----------------------------------------------------------------------------

// scores[0:n] = Q row · Kᵀ block, with Kᵀ block stored [D][kAttentionKeyBlock].
inline void attention_scores(const float* q, const float* kt, int64_t D, int64_t n, float* scores) {
  constexpr int64_t BK = kAttentionKeyBlock;
  for (int64_t j = 0; j < n; j += 4 * V::W) {
    V acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
    const int nv = static_cast<int>((n - j + V::W - 1) / V::W < 4 ? (n - j + V::W - 1) / V::W : 4);
    for (int64_t d = 0; d < D; ++d) {
      const V qd = V::set1(q[d]);
      const float* k = kt + d * BK + j;
      for (int u = 0; u < nv; ++u) acc[u] = fma(qd, V::load(k + u * V::W), acc[u]);
    }
    for (int u = 0; u < nv; ++u) acc[u].store(scores + j + u * V::W);
  }
}

void attention_tile(const AttentionTile& t) {
  constexpr int64_t BK = kAttentionKeyBlock;
  const float neg_inf = -__builtin_inff();
  float* kt = t.scratch;                // [D][BK]
  float* sc = kt + t.D * BK;            // [BK] scores of one row
  float* o = sc + BK;                   // [rows][Dv] running outputs
  float* m = o + t.rows * t.Dv;         // [rows] running max
  float* l = m + t.rows;                // [rows] running sum
  for (int64_t i = 0; i < t.rows * t.Dv; ++i) o[i] = 0.f;
  for (int64_t i = 0; i < t.rows; ++i) m[i] = neg_inf, l[i] = 0.f;
  const bool causal = t.causal;
  int64_t key_end = t.Sk;
  if (causal) key_end = imin(t.Sk, t.i0 + t.rows + t.causal_offset);

  for (int64_t j0 = 0; j0 < key_end; j0 += BK) {
    const int64_t nb = imin(BK, key_end - j0);
    for (int64_t j = 0; j < round_up_w(nb); ++j)
      for (int64_t d = 0; d < t.D; ++d) kt[d * BK + j] = j < nb ? t.k[(j0 + j) * t.k_rs + d] : 0.f;
    for (int64_t i = 0; i < t.rows; ++i) {
      int64_t n = nb;
      if (causal) n = imin(nb, t.i0 + i + t.causal_offset + 1 - j0);
      if (n <= 0) continue;
      attention_scores(t.q + i * t.q_rs, kt, t.D, n, sc);
      const float* mrow = t.mask ? t.mask + i * t.mask_rs + j0 * t.mask_cs : nullptr;
      float bmax = neg_inf;
      for (int64_t j = 0; j < n; ++j) {
        float s = sc[j] * t.scale + (mrow ? mrow[j * t.mask_cs] : 0.f);
        sc[j] = s;
        bmax = s > bmax ? s : bmax;
      }
      const float m_new = bmax > m[i] ? bmax : m[i];
      if (m_new == neg_inf) continue;  // every key so far masked out
      const float corr = m[i] == neg_inf ? 0.f : __builtin_expf(m[i] - m_new);
      const V vm = V::set1(m_new);
      V vs = V::zero();
      int64_t j = 0;
      for (; j + V::W <= n; j += V::W) {
        V e = exp_v(V::load(sc + j) - vm);
        e.store(sc + j);
        vs = vs + e;
      }
      float psum = vs.sum();
      for (; j < n; ++j) {
        sc[j] = __builtin_expf(sc[j] - m_new);
        psum += sc[j];
      }
      l[i] = l[i] * corr + psum;
      m[i] = m_new;
      float* oi = o + i * t.Dv;
      const V vc = V::set1(corr);
      for (int64_t dv = 0; dv < t.Dv; dv += V::W) {
        const int w = t.Dv - dv < V::W ? static_cast<int>(t.Dv - dv) : V::W;
        V acc = V::load_first(oi + dv, w) * vc;
        const float* vp = t.v + j0 * t.v_rs + dv;
        if (w == V::W) {
          for (int64_t jj = 0; jj < n; ++jj) acc = fma(V::set1(sc[jj]), V::load(vp + jj * t.v_rs), acc);
        } else {
          for (int64_t jj = 0; jj < n; ++jj) acc = fma(V::set1(sc[jj]), V::load_first(vp + jj * t.v_rs, w), acc);
        }
        acc.store_first(oi + dv, w);
      }
    }
  }
  for (int64_t i = 0; i < t.rows; ++i) {
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
    for (int64_t dv = 0; dv < t.Dv; ++dv) t.y[i * t.y_rs + dv] = o[i * t.Dv + dv] * inv;
  }
}

// ---- panel packing ---------------------------------------------------------------------------

// The portable A panel packer (AVX-512 replaces it with a register transpose).
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

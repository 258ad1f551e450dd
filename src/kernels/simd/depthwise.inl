// A depthwise plane (KernelTable::depthwise_plane), written once over the ISA's vector type V.
// The input's interior is copied into a zero-padded plane whose padding the caller zeroed once
// for the whole convolution, so the per-channel set-up is that copy; every output vector then
// sums R x S plain (unaligned) loads at offsets that are the same for every output vector.
// Stride-2 rows are deinterleaved by the copy (depthwise_padded), once per input float instead
// of a load_even (two loads, two shuffles) per tap. Lanes past a row's end read the padded
// plane's next floats and are not stored.
//
// Eight output vectors at a time keep eight FMA chains in flight: RG output rows x NV
// consecutive vectors of each (1 x 8 on wide rows ... 8 x 1 on rows of one vector), so a lane's
// input is a row pointer plus a compile-time offset. (The earlier kernel walked the vectors in
// row order with a pointer per lane: on Zen 3 its bookkeeping cost more than the FMAs, 20
// GFLOP/s on mobilenet_v2's 56x56 planes.)
template <int SW, Act A, int RG, int NV>
void depthwise_groups(const DepthwisePlane& g, const DepthwisePadded& pp, const float* w, const float* padded,
                      float* out, const TileEpilogue& e) {
  constexpr int64_t kW = V::W;
  const int64_t nvec = (g.OW + kW - 1) / kW;  // >= NV (depthwise_plane_sw)
  const int last_n = static_cast<int>(g.OW - (nvec - 1) * kW);
  const V alpha = V::set1(e.alpha), bias = V::set1(e.bias ? e.bias[0] : 0.f);
  const V act_a = V::set1(e.act_alpha), act_b = V::set1(e.act_beta);
  for (int64_t oh = 0; oh < g.OH; oh += RG) {
    // Rows past the plane repeat its last row and are not stored.
    const float* src[RG];
    int64_t dst[RG];
#pragma GCC unroll 8
    for (int r = 0; r < RG; ++r) {
      const int64_t h = oh + r < g.OH ? oh + r : g.OH - 1;
      src[r] = padded + h * g.stride_h * pp.Wp;
      dst[r] = oh + r < g.OH ? h * g.OW : -1;
    }
    for (int64_t v0 = 0; v0 < nvec; v0 += NV) {
      // The row's last group ends at its last vector: it may recompute vectors of the one before.
      const int64_t vi = v0 + NV <= nvec ? v0 : nvec - NV;
      V acc[RG][NV];
#pragma GCC unroll 8
      for (int r = 0; r < RG; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
      for (int64_t kh = 0; kh < g.R; ++kh) {
        const float* wr = w + kh * g.S;
        const int64_t row_off = kh * g.dil_h * pp.Wp + vi * kW;
        for (int64_t kw = 0; kw < g.S; ++kw) {
          // Stride 2: column 2i + o of the row is float i + o/2 of its (o % 2) half.
          const int64_t o = kw * g.dil_w, off = row_off + (SW == 1 ? o : (o & 1) * (pp.Wp / 2) + (o >> 1));
          const V wv = V::set1(wr[kw]);
#pragma GCC unroll 8
          for (int r = 0; r < RG; ++r)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] = fma(wv, V::load(src[r] + off + v * kW), acc[r][v]);
        }
      }
      // The epilogue on the accumulators: y = act(acc * alpha + bias + residual), the residual
      // plane in the output's layout (e.residual is this plane's first element).
#pragma GCC unroll 8
      for (int r = 0; r < RG; ++r) {
        if (dst[r] < 0) continue;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          const int64_t at = dst[r] + (vi + v) * kW;
          const int n = vi + v == nvec - 1 ? last_n : static_cast<int>(kW);
          const bool full = n == kW;
          V y = fma(acc[r][v], alpha, bias);
          if (e.residual) y = y + (full ? V::load(e.residual + at) : V::load_first(e.residual + at, n));
          y = activate<A>(y, act_a, act_b);
          if (full)
            y.store(out + at);
          else
            y.store_first(out + at, n);
        }
      }
    }
  }
}

template <int SW, Act A>
void depthwise_plane_sw(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                        const TileEpilogue& e) {
  constexpr int64_t kW = V::W;
  const DepthwisePadded pp = depthwise_padded(g, kW);
  // The interior: input row h at padded row pad_top + h, column pad_left (deinterleaved when
  // SW is 2: column c at float c/2 of the row's (c % 2) half).
  for (int64_t h = 0; h < g.H; ++h) {
    const float* src = x + h * g.W;
    float* row = padded + (g.pad_top + h) * pp.Wp;
    int64_t j = 0;
    if constexpr (SW == 1) {
      float* dst = row + g.pad_left;
      for (; j + kW <= g.W; j += kW) V::load(src + j).store(dst + j);
      if (j < g.W) V::load_first(src + j, static_cast<int>(g.W - j)).store_first(dst + j, static_cast<int>(g.W - j));
    } else {
      // Input columns j + 2i go to the half of parity (pad_left + j) % 2, j + 2i + 1 to the other.
      const int64_t half = pp.Wp / 2;
      float* ev = row + (g.pad_left & 1) * half + g.pad_left / 2;         // where input column 0 goes
      float* od = row + ((g.pad_left + 1) & 1) * half + (g.pad_left + 1) / 2;  // input column 1
      // Whole vectors while the 2W floats read stay inside the plane (a row's last ones read the
      // next row's first columns and store only this row's); single floats on the last row.
      const int64_t readable = (g.H - h) * g.W;
      for (; j < g.W && j + 2 * kW <= readable; j += 2 * kW) {
        const int64_t m = g.W - j;
        V::load_even(src + j).store_first(ev + j / 2, static_cast<int>(m >= 2 * kW ? kW : (m + 1) / 2));
        V::load_odd(src + j).store_first(od + j / 2, static_cast<int>(m >= 2 * kW ? kW : m / 2));
      }
      for (; j + 1 < g.W; j += 2) ev[j / 2] = src[j], od[j / 2] = src[j + 1];
      if (j < g.W) ev[j / 2] = src[j];
    }
  }
  const int64_t nvec = (g.OW + kW - 1) / kW;
  if (nvec >= 8)
    depthwise_groups<SW, A, 1, 8>(g, pp, w, padded, out, e);
  else if (nvec >= 4)
    depthwise_groups<SW, A, 2, 4>(g, pp, w, padded, out, e);
  else if (nvec >= 2)
    depthwise_groups<SW, A, 4, 2>(g, pp, w, padded, out, e);
  else
    depthwise_groups<SW, A, 8, 1>(g, pp, w, padded, out, e);
}

template <int SW>
void depthwise_plane_act(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                         const TileEpilogue& e) {
  with_act(e.act, [&]<Act A>() { depthwise_plane_sw<SW, A>(g, x, w, padded, out, e); });
}

void depthwise_plane(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                     const TileEpilogue& e) {
  if (g.stride_w == 1)
    depthwise_plane_act<1>(g, x, w, padded, out, e);
  else
    depthwise_plane_act<2>(g, x, w, padded, out, e);
}

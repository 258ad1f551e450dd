// A depthwise plane (KernelTable::depthwise_plane), written once over the ISA's vector type V.
// The input's interior is copied into a zero-padded plane whose padding the caller zeroed once
// for the whole convolution, so the per-channel set-up is that copy; every output vector then
// sums R x S plain (unaligned) loads at offsets that are the same for every output vector, eight
// output vectors (of any rows) at a time to keep eight FMA chains in flight. Stride-2 rows read
// 2W floats and keep the even ones. Lanes past a row's end read the padded plane's next
// floats and are not stored.

template <int SW, Act A>
void depthwise_plane_sw(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                        const TileEpilogue& e) {
  constexpr int64_t kW = V::W, kLanes = 8;
  const DepthwisePadded pp = depthwise_padded(g, kW);
  // The interior: input row h at padded row pad_top + h, column pad_left.
  for (int64_t h = 0; h < g.H; ++h) {
    const float* src = x + h * g.W;
    float* dst = padded + (g.pad_top + h) * pp.Wp + g.pad_left;
    int64_t j = 0;
    for (; j + kW <= g.W; j += kW) V::load(src + j).store(dst + j);
    if (j < g.W) V::load_first(src + j, static_cast<int>(g.W - j)).store_first(dst + j, static_cast<int>(g.W - j));
  }
  const V alpha = V::set1(e.alpha), bias = V::set1(e.bias ? e.bias[0] : 0.f);
  const V act_a = V::set1(e.act_alpha), act_b = V::set1(e.act_beta);
  const int64_t nvec = (g.OW + kW - 1) / kW, npos = g.OH * nvec;
  // Output vectors (oh, vi) in row order, kLanes at a time; the position advances without
  // divisions (they would cost more than the FMAs of a small plane).
  int64_t oh = 0, vi = 0;
  for (int64_t p = 0; p < npos; p += kLanes) {
    const float* base[kLanes];
    float* dst[kLanes];
    int n[kLanes];
    for (int64_t k = 0; k < kLanes; ++k) {
      if (p + k < npos) {
        base[k] = padded + oh * g.stride_h * pp.Wp + vi * kW * SW;
        dst[k] = out + oh * g.OW + vi * kW;
        n[k] = static_cast<int>(g.OW - vi * kW < kW ? g.OW - vi * kW : kW);
        if (++vi == nvec) vi = 0, ++oh;
      } else {  // past the end: recomputes the last vector, not stored
        base[k] = base[k - 1], dst[k] = nullptr, n[k] = 0;
      }
    }
    V acc[kLanes];
#pragma GCC unroll 8
    for (int k = 0; k < kLanes; ++k) acc[k] = V::zero();
    for (int64_t kh = 0; kh < g.R; ++kh) {
      const float* wr = w + kh * g.S;
      const int64_t row_off = kh * g.dil_h * pp.Wp;
      for (int64_t kw = 0; kw < g.S; ++kw) {
        const int64_t off = row_off + kw * g.dil_w;
        const V wv = V::set1(wr[kw]);
#pragma GCC unroll 8
        for (int k = 0; k < kLanes; ++k)
          acc[k] = fma(wv, SW == 1 ? V::load(base[k] + off) : V::load_even(base[k] + off), acc[k]);
      }
    }
    // The epilogue on the accumulators: y = act(acc * alpha + bias + residual).
    for (int64_t k = 0; k < kLanes; ++k) {
      if (n[k] == 0) continue;
      const bool full = n[k] == kW;
      V y = fma(acc[k], alpha, bias);
      if (e.residual) {
        const float* r = e.residual + (dst[k] - out);  // the residual plane has the output's layout
        y = y + (full ? V::load(r) : V::load_first(r, n[k]));
      }
      y = activate<A>(y, act_a, act_b);
      if (full)
        y.store(dst[k]);
      else
        y.store_first(dst[k], n[k]);
    }
  }
}

template <int SW>
void depthwise_plane_act(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                         const TileEpilogue& e) {
  switch (e.act) {
#define KILN_DEPTHWISE_CASE(a) \
  case Act::a: return depthwise_plane_sw<SW, Act::a>(g, x, w, padded, out, e);
    KILN_DEPTHWISE_CASE(None)
    KILN_DEPTHWISE_CASE(Relu)
    KILN_DEPTHWISE_CASE(LeakyRelu)
    KILN_DEPTHWISE_CASE(Clip)
    KILN_DEPTHWISE_CASE(Sigmoid)
    KILN_DEPTHWISE_CASE(Tanh)
    KILN_DEPTHWISE_CASE(Silu)
    KILN_DEPTHWISE_CASE(HardSigmoid)
    KILN_DEPTHWISE_CASE(HardSwish)
    KILN_DEPTHWISE_CASE(Gelu)
    KILN_DEPTHWISE_CASE(GeluTanh)
#undef KILN_DEPTHWISE_CASE
  }
}

void depthwise_plane(const DepthwisePlane& g, const float* x, const float* w, float* padded, float* out,
                     const TileEpilogue& e) {
  if (g.stride_w == 1)
    depthwise_plane_act<1>(g, x, w, padded, out, e);
  else
    depthwise_plane_act<2>(g, x, w, padded, out, e);
}

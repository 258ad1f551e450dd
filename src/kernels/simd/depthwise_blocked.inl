// The channel-blocked depthwise kernel (KernelTable::depthwise_block), written once over the
// ISA's vector type V; included after rows.inl (it uses load_block_transposed).
//
// Why blocked: the plane kernel (depthwise.inl) gives each output vector W pixels of one
// channel, so every tap is an unaligned load at a column offset, and every plane pays its own
// set-up; on Zen 3 it ran at 28-34 GFLOP/s even with the plane in L1 (3x3, stride 1). Here a
// vector holds one pixel's W channels: each tap is one aligned load times the tap's weight
// vector, the same code for every stride and dilation, and the set-up is paid once per W
// channels. The price is a register transpose of the input block in and of the outputs out.
//
// The sums run in the plane kernel's order (kh, then kw, from zero) and the epilogue does the
// plane kernel's operations in its order, so the results are the plane kernel's.

// What the epilogue needs, once per block: out[c * out_plane + pixel] = act(acc * alpha +
// bias[c] + residual[c * ldr + pixel]) for the block's nc channels; bias[c] sits in lane c of
// `bias` (zero without one), as the accumulators hold a pixel's channels.
// Channel-blocked output (`blocked`): out and residual hold [C/8][pixels][8] from the block's
// first channel on, out_plane and ldr being then the strides between 8-channel blocks.
struct BlockOut {
  float* out;
  int64_t out_plane;
  int nc;
  V alpha, bias, act_a, act_b;
  const float* residual;
  int64_t ldr;
  bool blocked = false;
  double* sums = nullptr;  // TileEpilogue::sums (blocked output only)
};

// sums[c] += lane c of s for c < nc (a channel's float sum over a few pixels, then in double).
// Lanes past nc are another part's channels: never written. AVX-512 widens and adds 8 lanes a
// step (the staged path calls this every 16 pixels: lane by lane it cost 4-6% of a 14x14 layer).
template <class VV = V>
inline void add_lane_sums(VV s, int nc, double* sums) {
#if defined(__AVX512F__)
  if constexpr (VV::W == 16) {
    const __mmask8 lo = static_cast<__mmask8>(nc >= 8 ? 0xff : (1u << nc) - 1u);
    const __mmask8 hi = static_cast<__mmask8>(nc >= 16 ? 0xff : nc > 8 ? (1u << (nc - 8)) - 1u : 0u);
    const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(s.v)), b = _mm512_cvtps_pd(_mm512_extractf32x8_ps(s.v, 1));
    _mm512_mask_storeu_pd(sums, lo, _mm512_add_pd(_mm512_maskz_loadu_pd(lo, sums), a));
    if (hi) _mm512_mask_storeu_pd(sums + 8, hi, _mm512_add_pd(_mm512_maskz_loadu_pd(hi, sums + 8), b));
    return;
  }
#endif
  alignas(64) float f[VV::W];
  s.store(f);
  for (int c = 0; c < nc && c < VV::W; ++c) sums[c] += static_cast<double>(f[c]);
}

// TileEpilogue::sums after a pair kernel (16 lanes, whole 8-channel blocks): each block's output
// read back right after it was written (in L1 / L2), two pixels a vector, in float over a row,
// then in double: a load and an add per output vector, +10-20 us on efficientnet_b0's 112- and
// 56-row layers at one thread (their pools had cost ~28 us). Summing inside the pair kernels as
// they store cost as much when they summed and made them slower when they did not
// (mobilenet_v2's 56x56 layer 1.05x in conv_bench; as a template parameter, no faster).
template <class VV = V>
void add_block_row_sums(const float* out, int64_t out_plane, int nc, int64_t rows, int64_t width, double* sums) {
  constexpr int64_t kB = 8;  // kConvBlock
  for (int64_t blk = 0; blk * kB < nc; ++blk) {
    const float* o = out + blk * out_plane;
    for (int64_t r = 0; r < rows; ++r, o += width * kB) {
      VV a = VV::zero(), b = VV::zero();
      int64_t i = 0;
      for (; i + 4 <= width; i += 4) a = a + VV::load(o + i * kB), b = b + VV::load(o + i * kB + 2 * kB);
      for (; i + 2 <= width; i += 2) a = a + VV::load(o + i * kB);
      if (i < width) a = a + VV::low_halves(VV::load_first(o + i * kB, kB), VV::zero());
      a = a + b;
      add_lane_sums(VV::low_halves(a, a) + VV::high_halves(a, a), 8, sums + blk * kB);
    }
  }
}

// One pixel's W channels from channel-blocked memory (kConvBlock = 8 floats per pixel and block):
// lanes 0-7 at p, lanes 8-15 at p + block (zero past nc). Tables of 8 or 16 lanes only (the
// blocked depthwise kernel's: conv.cpp, depthwise_blocked). (VV: V, a template parameter so that
// only the branch for its width is compiled.)
template <class VV = V>
inline VV load_pixel_blocks(const float* p, int64_t block, int nc) {
  if constexpr (VV::W == 16) return nc > 8 ? VV::load_halves(p, p + block) : VV::load_first(p, 8);
  else if constexpr (VV::W == 8) return VV::load(p);
  else return VV::load_first(p, nc);
}
template <class VV = V>
inline void store_pixel_blocks(VV y, float* p, int64_t block, int nc) {
  if constexpr (VV::W == 16) {
    if (nc > 8) y.store_halves(p, p + block);  // two unmasked 256-bit stores
    else y.store_first(p, 8);
  } else if constexpr (VV::W == 8) {
    y.store(p);
  } else {
    y.store_first(p, nc);
  }
}

// NP consecutive output pixels of one output row, their W channels in NP accumulators, scaled
// and biased there (lane by lane: the plane kernel's fma(acc, alpha, bias)) and stored
// pixel-major to `stage` (pixel p's channels at stage + p * W). `row` is the padded input row
// of the window's top at the first pixel's left edge; SW the stride along the row (0: the
// run-time g.stride_w).
template <int NP, int SW, int K>
inline void depthwise_block_pixels(const DepthwisePlane& g, int64_t Wp, const float* wb, const float* row, V alpha,
                                   V bias, float* stage) {
  constexpr int64_t kW = V::W;
  const int64_t step = (SW == 0 ? g.stride_w : SW) * kW;
  // K > 0: a K x K window without dilation, its loops unrolled at compile time.
  const int64_t R = K > 0 ? K : g.R, S = K > 0 ? K : g.S, dh = K > 0 ? 1 : g.dil_h, dw = K > 0 ? 1 : g.dil_w;
  V r[NP];
#pragma GCC unroll 16
  for (int p = 0; p < NP; ++p) r[p] = V::zero();
#pragma GCC unroll 8
  for (int64_t kh = 0; kh < R; ++kh) {
    const float* in = row + kh * dh * Wp * kW;
#pragma GCC unroll 8
    for (int64_t kw = 0; kw < S; ++kw) {
      const V wv = V::load(wb + (kh * S + kw) * kW);
      const float* px = in + kw * dw * kW;
#pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) r[p] = fma(wv, V::load(px + p * step), r[p]);
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < NP; ++p) fma(r[p], alpha, bias).store(stage + p * kW);
}

// Up to W staged pixels (n of them, the plane's pixels at..at + n), transposed in registers
// (channel c's pixels in r[c]) and stored through the rest of the epilogue: + residual,
// activation. The tiles run along the flattened plane, across row ends, so every transpose but
// a chunk's last is full: per output row, mobilenet_v2's 7..112-wide rows left 9 of 16 lanes
// of each AVX-512 transpose empty.
template <Act A, bool Full>
inline void depthwise_block_store(const float* stage, int n, int64_t at, const BlockOut& bo) {
  constexpr int64_t kW = V::W;
  if (bo.blocked) {  // a pixel's channels are already what the blocks hold: no transpose
    constexpr int64_t kB = 8;  // kConvBlock
    V sum = V::zero();  // TileEpilogue::sums, in float over these pixels
#pragma GCC unroll 16
    for (int p = 0; p < kW; ++p) {
      if (!Full && p >= n) break;
      V y = V::load(stage + p * kW);
      if (bo.residual) y = y + load_pixel_blocks(bo.residual + (at + p) * kB, bo.ldr, bo.nc);
      y = activate<A>(y, bo.act_a, bo.act_b);
      store_pixel_blocks(y, bo.out + (at + p) * kB, bo.out_plane, bo.nc);
      if (bo.sums) sum = sum + y;
    }
    if (bo.sums) add_lane_sums(sum, bo.nc, bo.sums);
    return;
  }
  V r[kW];
#pragma GCC unroll 16
  for (int p = 0; p < kW; ++p) r[p] = Full || p < n ? V::load(stage + p * kW) : V::zero();
  transpose_square(r);
#pragma GCC unroll 16
  for (int c = 0; c < kW; ++c) {
    if (c >= bo.nc) break;
    V y = r[c];
    if (bo.residual) {
      const float* res = bo.residual + c * bo.ldr + at;
      y = y + (Full ? V::load(res) : V::load_first(res, n));
    }
    y = activate<A>(y, bo.act_a, bo.act_b);
    float* o = bo.out + c * bo.out_plane + at;
    if constexpr (Full)
      y.store(o);
    else
      y.store_first(o, n);
  }
}

// Input row h of the block (planes x + c * x_plane) into its padded row, W pixels per register
// transpose (lanes past nc zero). transpose_blocks(x + h * W, x_plane, nc, W, row, W) does the
// same but stores each pixel through its partial-row checks: the 7x7 and 14x14 layers ran
// 1.13-1.25x slower with it (Zen 3, conv_bench).
// Channel-blocked input (`blocked`: x holds [C/8][H][W][8] from the block's first channel on,
// x_plane the stride between 8-channel blocks): a pixel's lanes are two halves, no transpose.
inline void depthwise_block_input_row(const DepthwisePlane& g, int64_t Wp, const float* x, int64_t x_plane, int nc,
                                      int64_t h, float* plane, bool blocked) {
  constexpr int64_t kW = V::W;
  float* dst = plane + ((g.pad_top + h) * Wp + g.pad_left) * kW;
  if (blocked) {
    const float* src = x + h * g.W * 8;
    for (int64_t w = 0; w < g.W; ++w) load_pixel_blocks(src + w * 8, x_plane, nc).store(dst + w * kW);
    return;
  }
  for (int64_t w0 = 0; w0 < g.W; w0 += kW) {
    const int n = static_cast<int>(imin(kW, g.W - w0));
    V r[kW];
    load_block_transposed(x + h * g.W, x_plane, 0, w0, nc, n, r);
#pragma GCC unroll 16
    for (int j = 0; j < kW; ++j) {
      if (j >= n) break;
      r[j].store(dst + (w0 + j) * kW);
    }
  }
}

// Output rows [oh0, oh1) staged pixel-major (pixel p of the chunk at stage + p * W): each row
// in groups of 8 pixels (7 when that tiles the row exactly: mobilenet's and efficientnet's
// 7..112-wide maps), the row's remainder in one shorter group.
template <int SW, int K>
void depthwise_block_stage(const DepthwisePlane& g, int64_t Wp, const float* wb, const float* plane, int64_t oh0,
                           int64_t oh1, V alpha, V bias, float* stage) {
  constexpr int64_t kW = V::W;
  constexpr int kGroup = kW < 8 ? kW : 8;
  const int64_t np = kGroup == 8 && g.OW % 8 != 0 && g.OW % 7 == 0 ? 7 : kGroup;
  const int64_t step = (SW == 0 ? g.stride_w : SW) * kW;
  float* st = stage;
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const float* row = plane + oh * g.stride_h * Wp * kW;
    int64_t ow = 0;
    if (np == 7)
      for (; ow + 7 <= g.OW; ow += 7, st += 7 * kW)
        depthwise_block_pixels<kGroup == 8 ? 7 : 1, SW, K>(g, Wp, wb, row + ow * step, alpha, bias, st);
    else
      for (; ow + kGroup <= g.OW; ow += kGroup, st += kGroup * kW)
        depthwise_block_pixels<kGroup, SW, K>(g, Wp, wb, row + ow * step, alpha, bias, st);
    const float* r = row + ow * step;
    switch (g.OW - ow) {
      case 0: break;
      case 1: depthwise_block_pixels<1, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
      case 2: depthwise_block_pixels<2, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
      case 3: depthwise_block_pixels<3, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
      case 4: depthwise_block_pixels<kGroup < 4 ? 1 : 4, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
      case 5: depthwise_block_pixels<kGroup < 5 ? 1 : 5, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
      case 6: depthwise_block_pixels<kGroup < 6 ? 1 : 6, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
      default: depthwise_block_pixels<kGroup < 7 ? 1 : 7, SW, K>(g, Wp, wb, r, alpha, bias, st); break;
    }
    st += (g.OW - ow) * kW;
  }
}

// The px staged pixels of a chunk (the plane's pixels at..at + px) stored W at a time.
template <Act A>
void depthwise_block_store_chunk(const float* stage, int64_t px, int64_t at, const BlockOut& bo) {
  constexpr int64_t kW = V::W;
  int64_t q = 0;
  for (; q + kW <= px; q += kW) depthwise_block_store<A, true>(stage + q * kW, static_cast<int>(kW), at + q, bo);
  if (q < px) depthwise_block_store<A, false>(stage + q * kW, static_cast<int>(px - q), at + q, bo);
}

// The pair kernels' epilogue of one 8-channel block, in depthwise_block's order:
// fma(acc, alpha, bias), + residual, activation; stored at element `at` of the block's output,
// both pixels of the pair or (`two` false) the first.
template <Act A, class VV>
struct PairOut {
  VV alpha, bias, act_a, act_b;
  const float* res;
  float* out;
  const float* wt;  // the block's weights, tap t's at wt + 16 t
  bool fetch_for_write;  // TileEpilogue::fetch_for_write
  // Output row oh (of OH, OW pixels) fetched for writing; the row loops fetch row oh + 1 (and
  // rows 0 and 1 at the top) while they compute row oh.
  void fetch_row(int64_t oh, int64_t OW, int64_t OH) const {
    constexpr int64_t kB = 8;  // kConvBlock
    if (fetch_for_write && oh < OH) fetch_lines_for_write(out + oh * OW * kB, OW * kB);
  }
  void fetch_ahead(int64_t oh, int64_t OW, int64_t OH) const {
    if (oh == 0) fetch_row(0, OW, OH);
    fetch_row(oh + 1, OW, OH);
  }
  [[gnu::always_inline]] void store(VV acc, int64_t at, bool two) const {
    constexpr int64_t kB = 8;  // kConvBlock
    VV y = fma(acc, alpha, bias);
    if (res) y = y + (two ? VV::load(res + at) : VV::load_first(res + at, kB));
    y = activate<A>(y, act_a, act_b);
    if (two) y.store(out + at);
    else y.store_first(out + at, kB);
  }
};

// Block blk's set-up for the pair kernels: tap t's 8 weights twice (both pixels of a pair) at
// PairOut::wt + 16 t, the copy arranged at packing time (TileEpilogue::pair_weights), and its
// epilogue (the bias likewise twice).
template <Act A, class VV>
PairOut<A, VV> pair_block(int64_t RS, int64_t blk, const TileEpilogue& e, float* out, int64_t out_plane) {
  constexpr int64_t kB = 8;  // kConvBlock
  alignas(64) float bias[16];
  for (int64_t c = 0; c < 16; ++c) bias[c] = e.bias ? e.bias[blk * kB + c % kB] : 0.f;
  return {VV::set1(e.alpha),
          VV::load(bias),
          VV::set1(e.act_alpha),
          VV::set1(e.act_beta),
          e.residual ? e.residual + blk * e.ldr : nullptr,
          out + blk * out_plane,
          e.pair_weights + blk * RS * 16,
          e.fetch_for_write};
}

// Channel-blocked in and out on 16 lanes at stride 2: one vector holds two output pixels of one
// 8-channel block, so each tap of a pixel pair is two 32-byte loads straight from the blocked
// input ([C/8][H][W][8]) times the tap's 8 weights twice; no padded copy of the plane and no
// staging: the window rows and columns that fall outside the input are skipped, and each pair
// goes through the epilogue in registers. The sums and the epilogue run in depthwise_block's
// order (kh, kw from zero; fma(acc, alpha, bias), + residual, activation), the skipped taps
// being its zeros, so the floats are its floats. Interior rows run 4 pairs at a time. Not for a
// call whose output overlaps its input (a layer in place: that path copies the plane first).
// (Stride 1: depthwise_pairs_s1, which shares each row's loads between the pairs.)
// Most taps depthwise_pairs runs: 3x3 and 5x5, the sizes it was measured on (the bound once
// also sized a per-call copy of the weights, now arranged at packing time).
constexpr int64_t kPairMaxTaps = 25;
// The aligned-pair kernels from these output widths on (depthwise_block says why).
constexpr int64_t kPairS1MinWidth = 16, kPairS2MinWidth = 14;
// Pairs per group of depthwise_pairs_s1 on rows of a multiple of that many pairs.
constexpr int kPairS1Group = 7;
template <Act A, class VV = V>
void depthwise_pairs(const DepthwisePlane& g, const float* x, int64_t x_plane, int nc, float* out,
                     int64_t out_plane, const TileEpilogue& e) {
  constexpr int64_t kB = 8;             // kConvBlock
  constexpr int64_t kStep = 2 * kB;     // input floats between consecutive output pixels
  alignas(64) static const float kZeros[kB] = {};
  const int64_t RS = g.R * g.S;
  for (int64_t blk = 0; blk * kB < nc; ++blk) {
    const PairOut<A, VV> po = pair_block<A, VV>(RS, blk, e, out, out_plane);
    const float* xb = x + blk * x_plane;
    // The pair at output pixels (oh, ow) and (oh, ow + 1) (`two`: the second exists) through the
    // epilogue into the output.
    auto finish = [&](VV acc, int64_t oh, int64_t ow, bool two) __attribute__((always_inline)) {
      po.store(acc, (oh * g.OW + ow) * kB, two);
    };
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      po.fetch_ahead(oh, g.OW, g.OH);
      const int64_t top = oh * g.stride_h - g.pad_top;
      int64_t kh0 = 0, kh1 = g.R;
      while (kh0 < kh1 && top + kh0 * g.dil_h < 0) ++kh0;
      while (kh1 > kh0 && top + (kh1 - 1) * g.dil_h >= g.H) --kh1;
      // Pairs whose every tap lies inside the row: [p0, p1) (first pixels, even offsets from 0).
      const int64_t span = (g.S - 1) * g.dil_w;
      int64_t p0 = 0;
      while (p0 < g.OW && 2 * p0 - g.pad_left < 0) p0 += 2;
      int64_t p1 = p0;
      while (p1 + 1 < g.OW && 2 * (p1 + 1) - g.pad_left + span < g.W) p1 += 2;
      // One pair anywhere: each half's taps checked.
      auto general = [&](int64_t ow) {
        const bool two = ow + 1 < g.OW;
        VV acc = VV::zero();
        for (int64_t kh = kh0; kh < kh1; ++kh) {
          const float* row = xb + (top + kh * g.dil_h) * g.W * kB;
          for (int64_t kw = 0; kw < g.S; ++kw) {
            const int64_t i0 = 2 * ow - g.pad_left + kw * g.dil_w, i1 = i0 + 2;
            const bool in0 = i0 >= 0 && i0 < g.W, in1 = two && i1 >= 0 && i1 < g.W;
            if (!in0 && !in1) continue;
            acc = fma(VV::load(po.wt + (kh * g.S + kw) * 16),
                      VV::load_halves(in0 ? row + i0 * kB : kZeros, in1 ? row + i1 * kB : kZeros), acc);
          }
        }
        finish(acc, oh, ow, two);
      };
      // Q interior pairs from ow (Q a compile-time count: 4, then single pairs).
      auto interior = [&](auto q_count, int64_t ow) __attribute__((always_inline)) {
        constexpr int Q = decltype(q_count)::value;
        VV acc[Q];
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = VV::zero();
        for (int64_t kh = kh0; kh < kh1; ++kh) {
          const float* row = xb + ((top + kh * g.dil_h) * g.W + 2 * ow - g.pad_left) * kB;
          for (int64_t kw = 0; kw < g.S; ++kw) {
            const VV wv = VV::load(po.wt + (kh * g.S + kw) * 16);
            const float* px = row + kw * g.dil_w * kB;
#pragma GCC unroll 4
            for (int q = 0; q < Q; ++q) {
              const float* pq = px + 2 * q * kStep;
              acc[q] = fma(wv, VV::load_halves(pq, pq + kStep), acc[q]);
            }
          }
        }
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) finish(acc[q], oh, ow + 2 * q, true);
      };
      int64_t ow = 0;
      for (; ow < p0; ow += 2) general(ow);
      for (; ow + 8 <= p1; ow += 8) interior(std::integral_constant<int, 4>{}, ow);
      for (; ow < p1; ow += 2) interior(std::integral_constant<int, 1>{}, ow);
      for (; ow < g.OW; ow += 2) general(ow);
    }
  }
}

// Channel-blocked in and out on 16 lanes at stride 1, a K x K window (K 3 or 5) with 'same'
// padding (K / 2 on the left), an even row width: one vector holds output pixels 2k and 2k + 1
// of an 8-channel block. Q_j, input pixels (2j, 2j + 1) of a row, is one aligned 64-byte load;
// a tap at an odd pixel is (high half of Q_j, low half of Q_j+1), one shuffle. A group of G
// pairs loads G + 2 vectors a window row and shuffles G + 1 of them for its G * K FMAs (G 7 on
// rows of a multiple of 7 pairs, else 4 and single pairs at the row's ends); no
// padded copy, no stage (depthwise_block's copy wrote and re-read the whole plane: 832 KB for a
// 112x112 block of 16 channels). Vectors past the row's ends and window rows outside the input
// are zeros / skipped, which depthwise_block adds as zeros: the same sums in the same order
// (kh, kw from zero), so the same floats. Not for a call whose output overlaps its input.
template <Act A, int K, class VV = V>
void depthwise_pairs_s1(const DepthwisePlane& g, const float* x, int64_t x_plane, int nc, float* out,
                        int64_t out_plane, const TileEpilogue& e) {
  constexpr int64_t kB = 8;  // kConvBlock
  constexpr int kPad = K / 2;
  const int64_t P = g.OW / 2;  // pairs per row (g.W == g.OW, even)
  for (int64_t blk = 0; blk * kB < nc; ++blk) {
    const PairOut<A, VV> po = pair_block<A, VV>(K * K, blk, e, out, out_plane);
    const float* xb = x + blk * x_plane;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      po.fetch_ahead(oh, g.OW, g.OH);
      const int64_t top = oh - g.pad_top;
      const int kh0 = top < 0 ? static_cast<int>(-top) : 0;
      const int kh1 = top + K > g.H ? static_cast<int>(g.H - top) : K;
      // G pairs from pair k0; EDGE: Q_j outside [0, P) reads as zero. The other groups load every
      // Q_j but the ones known at compile time to lie outside: Q_{-1} when k0 is 0 (ZF), Q_P when
      // the group ends the row (ZL).
      auto group = [&](auto g_count, auto edge, int64_t k0, auto zero_first, auto zero_last)
                       __attribute__((always_inline)) {
        constexpr int G = decltype(g_count)::value;
        constexpr bool EDGE = decltype(edge)::value;
        constexpr bool ZF = decltype(zero_first)::value, ZL = decltype(zero_last)::value;
        VV acc[G];
#pragma GCC unroll 16
        for (int q = 0; q < G; ++q) acc[q] = VV::zero();
        for (int kh = kh0; kh < kh1; ++kh) {
          const float* row = xb + (top + kh) * g.W * kB;
          VV q[G + 2], hl[G + 1];  // q[i] = Q_{k0-1+i}, hl[i] = (high of q[i], low of q[i+1])
#pragma GCC unroll 16
          for (int i = 0; i < G + 2; ++i) {
            const int64_t j = k0 - 1 + i;
            if constexpr (EDGE) q[i] = j >= 0 && j < P ? VV::load(row + j * 2 * kB) : VV::zero();
            else q[i] = (ZF && i == 0) || (ZL && i == G + 1) ? VV::zero() : VV::load(row + j * 2 * kB);
          }
#pragma GCC unroll 16
          for (int i = 0; i < G + 1; ++i) hl[i] = VV::high_low(q[i], q[i + 1]);
          const float* wk = po.wt + kh * K * 16;
#pragma GCC unroll 5
          for (int kw = 0; kw < K; ++kw) {
            const VV wv = VV::load(wk + kw * 16);
            // Pair k0 + p's tap kw starts at pixel 2(k0 + p) - kPad + kw.
#pragma GCC unroll 16
            for (int p = 0; p < G; ++p) {
              const int a = 2 * p - kPad + kw + 2;  // pixel offset from 2(k0 - 1), >= 0
              const VV tap = (a % 2 == 0) ? q[a / 2] : hl[(a - 1) / 2];
              acc[p] = fma(wv, tap, acc[p]);
            }
          }
        }
#pragma GCC unroll 16
        for (int p = 0; p < G; ++p) po.store(acc[p], (oh * g.OW + 2 * (k0 + p)) * kB, true);
      };
      using Four = std::integral_constant<int, 4>;
      using One = std::integral_constant<int, 1>;
      using Seven = std::integral_constant<int, kPairS1Group>;
      using Yes = std::true_type;
      using No = std::false_type;
      // Rows of a multiple of 7 pairs (mobilenet_v2's and efficientnet_b0's 14- to 112-wide
      // layers): groups of 7, the row's ends zeros known at compile time. Per window row a group
      // loads 9 vectors and shuffles 8 for 21 FMAs, where a group of 4 loads 6 and shuffles 5
      // for 12 and the row's ends run one pair at a time. Against that (conv_bench, Zen 4, one
      // thread, paired): 56x56 x 144 0.90-0.92x, 28x28 x 192 0.86x, efficientnet_b0's 28x28 5x5
      // 0.83x; the 112x112 x 32 layer, bound by memory, 1.00x. (The 9 + 8 + 7 vectors fit in
      // the 32 registers once every loop here is unrolled: with `unroll 8` on the 9 loads the
      // arrays went to the stack, 1.9x slower.)
      if (P % kPairS1Group == 0) {
        if (P == kPairS1Group) {
          group(Seven{}, No{}, 0, Yes{}, Yes{});
          continue;
        }
        group(Seven{}, No{}, 0, Yes{}, No{});
        int64_t k = kPairS1Group;
        for (; k + kPairS1Group < P; k += kPairS1Group) group(Seven{}, No{}, k, No{}, No{});
        group(Seven{}, No{}, k, No{}, Yes{});
        continue;
      }
      int64_t k = 0;
      // Edge groups until Q_{k-1} exists; inner groups while Q_{k+4} does; then edge pairs.
      for (; k < P && k < 1; ++k) group(One{}, Yes{}, k, No{}, No{});
      for (; k + 4 < P; k += 4) group(Four{}, No{}, k, No{}, No{});
      for (; k < P; ++k) group(One{}, Yes{}, k, No{}, No{});
    }
  }
}

// The stride-2 pairs with 'same' padding (K / 2 on the left, K 3 or 5) on even rows, in
// depthwise_pairs_s1's form: pair m's tap kw reads input pixels 4m - K/2 + kw and that + 2,
// the same half of Q_j and Q_j+1 (j = their pixel / 2): one shuffle of two aligned loads, the
// row's 2G + 2 or so vectors loaded once for a group of G pairs. Vectors past the row's ends
// read as zeros (no per-tap checks at the edges, which depthwise_pairs's general pairs make);
// the same sums in the same order as depthwise_block's, so the same floats.
// The aligned vectors a group of G stride-2 pairs loads per window row, from Q_{2 m0 - 1}: up
// to the one after the last tap's first pixel, 4 (G - 1) - K / 2 + K - 1 + 2 pixels on from
// 2 (2 m0 - 1), plus 2 for the tap's second pixel.
constexpr int pairs_s2_vectors(int G, int K) { return (4 * (G - 1) - K / 2 + K - 1 + 2 + 2) / 2 + 1; }

template <Act A, int K, class VV = V>
void depthwise_pairs_s2(const DepthwisePlane& g, const float* x, int64_t x_plane, int nc, float* out,
                        int64_t out_plane, const TileEpilogue& e) {
  constexpr int64_t kB = 8;  // kConvBlock
  constexpr int kPad = K / 2;
  const int64_t P = g.W / 2;  // input pairs per row (g.W even)
  for (int64_t blk = 0; blk * kB < nc; ++blk) {
    const PairOut<A, VV> po = pair_block<A, VV>(K * K, blk, e, out, out_plane);
    const float* xb = x + blk * x_plane;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      po.fetch_ahead(oh, g.OW, g.OH);
      const int64_t top = oh * 2 - g.pad_top;
      const int kh0 = top < 0 ? static_cast<int>(-top) : 0;
      const int kh1 = top + K > g.H ? static_cast<int>(g.H - top) : K;
      // G pairs from output pair m0 (output pixels 2 m0 ..); q[i] = Q_{2 m0 - 1 + i}.
      auto group = [&](auto g_count, auto edge, int64_t m0) __attribute__((always_inline)) {
        constexpr int G = decltype(g_count)::value;
        constexpr bool EDGE = decltype(edge)::value;
        constexpr int NQ = pairs_s2_vectors(G, K);
        VV acc[G];
#pragma GCC unroll 4
        for (int p = 0; p < G; ++p) acc[p] = VV::zero();
        for (int kh = kh0; kh < kh1; ++kh) {
          const float* row = xb + (top + kh) * g.W * kB;
          VV q[NQ];
#pragma GCC unroll 12
          for (int i = 0; i < NQ; ++i) {
            const int64_t j = 2 * m0 - 1 + i;
            q[i] = !EDGE || (j >= 0 && j < P) ? VV::load(row + j * 2 * kB) : VV::zero();
          }
          const float* wk = po.wt + kh * K * 16;
#pragma GCC unroll 5
          for (int kw = 0; kw < K; ++kw) {
            const VV wv = VV::load(wk + kw * 16);
#pragma GCC unroll 4
            for (int p = 0; p < G; ++p) {
              const int a = 4 * p - kPad + kw + 2;  // the first pixel from 2 (2 m0 - 1)
              const VV tap = a % 2 == 0 ? VV::low_halves(q[a / 2], q[a / 2 + 1]) : VV::high_halves(q[a / 2], q[a / 2 + 1]);
              acc[p] = fma(wv, tap, acc[p]);
            }
          }
        }
#pragma GCC unroll 4
        for (int p = 0; p < G; ++p) {
          const int64_t ow = 2 * (m0 + p);
          po.store(acc[p], (oh * g.OW + ow) * kB, ow + 1 < g.OW);
        }
      };
      using Four = std::integral_constant<int, 4>;
      using One = std::integral_constant<int, 1>;
      constexpr int kInnerQ = pairs_s2_vectors(4, K);
      const int64_t pairs = (g.OW + 1) / 2;
      int64_t m = 0;
      for (; m < pairs && m < 1; ++m) group(One{}, std::true_type{}, m);
      for (; m + 4 <= pairs && 2 * m - 1 + kInnerQ <= P; m += 4) group(Four{}, std::false_type{}, m);
      for (; m < pairs; ++m) group(One{}, std::true_type{}, m);
    }
  }
}

#if defined(__AVX512F__)
// depthwise_pairs_s2's layers on 8-lane (256-bit) vectors, one output pixel's 8-channel block
// each: a tap of pixel ow is the aligned 32-byte load of input pixel S ow - K/2 + kw, each
// window row's pixels loaded once for a group. The pair kernel's 16-lane vector of two output
// pixels needs, per tap, two input pixels four apart: a shuffle of two loads for every FMA. On a
// core whose 512-bit FMAs are two 256-bit halves (Zen 4) two 256-bit FMAs cost one 512-bit one,
// so the shuffles were pure loss there: the pair kernel ran at ~2.7 cycles a 512-bit FMA (perf,
// mobilenet_v2's 112 -> 56 layer, 96 channels, one thread). Where 512-bit FMAs are native, they
// and the shuffles share two ports, which these 256-bit FMAs fill as many cycles.
// In-process pairs against depthwise_pairs_s2 (conv_bench DepthwiseHalves, Zen 4, blocked):
// mobilenet_v2's 112 -> 56 0.74 / 0.76 (one / two threads), 56 -> 28 0.87, 28 -> 14 0.81;
// efficientnet_b0's 56 -> 28 5x5 0.82-0.84, 28 -> 14 0.79-0.80. At stride 1 (S 1, same code)
// against depthwise_pairs_s1, which shuffles 8 vectors for 21 FMAs, the 5x5s ran 1.14-1.43, so
// those keep the pair kernel; the 3x3s (seventy-first session, two rounds at one / two threads):
// 112x112 x 32 0.84 / 0.85-0.97, 56x56 x 144 0.86 / 0.86-0.87, 28x28 x 192 0.97 / 0.95-0.97,
// 14x14 x 384 and 576 0.99-1.00 / 0.97-1.04, so rows of kHalvesS1MinWidth or more take these
// where 512-bit FMAs are double-pumped (depthwise_halves_s1_enabled): on Zen 5's native ones the
// pair kernel ran those layers 1.25-1.35x faster, and the stride-2 halves still 0.82-0.98.
// (Groups of 10 or 12 pixels, for more FMA chains, ran 2.3-3x slower with these unroll counts,
// their arrays spilled; with the counts raised, 1.0-1.18x the groups of 8.)
// kHalvesGroup output pixels a group (8 accumulators: as many chains as two FMA pipes of
// latency 4 keep busy); pairs of them go through PairOut's 16-lane epilogue, one insert a pair.
// The sums run in depthwise_block's order (kh, kw from zero), taps outside the row adding zeros
// and window rows outside the input skipped as the pair kernels do, so the floats are theirs.
constexpr int kHalvesGroup = 8;
constexpr int64_t kHalvesS1MinWidth = 28;
template <Act A, int K, int S>
void depthwise_halves(const DepthwisePlane& g, const float* x, int64_t x_plane, int nc, float* out,
                      int64_t out_plane, const TileEpilogue& e) {
  constexpr int64_t kB = 8;  // kConvBlock
  constexpr int kPad = K / 2;
  // The pixels past the first group whose taps all lie in the row: S ow - kPad + K - 1 < W.
  const int64_t inner_end = std::min<int64_t>(g.OW, (g.W - K + kPad) / S + 1);
  for (int64_t blk = 0; blk * kB < nc; ++blk) {
    const PairOut<A, V> po = pair_block<A, V>(K * K, blk, e, out, out_plane);
    const float* xb = x + blk * x_plane;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      po.fetch_ahead(oh, g.OW, g.OH);
      const int64_t top = oh * S - g.pad_top;
      const int kh0 = top < 0 ? static_cast<int>(-top) : 0;
      const int kh1 = top + K > g.H ? static_cast<int>(g.H - top) : K;
      // NP output pixels from ow0; LEFT: ow0 is 0 (the taps left of the row known at compile
      // time), CHECKED: the taps outside the row found at run time.
      auto group = [&](auto np_count, auto left, auto checked, int64_t ow0) __attribute__((always_inline)) {
        constexpr int NP = decltype(np_count)::value;
        constexpr bool LEFT = decltype(left)::value, CHECKED = decltype(checked)::value;
        __m256 acc[NP];
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) acc[p] = _mm256_setzero_ps();
        // The window row's input pixels from S ow0 - kPad on, loaded once (at stride 2 the
        // odd ones between the last taps are loaded too: a load each is cheaper than the gaps).
        constexpr int NIN = S * (NP - 1) + K;
        for (int kh = kh0; kh < kh1; ++kh) {
          const float* row = xb + (top + kh) * g.W * kB;
          __m256 in[NIN];
#pragma GCC unroll 24
          for (int i = 0; i < NIN; ++i) {
            const int64_t j = S * (LEFT ? 0 : ow0) - kPad + i;
            const bool outside = (LEFT && i < kPad) || (CHECKED && (j < 0 || j >= g.W));
            in[i] = outside ? _mm256_setzero_ps() : _mm256_loadu_ps(row + j * kB);
          }
#pragma GCC unroll 5
          for (int kw = 0; kw < K; ++kw) {
            const __m256 wv = _mm256_loadu_ps(po.wt + (kh * K + kw) * 16);
#pragma GCC unroll 8
            for (int p = 0; p < NP; ++p) acc[p] = _mm256_fmadd_ps(wv, in[S * p + kw], acc[p]);
          }
        }
#pragma GCC unroll 4
        for (int p = 0; p < NP; p += 2) {
          const int64_t at = (oh * g.OW + ow0 + p) * kB;
          const __m512 lo = _mm512_castps256_ps512(acc[p]);
          if (p + 1 < NP) po.store(V{_mm512_insertf32x8(lo, acc[p + 1], 1)}, at, true);
          else po.store(V{lo}, at, false);
        }
      };
      using Full = std::integral_constant<int, kHalvesGroup>;
      using Yes = std::true_type;
      using No = std::false_type;
      int64_t ow = 0;
      if (kHalvesGroup <= inner_end) group(Full{}, Yes{}, No{}, 0), ow = kHalvesGroup;
      for (; ow > 0 && ow + kHalvesGroup <= inner_end; ow += kHalvesGroup) group(Full{}, No{}, No{}, ow);
      // The rest of the row (all of it when its first group reaches past inner_end): up to 7
      // pixels, and those past inner_end, in groups of checked taps.
      while (ow < g.OW) {
        const int64_t n = std::min<int64_t>(g.OW - ow, kHalvesGroup);
        switch (n) {
          case 1: group(std::integral_constant<int, 1>{}, No{}, Yes{}, ow); break;
          case 2: group(std::integral_constant<int, 2>{}, No{}, Yes{}, ow); break;
          case 3: group(std::integral_constant<int, 3>{}, No{}, Yes{}, ow); break;
          case 4: group(std::integral_constant<int, 4>{}, No{}, Yes{}, ow); break;
          case 5: group(std::integral_constant<int, 5>{}, No{}, Yes{}, ow); break;
          case 6: group(std::integral_constant<int, 6>{}, No{}, Yes{}, ow); break;
          case 7: group(std::integral_constant<int, 7>{}, No{}, Yes{}, ow); break;
          default: group(Full{}, No{}, Yes{}, ow); break;
        }
        ow += n;
      }
    }
  }
}
#endif

// 'Same' padding (K / 2 on the left), a 3x3 or 5x5 window without dilation, even rows: the
// shapes the aligned-pair kernels take.
bool depthwise_pairs_same(const DepthwisePlane& g) {
  return g.R == g.S && (g.R == 3 || g.R == 5) && g.dil_h == 1 && g.dil_w == 1 && g.pad_left == g.S / 2 &&
         g.W % 2 == 0;
}

// Stride 1 on rows of 16 or more, or of 14 (one group of 7 pairs): depthwise_pairs_s1 (why:
// depthwise_block).
bool depthwise_pairs_s1_apply(const DepthwisePlane& g) {
  return V::W == 16 && depthwise_pairs_same(g) && g.stride_h == 1 && g.stride_w == 1 && g.W == g.OW &&
         (g.OW >= kPairS1MinWidth || g.OW == 2 * kPairS1Group);
}

// One input channel into the block's channels (digits_cnn's 1 -> 16 first layer), output
// channel-blocked: every lane reads the same input pixel, so a tap is one broadcast input float
// times the tap's W weights (the pair copy's, TileEpilogue::pair_weights), read from a
// zero-padded copy of the plane as plain floats (Hp x Wp, in the scratch's plane). The general
// path below transposed W copies of the plane into the padded plane and staged every pixel:
// digits_cnn's layer (360 images of 8x8) took ~340 us at one thread there. The sums and the
// epilogue run in its order (kh, kw from zero; fma(acc, alpha, bias), + residual, activation),
// so the floats are its floats. NP output pixels of a row a step.
template <int NP, int SW, int K, Act A, class VV>
[[gnu::always_inline]] inline void single_channel_pixels(const DepthwisePlane& g, int64_t Wp, const VV* wv,
                                                         const float* row, const PairOut<A, VV>& po, int nc,
                                                         int64_t at, const TileEpilogue& e, int64_t out_plane,
                                                         VV& sum) {
  constexpr int64_t kB = 8;  // kConvBlock
  const int64_t step = SW == 0 ? g.stride_w : SW;
  const int64_t R = K > 0 ? K : g.R, S = K > 0 ? K : g.S, dh = K > 0 ? 1 : g.dil_h, dw = K > 0 ? 1 : g.dil_w;
  VV r[NP];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) r[p] = VV::zero();
#pragma GCC unroll 8
  for (int64_t kh = 0; kh < R; ++kh) {
    const float* in = row + kh * dh * Wp;
#pragma GCC unroll 8
    for (int64_t kw = 0; kw < S; ++kw) {
      const VV w = wv[kh * S + kw];
      const float* px = in + kw * dw;
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) r[p] = fma(w, VV::set1(px[p * step]), r[p]);
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
    VV y = fma(r[p], po.alpha, po.bias);
    if (e.residual) y = y + load_pixel_blocks(e.residual + (at + p) * kB, e.ldr, nc);
    y = activate<A>(y, po.act_a, po.act_b);
    store_pixel_blocks(y, po.out + (at + p) * kB, out_plane, nc);
    if (e.sums) sum = sum + y;
  }
}

// Most taps the single-channel kernel holds as weight vectors (a 7x7 window).
constexpr int64_t kSingleChannelMaxTaps = 49;

template <int SW, int K, Act A, class VV = V>
void depthwise_single_channel(const DepthwisePlane& g, int64_t Hp, int64_t Wp, const float* x, int nc,
                              float* plane, float* out, int64_t out_plane, const TileEpilogue& e) {
  static_assert(VV::W == 16 || VV::W == 8, "channel-blocked output needs 8 or 16 lanes");
  constexpr int64_t kB = 8;  // kConvBlock
  const int64_t RS = g.R * g.S;
  // The plane with its zero border, row by row: zeros, then the row over them (vector by
  // vector: digits_cnn's 8-float rows spent more in memset and memmove calls than in copying).
  for (int64_t h = 0; h < Hp; ++h) {
    float* d = plane + h * Wp;
    int64_t i = 0;
    for (; i + VV::W <= Wp; i += VV::W) VV::zero().store(d + i);
    if (i < Wp) VV::zero().store_first(d + i, static_cast<int>(Wp - i));
    const int64_t ih = h - g.pad_top;
    if (ih < 0 || ih >= g.H) continue;
    const float* src = x + ih * g.W;
    d += g.pad_left;
    for (i = 0; i + VV::W <= g.W; i += VV::W) VV::load(src + i).store(d + i);
    if (i < g.W) {
      const int n = static_cast<int>(g.W - i);
      VV::load_first(src + i, n).store_first(d + i, n);
    }
  }
  // Tap t's weights: lanes 0-7 the first 8-channel block's, 8-15 the second's (pair copy: per
  // block and tap, its 8 weights twice, 16 floats).
  VV wv[K > 0 ? K * K : kSingleChannelMaxTaps];
  for (int64_t t = 0; t < RS; ++t) wv[t] = load_pixel_blocks<VV>(e.pair_weights + t * 2 * kB, RS * 2 * kB, nc);
  alignas(64) float bias_lanes[VV::W] = {};
  if (e.bias)
    for (int c = 0; c < nc; ++c) bias_lanes[c] = e.bias[c];
  // (PairOut's alpha, bias, activation constants and output; its residual and weights go unused.)
  const PairOut<A, VV> po{VV::set1(e.alpha), VV::load(bias_lanes), VV::set1(e.act_alpha), VV::set1(e.act_beta),
                          nullptr, out, nullptr};
  const int64_t step = SW == 0 ? g.stride_w : SW;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* row = plane + oh * g.stride_h * Wp;
    const int64_t at = oh * g.OW;
    int64_t ow = 0;
    VV sum = VV::zero();  // TileEpilogue::sums: the row's, in float, then in double
    for (; ow + 8 <= g.OW; ow += 8)
      single_channel_pixels<8, SW, K, A>(g, Wp, wv, row + ow * step, po, nc, at + ow, e, out_plane, sum);
    for (; ow + 4 <= g.OW; ow += 4)
      single_channel_pixels<4, SW, K, A>(g, Wp, wv, row + ow * step, po, nc, at + ow, e, out_plane, sum);
    for (; ow < g.OW; ++ow)
      single_channel_pixels<1, SW, K, A>(g, Wp, wv, row + ow * step, po, nc, at + ow, e, out_plane, sum);
    if (e.sums) add_lane_sums(sum, nc, e.sums);
  }
}

// KernelTable::depthwise_block_wants_apart.
bool depthwise_block_wants_apart(const DepthwisePlane& g) { return depthwise_pairs_s1_apply(g); }

void depthwise_block(const DepthwisePlane& g, const float* x, int64_t x_plane, int nc, const float* w, float* scratch,
                     bool* padding_zeroed, float* out, int64_t out_plane, const TileEpilogue& e, bool x_blocked,
                     bool y_blocked) {
  constexpr int64_t kW = V::W;
  // One input channel (x_plane 0: every lane reads image n's plane) into blocked output.
  if constexpr (kW == 16 || kW == 8) {
    if (x_plane == 0 && !x_blocked && y_blocked && e.pair_weights && e.bias_mode != TileEpilogue::Bias::Scalar &&
        g.R * g.S <= kSingleChannelMaxTaps) {
      const DepthwiseBlockScratch sb = depthwise_block_scratch(g, kW);
      float* plane = scratch + sb.plane;
      if (padding_zeroed) *padding_zeroed = false;  // the plane now holds plain floats
      const bool k3 = g.R == 3 && g.S == 3 && g.dil_h == 1 && g.dil_w == 1;
      with_act(e.act, [&]<Act A>() {
        const auto run = k3 && g.stride_w == 1   ? depthwise_single_channel<1, 3, A>
                         : k3 && g.stride_w == 2 ? depthwise_single_channel<2, 3, A>
                                                 : depthwise_single_channel<0, 0, A>;
        run(g, sb.Hp, sb.Wp, x, nc, plane, out, out_plane, e);
      });
      return;
    }
  }
  if constexpr (kW == 16) {
    // The pair kernel when in and out are blocked, whole 8-channel blocks, the weights' pair copy
    // is there (conv2d always passes it: K is then a multiple of 8), and the output does not
    // overlap the input (a layer in place keeps the copy below).
    const int64_t blocks = (nc + 7) / 8;
    const float* x_end = x + (blocks - 1) * x_plane + g.H * g.W * 8;
    const float* o_end = out + (blocks - 1) * out_plane + g.OH * g.OW * 8;
    const bool apart = x_end <= out || o_end <= x;
    const bool pairs = x_blocked && y_blocked && nc % 8 == 0 && apart && e.bias_mode != TileEpilogue::Bias::Scalar &&
                       e.pair_weights;
    const bool same = depthwise_pairs_same(g);
    // Stride 2 to 14 outputs or more: depthwise_pairs_s2 (conv_bench, Zen 4, blocked, one
    // thread, against depthwise_pairs or, for 14 outputs, the copy: mobilenet_v2's 112 -> 56
    // 0.80x, 56 -> 28 0.78x, 28 -> 14 0.76x; efficientnet_b0's 56 -> 28 5x5 0.68x). To 7 outputs
    // the 3x3 ran no faster and the 5x5 1.34x slower. On AVX-512 its layers run on 256-bit
    // halves instead (depthwise_halves, 0.74-0.87x of it), unless depthwise_halves_enabled is off.
    if (pairs && same && g.stride_h == 2 && g.stride_w == 2 && g.OW >= kPairS2MinWidth) {
      with_act(e.act, [&]<Act A>() {
#if defined(__AVX512F__)
        if (detail::depthwise_halves_enabled) {
          if (g.R == 3) depthwise_halves<A, 3, 2>(g, x, x_plane, nc, out, out_plane, e);
          else depthwise_halves<A, 5, 2>(g, x, x_plane, nc, out, out_plane, e);
          return;
        }
#endif
        if (g.R == 3) depthwise_pairs_s2<A, 3>(g, x, x_plane, nc, out, out_plane, e);
        else depthwise_pairs_s2<A, 5>(g, x, x_plane, nc, out, out_plane, e);
      });
      if (e.sums) add_block_row_sums(out, out_plane, nc, g.OH, g.OW, e.sums);
      return;
    }
    // Other stride-2 layers, where it measured faster than the copy: rows of 16 or more outputs
    // (mobilenet_v2's 112 -> 56 layer 0.66x, 56 -> 28 0.89x at one thread, before the kernel
    // above). Short rows leave the 4-pair groups empty (14 -> 7: 1.96x), so those keep the copy.
    if (pairs && g.stride_w == 2 && g.OW >= 16 && g.R * g.S <= kPairMaxTaps) {
      with_act(e.act, [&]<Act A>() { depthwise_pairs<A>(g, x, x_plane, nc, out, out_plane, e); });
      if (e.sums) add_block_row_sums(out, out_plane, nc, g.OH, g.OW, e.sums);
      return;
    }
    // Stride 1 on rows of 16 or more (conv_bench, Zen 4, blocked, one thread: mobilenet_v2's
    // 112x112 x 32 0.64x, 56x56 x 144 0.67x, 28x28 x 192 0.73x; efficientnet_b0's 28x28 5x5
    // 0.89x). On 14-wide rows, in groups of 4 and single pairs, the 3x3s ran no faster and the
    // 5x5s 1.2x slower; as one group of 7 pairs, 0.70x and 0.78x against the copy (one thread;
    // 0.74-0.84x at two), out of place (conv_depthwise_in_place then says no).
    if (pairs && depthwise_pairs_s1_apply(g)) {
      with_act(e.act, [&]<Act A>() {
#if defined(__AVX512F__)
        // 3x3 windows on rows of kHalvesS1MinWidth or more: on 256-bit halves (depthwise_halves).
        if (detail::depthwise_halves_s1_enabled && g.R == 3 && g.OW >= kHalvesS1MinWidth) {
          depthwise_halves<A, 3, 1>(g, x, x_plane, nc, out, out_plane, e);
          return;
        }
#endif
        if (g.R == 3) depthwise_pairs_s1<A, 3>(g, x, x_plane, nc, out, out_plane, e);
        else depthwise_pairs_s1<A, 5>(g, x, x_plane, nc, out, out_plane, e);
      });
      if (e.sums) add_block_row_sums(out, out_plane, nc, g.OH, g.OW, e.sums);
      return;
    }
  }
  const DepthwiseBlockScratch sb = depthwise_block_scratch(g, kW);
  const int64_t RS = g.R * g.S;
  // The weights tap-major: wb[t * W + c] = w[c * RS + t], zero past nc.
  float* wb = scratch;
  for (int64_t t = 0; t < RS; ++t)
    for (int64_t c = 0; c < kW; ++c) wb[t * kW + c] = c < nc ? w[c * RS + t] : 0.f;
  // The input's interior, all rows first (transposing each row just before the first output row
  // that reaches it, for locality, measured no better on Zen 3, within the runs' +-5%).
  float* plane = scratch + sb.plane;
  // Its padding once per caller's run of blocks (the pair kernels above never touch the plane:
  // zeroing it for them was 1.2% of mobilenet_v2's samples at two threads).
  if (!padding_zeroed || !*padding_zeroed) {
    ::kiln::kernels::detail::fill_block_padding(g, sb, kW, 0.f, plane);
    if (padding_zeroed) *padding_zeroed = true;
  }
  for (int64_t h = 0; h < g.H; ++h) depthwise_block_input_row(g, sb.Wp, x, x_plane, nc, h, plane, x_blocked);
  // The bias in lane order; lanes past nc stay zero and are never stored.
  alignas(64) float bias[kW] = {};
  if (e.bias)
    for (int c = 0; c < nc; ++c) bias[c] = e.bias[c];
  const BlockOut bo{out,        out_plane, nc,        V::set1(e.alpha), V::load(bias), V::set1(e.act_alpha),
                    V::set1(e.act_beta), e.residual, e.ldr, y_blocked, y_blocked ? e.sums : nullptr};
  // 3x3 and 5x5 windows (stride 1 or 2, no dilation) with their tap loops unrolled: mobilenet_v2's
  // and efficientnet_b0's layers ran 0.80-0.93x the time of the run-time loops (Zen 3).
  const int k = g.R == g.S && g.dil_h == 1 && g.dil_w == 1 && (g.R == 3 || g.R == 5) ? static_cast<int>(g.R) : 0;
  const auto stage_rows = k == 3 && g.stride_w == 1   ? depthwise_block_stage<1, 3>
                          : k == 3 && g.stride_w == 2 ? depthwise_block_stage<2, 3>
                          : k == 5 && g.stride_w == 1 ? depthwise_block_stage<1, 5>
                          : k == 5 && g.stride_w == 2 ? depthwise_block_stage<2, 5>
                          : g.stride_w == 1           ? depthwise_block_stage<1, 0>
                          : g.stride_w == 2           ? depthwise_block_stage<2, 0>
                                                      : depthwise_block_stage<0, 0>;
  // Chunks of whole output rows, staged and then stored through the epilogue while in L1.
  float* stage = scratch + sb.stage;
  const int64_t chunk = depthwise_stage_rows(g.OH, g.OW, kW);  // as the scratch was sized
  with_act(e.act, [&]<Act A>() {
    for (int64_t oh0 = 0; oh0 < g.OH; oh0 += chunk) {
      const int64_t oh1 = oh0 + chunk < g.OH ? oh0 + chunk : g.OH;
      stage_rows(g, sb.Wp, wb, plane, oh0, oh1, bo.alpha, bo.bias, stage);
      depthwise_block_store_chunk<A>(stage, (oh1 - oh0) * g.OW, oh0 * g.OW, bo);
    }
  });
}

// The direct-convolution micro-kernel (KernelTable::conv_tile, kernels/conv_direct.h), written
// once over the ISA's vector type V: ROWS output pixels by NVEC vectors of output channels,
// accumulated in registers over every step of every segment. Step q broadcasts the ROWS input
// values a[off + r*SW] (consecutive output pixels of one row: immediate offsets, no im2col
// panel) and loads NVEC vectors of the packed weight row, as gemm_tile does with its A panel.
// SW is 1 or 2 on planar input, 8 or 16 on the channel-blocked copy (8 channels per pixel at
// stride 1 or 2, or 16 at stride 1).
// Needs constexpr MR and NR (the direct convolution's tile) in the including namespace.

// SPLIT > 0: rows r >= SPLIT are another output row's pixels, read at a + jump + (r-SPLIT)*SW
// (conv_tile_pair).
// ConvTileOut's epilogue, its parameters in registers: alpha, the activation (A, one of
// ConvTileOut::fused_act's) and its bounds, whether there is a bias or a residual.
// (epilogue_blocks's order and its `activate`: scale, bias, residual, activation.)
struct TileFinish {
  V alpha, act_alpha, act_beta;
  bool scale, bias, residual;
};

// BIAS_ONLY: the tile's epilogue is known to be a bias and the activation (no scale, no
// residual), so no flag is tested per vector (conv_tile_store_blocked).
template <Act A, bool BIAS_ONLY = false>
[[gnu::always_inline]] inline V conv_tile_finish(V x, const TileFinish& f, V bias, const float* res, int n) {
  if constexpr (BIAS_ONLY) return activate<A>(x + bias, f.act_alpha, f.act_beta);
  if (f.scale) x = x * f.alpha;
  if (f.bias) x = x + bias;
  if (f.residual) x = x + (n == V::W ? V::load(res) : V::load_first(res, n));
  return activate<A>(x, f.act_alpha, f.act_beta);
}

// The accumulators of ROWS consecutive output pixels by NVEC vectors of channels through
// ConvTileOut (ncols: a multiple of the output's block). 16 lanes: on 8-channel blocks two
// pixels' halves make one vector per block, 64 contiguous bytes; on 16-channel blocks (o.block)
// a vector is one pixel's block, stored as it is; 8 lanes: a vector is one pixel's block. (VV: V, as a template parameter
// so that only the branch for its width is compiled.) The epilogue's parameters are copied into
// locals first: read through `o` they were loaded and tested again after every store (a float
// store may alias them), a quarter of a 16-channel 1x1's time (perf annotate, Zen 4).
// SPLIT > 0 (a tile that wraps to the next output row after SPLIT pixels): rows r >= SPLIT are
// stored o.row_jump floats further on (padded output planes, whose rows lie apart); only where a
// vector is one pixel's block (conv_direct.cpp allows wrapping into padded planes only there).
template <Act A, int ROWS, int NVEC, int SPLIT = 0, bool BIAS_ONLY = false, class VV = V>
[[gnu::always_inline]] inline void conv_tile_store_blocked_act(VV (&acc)[ROWS][NVEC], const ConvTileOut& o,
                                                               int ncols) {
  constexpr int64_t kB = 8;  // kConvBlock
  const TileFinish f{VV::set1(o.alpha),  VV::set1(o.act_alpha), VV::set1(o.act_beta),
                     o.alpha != 1.f,     o.bias != nullptr,     o.residual != nullptr};
  float* const dst = o.dst;
  const int64_t block_stride = o.block_stride;
  const float* const bias_base = o.bias;
  const float* const res_base = o.residual;
  const int64_t jump = SPLIT > 0 ? o.row_jump : 0;
  if constexpr (VV::W == 16) {
    if (o.block == VV::W) {
#pragma GCC unroll 4
      for (int v = 0; v < NVEC; ++v) {
        if (v * VV::W >= ncols) break;
        const VV bias = f.bias ? VV::load(bias_base + v * VV::W) : VV::zero();
        float* d = dst + v * block_stride;
        const float* res = f.residual ? res_base + v * block_stride : nullptr;
#pragma GCC unroll 16
        for (int r = 0; r < ROWS; ++r)
          conv_tile_finish<A, BIAS_ONLY>(acc[r][v], f, bias, res ? res + r * VV::W : nullptr, VV::W)
              .store(d + r * VV::W + (SPLIT > 0 && r >= SPLIT ? jump : 0));
      }
      return;
    }
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) {
      const int col = v * VV::W;
      if (col >= ncols) break;
      const bool high = ncols - col > static_cast<int>(kB);
      const float* bias = f.bias ? bias_base + col : nullptr;
      const VV blo = f.bias ? VV::load_halves(bias, bias) : VV::zero();
      const VV bhi = f.bias && high ? VV::load_halves(bias + kB, bias + kB) : VV::zero();
      float* dlo = dst + (col / kB) * block_stride;
      float* dhi = dlo + block_stride;
      const float* rlo = f.residual ? res_base + (col / kB) * block_stride : nullptr;
      const float* rhi = rlo ? rlo + block_stride : nullptr;
#pragma GCC unroll 8
      for (int r = 0; r + 1 < ROWS; r += 2) {
        const float* rl = rlo ? rlo + r * kB : nullptr;
        conv_tile_finish<A, BIAS_ONLY>(VV::low_halves(acc[r][v], acc[r + 1][v]), f, blo, rl, VV::W).store(dlo + r * kB);
        if (high)
          conv_tile_finish<A, BIAS_ONLY>(VV::high_halves(acc[r][v], acc[r + 1][v]), f, bhi,
                                         rhi ? rhi + r * kB : nullptr, VV::W)
              .store(dhi + r * kB);
      }
      if constexpr (ROWS % 2 == 1) {
        constexpr int r = ROWS - 1;
        conv_tile_finish<A, BIAS_ONLY>(VV::low_halves(acc[r][v], acc[r][v]), f, blo, rlo ? rlo + r * kB : nullptr,
                                       kB)
            .store_first(dlo + r * kB, kB);
        if (high)
          conv_tile_finish<A, BIAS_ONLY>(VV::high_halves(acc[r][v], acc[r][v]), f, bhi, rhi ? rhi + r * kB : nullptr,
                                         kB)
              .store_first(dhi + r * kB, kB);
      }
    }
  } else if constexpr (VV::W == 8) {
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) {
      const int col = v * VV::W;
      if (col >= ncols) break;
      const VV bias = f.bias ? VV::load(bias_base + col) : VV::zero();
      float* d = dst + v * block_stride;
      const float* res = f.residual ? res_base + v * block_stride : nullptr;
#pragma GCC unroll 16
      for (int r = 0; r < ROWS; ++r)
        conv_tile_finish<A, BIAS_ONLY>(acc[r][v], f, bias, res ? res + r * kB : nullptr, VV::W)
            .store(d + r * kB + (SPLIT > 0 && r >= SPLIT ? jump : 0));
    }
  }
}

// The activation chosen once per tile, not per vector; so is the common epilogue, a bias and
// the activation alone (every convolution after BatchNorm folding without a residual): its
// flags tested for every vector were a tenth of a 16-step 1x1 tile's time (mobilenet_v2's
// 16 -> 96 at 112x112, perf annotate).
template <int ROWS, int NVEC, int SPLIT = 0, bool BIAS_ONLY = false, class VV = V>
[[gnu::always_inline]] inline void conv_tile_store_blocked_with(VV (&acc)[ROWS][NVEC], const ConvTileOut& o,
                                                                int ncols) {
  switch (o.act) {
    case Act::Relu: conv_tile_store_blocked_act<Act::Relu, ROWS, NVEC, SPLIT, BIAS_ONLY>(acc, o, ncols); return;
    case Act::LeakyRelu:
      conv_tile_store_blocked_act<Act::LeakyRelu, ROWS, NVEC, SPLIT, BIAS_ONLY>(acc, o, ncols);
      return;
    case Act::Clip: conv_tile_store_blocked_act<Act::Clip, ROWS, NVEC, SPLIT, BIAS_ONLY>(acc, o, ncols); return;
    default: conv_tile_store_blocked_act<Act::None, ROWS, NVEC, SPLIT, BIAS_ONLY>(acc, o, ncols); return;
  }
}
template <int ROWS, int NVEC, int SPLIT = 0, class VV = V>
[[gnu::always_inline]] inline void conv_tile_store_blocked(VV (&acc)[ROWS][NVEC], const ConvTileOut& o, int ncols) {
  if (o.bias && !o.residual && o.alpha == 1.f) conv_tile_store_blocked_with<ROWS, NVEC, SPLIT, true>(acc, o, ncols);
  else conv_tile_store_blocked_with<ROWS, NVEC, SPLIT, false>(acc, o, ncols);
}

// The low-half operations of a LAST_HALF tile (Vec512 only; dependent names, so only the tiles
// that use them instantiate them).
template <class VV>
[[gnu::always_inline]] inline VV load_low(const float* p) { return VV::load_low(p); }
template <class VV>
[[gnu::always_inline]] inline VV fma_low(VV a, VV b, VV c) { return VV::fma_low(a, b, c); }

// Whether a tile of rows x nvec accumulators, its nvec weight vectors and the broadcast need
// more vector registers than the ISA has (`regs`): the 7 x 64 tiles on AVX-512 (33 of 32), the
// 3 x 32 ones on AVX2 (17 of 16). GCC 12 then kept one or two accumulators on the stack, a
// reload and a store every K step; such a tile instead reads its last weight vector from L1 in
// each row's FMA (a memory operand, no register held), through load_each_use.
constexpr bool last_weight_from_l1(int rows, int nvec, int regs) { return rows * nvec + nvec + 1 > regs; }
// p, opaque to the compiler, so that a load from it is issued where it is used instead of
// being hoisted into a register shared by every row.
[[gnu::always_inline]] inline const float* load_each_use(const float* p) {
  asm volatile("" : "+r"(p));
  return p;
}

// Software prefetch, for hosts whose FMA rate outruns the hardware prefetchers (Ice Lake
// server's two 512-bit FMA ports: a 14 x 32 tile step is 14 cycles there, 28 on Zen 4). Each
// step reads a row of the packed weight from L2 (a block is 96 KiB, past L1) and the segment's
// input lines, and the next segment's input lies a channel-block plane away, a stride no
// hardware prefetcher follows. So every step fetches the weight row kConvPrefetchSteps ahead,
// and each segment fetches the next one's input lines (a tap's or a channel block's pixels).
// Paired in-process A/B on Ice Lake (one thread, resnet50's layers, channel-blocked):
// 1024 -> 256 1x1 at 14x14 0.84, 256 -> 64 at 56x56 0.93, the 3x3s 0.96-0.97; fetching
// 16 steps ahead or two segments ahead measured the same, and with the prefetches the
// 768-step K blocks stayed best (128 and 256 steps: 1.02-1.07). resnet50 as a whole 0.92-0.93
// on one thread, 0.89 on two (scripts/ab_bench.py model, BENCHMARKS.md).
constexpr int64_t kConvPrefetchSteps = 8;

// The input lines of ROWS pixels SW floats apart at a (rows >= SPLIT: at a + jump, as in
// conv_tile_split), one prefetch per line. (The prefetch wrappers are always_inline: called
// from an always_inline helper like this one before GCC 12 had inlined them, they were deleted
// as calls without side effects, and no prefetch reached the object code.)
template <int FIRST, int SW, int... L>
[[gnu::always_inline]] inline void prefetch_span(const float* a, std::integer_sequence<int, L...>) {
  (prefetch(a + L * kLineFloats), ...);
  prefetch(a + (FIRST - 1) * SW);
}
template <int ROWS, int SW, int SPLIT>
[[gnu::always_inline]] inline void conv_tile_prefetch_rows(const float* a, int64_t jump) {
  constexpr int FIRST = SPLIT > 0 ? SPLIT : ROWS;
  prefetch_span<FIRST, SW>(a, std::make_integer_sequence<int, (FIRST - 1) * SW / kLineFloats + 1>{});
  if constexpr (SPLIT > 0)
    prefetch_span<ROWS - SPLIT, SW>(a + jump,
                                    std::make_integer_sequence<int, (ROWS - SPLIT - 1) * SW / kLineFloats + 1>{});
}

#include "fetch_lines.inl"
// The lines a tile of ROWS pixels stores into, ncols channels of them (ConvTileOut::
// fetch_for_write), fetched for writing before its K loop. At two threads an output often lands
// on arena lines the other core wrote last (another tensor's bytes, split another way), and a
// store to such a line waits for the line to come over; fetched early, that wait overlaps the
// FMAs. (A wrap tile's second row lies row_jump further on: its lines are left to the stores.)
template <int ROWS>
[[gnu::always_inline]] inline void conv_tile_fetch_out(const ConvTileOut& o, int ncols) {
  const int64_t blocks = (ncols + o.block - 1) / o.block;
  for (int64_t k = 0; k < blocks; ++k) fetch_lines_for_write(o.dst + k * o.block_stride, ROWS * o.block);
}

// ConvL2Lines as a tile walks it: step() fetches the next line into L2 while any is left (one
// call per K step), the first range and then the second.
struct L2Fetch {
  const float* at = nullptr;
  int64_t left = 0;
  const float* then = nullptr;
  int64_t then_left = 0;
  const float* warm = nullptr;
  int64_t warm_left = 0;
  int warm_step = 0;
  explicit L2Fetch(const ConvL2Lines* l2) {
    if (l2) {
      at = l2->lines, left = l2->count, then = l2->lines2, then_left = l2->count2;
      warm = l2->warm, warm_left = l2->warm_count, warm_step = l2->warm_per_step;
    }
  }
  [[gnu::always_inline]] void step() {
    if (warm_left > 0) {
      const int n = warm_left < warm_step ? static_cast<int>(warm_left) : warm_step;
      for (int i = 0; i < n; ++i) prefetch_l2(warm + i * kLineFloats);
      warm += n * kLineFloats;
      warm_left -= n;
    }
    if (left <= 0) return;
    prefetch_l2(at);
    at += kLineFloats;
    if (--left == 0) at = then, left = then_left, then_left = 0;
  }
};

// LAST_HALF: the last of the NVEC vectors holds 8 columns (ncols <= (NVEC - 1) * W + 8), computed
// with half-width loads and FMAs (conv_tile_three_quarter in dispatch.h). PANEL: floats per
// packed weight row (NR, or 64 for the conv_tile_p64 family). PF: fetch the weight rows
// kConvPrefetchSteps ahead (not on the 6 x 64 tile: see conv_tile_p64).
template <int ROWS, int NVEC, int SW, int SPLIT = 0, bool LAST_HALF = false, int PANEL = NR, bool PF = true>
void conv_tile_split(const ConvSegment* seg, int nseg, int64_t a_step, const float* __restrict a, int64_t jump,
                     const float* __restrict b, int64_t b_next, float* __restrict c, int64_t ldc, int ncols,
                     bool load_c, const ConvTileOut* out, const ConvL2Lines* l2) {
  constexpr int PV = PANEL / V::W;  // vectors per packed panel row
  // The wide tiles (7 x 4 vectors on AVX-512, 3 x 4 on AVX2): last_weight_from_l1. Zen 5, one
  // thread, against the spilling tile: resnet50's 7x7 layers (512 -> 512 3x3, 2048 -> 512 and
  // 512 -> 2048 1x1) 0.93-0.96 of the best time, 256 -> 256 3x3 at 7x7 0.91 of the median;
  // the AVX2 table's 0.97-0.99; mobilenet_v2 0.979 / 0.994 (one / two threads), efficientnet_b0
  // 0.991 (two).
  constexpr bool kLastFromL1 = last_weight_from_l1(ROWS, NVEC, V::W == 16 ? 32 : 16);
  if (out && out->fetch_for_write) conv_tile_fetch_out<ROWS>(*out, ncols);
  L2Fetch fetch(l2);
  V acc[ROWS][NVEC];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) acc[r][v] = V::zero();
  const float* b2 = b + b_next;  // the second panel of a wide tile
  int general_segs = nseg;  // 0 when the pixel pairs below ran the K loop
#if defined(__AVX512F__)
  // The last vector's 8 columns of two pixels in one accumulator (pair_tail.h): 14 + 7 FMAs a
  // K step instead of 14 + 14 half-width ones. Rows r and r + 1's accumulators for those columns
  // are rebuilt from the pair after the loop, for the stores below.
  if constexpr (LAST_HALF && NVEC == 2 && PV == 2 && SPLIT == 0 && ROWS % 2 == 0 && V::W == 16) {
    if (detail::three_quarter_pairs_enabled) {
      general_segs = 0;
      V pair[ROWS / 2];
#pragma GCC unroll 8
      for (int j = 0; j < ROWS / 2; ++j) pair[j] = V::zero();
      for (int s = 0; s < nseg; ++s) {
        const float* ap = a + seg[s].offset;
        if (s + 1 < nseg) conv_tile_prefetch_rows<ROWS, SW, 0>(a + seg[s + 1].offset, 0);
        for (int64_t q = seg[s].steps; q > 0; --q, ap += a_step, b += PANEL) {
          if constexpr (PF) {
            prefetch(b + kConvPrefetchSteps * PANEL);
            prefetch(b + kConvPrefetchSteps * PANEL + V::W);
          }
          fetch.step();
          const V b0 = V::load(b);
          const V tail = {_mm512_broadcast_f32x8(_mm256_loadu_ps(b + V::W))};  // columns 16-23, twice
#pragma GCC unroll 8
          for (int r = 0; r < ROWS; r += 2) {
            const V a0 = V::set1(ap[r * SW]), a1 = V::set1(ap[(r + 1) * SW]);
            acc[r][0] = fma(a0, b0, acc[r][0]);
            acc[r + 1][0] = fma(a1, b0, acc[r + 1][0]);
            pair[r / 2] = fma(V::low_halves(a0, a1), tail, pair[r / 2]);
          }
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < ROWS; r += 2) acc[r][1] = pair[r / 2], acc[r + 1][1] = V::high_halves(pair[r / 2], pair[r / 2]);
    }
  }
#endif
  for (int s = 0; s < general_segs; ++s) {
    const float* ap = a + seg[s].offset;
    const float* ap2 = ap + jump - SPLIT * SW;  // row r >= SPLIT at ap2[r * SW]
    if (s + 1 < nseg) conv_tile_prefetch_rows<ROWS, SW, SPLIT>(a + seg[s + 1].offset, jump);
    for (int64_t q = seg[s].steps; q > 0; --q, ap += a_step, ap2 += a_step, b += PANEL, b2 += PANEL) {
      if constexpr (PF) {
#pragma GCC unroll 4
        for (int v = 0; v < NVEC; v += kLineFloats / V::W)
          prefetch((v < PV ? b : b2) + kConvPrefetchSteps * PANEL + (v % PV) * V::W);
      }
      fetch.step();
      V bv[NVEC];
#pragma GCC unroll 4
      for (int v = 0; v < NVEC - kLastFromL1; ++v) {
        const float* bp = (v < PV ? b : b2) + (v % PV) * V::W;
        if constexpr (LAST_HALF) bv[v] = v == NVEC - 1 ? load_low<V>(bp) : V::load(bp);
        else bv[v] = V::load(bp);
      }
#pragma GCC unroll 16
      for (int r = 0; r < ROWS; ++r) {
        const V ar = V::set1(SPLIT > 0 && r >= SPLIT ? ap2[r * SW] : ap[r * SW]);
        if constexpr (kLastFromL1) {
          const float* last = load_each_use(((NVEC - 1) < PV ? b : b2) + ((NVEC - 1) % PV) * V::W);
          if constexpr (LAST_HALF) bv[NVEC - 1] = load_low<V>(last);
          else bv[NVEC - 1] = V::load(last);
        }
#pragma GCC unroll 4
        for (int v = 0; v < NVEC; ++v) {
          if constexpr (LAST_HALF) acc[r][v] = v == NVEC - 1 ? fma_low<V>(ar, bv[v], acc[r][v]) : fma(ar, bv[v], acc[r][v]);
          else acc[r][v] = fma(ar, bv[v], acc[r][v]);
        }
      }
    }
  }
  if constexpr (V::W == 8 || V::W == 16) {
    if (out) {
      if (load_c)
#pragma GCC unroll 16
        for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < NVEC; ++v)
            if (v * V::W < ncols) {
              const int n = ncols - v * V::W < V::W ? ncols - v * V::W : V::W;
              const float* cv = c + r * ldc + v * V::W;
              acc[r][v] = acc[r][v] + (n == V::W ? V::load(cv) : V::load_first(cv, n));
            }
      conv_tile_store_blocked<ROWS, NVEC, SPLIT>(acc, *out, ncols);
      return;
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) {
      const int col = v * V::W;
      if (ncols >= col + V::W) {
        if (load_c) acc[r][v] = acc[r][v] + V::load(cr + col);
        acc[r][v].store(cr + col);
      } else if (ncols > col) {
        const int n = ncols - col;
        if (load_c) acc[r][v] = acc[r][v] + V::load_first(cr + col, n);
        acc[r][v].store_first(cr + col, n);
      }
    }
  }
}

template <int ROWS, int NVEC, int SW, bool LAST_HALF = false>
void conv_tile(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, const float* b, int64_t b_next,
               float* c, int64_t ldc, int ncols, bool load_c, const ConvTileOut* out, const ConvL2Lines* l2) {
  conv_tile_split<ROWS, NVEC, SW, 0, LAST_HALF>(seg, nseg, a_step, a, 0, b, b_next, c, ldc, ncols, load_c, out, l2);
}

// mr pixels that wrap from one output row to the next: rows [0, SPLIT) from a, the rest from
// a + jump (conv_tile_wrap in dispatch.h).
template <int SW, int SPLIT>
void conv_tile_wrap(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, int64_t jump, const float* b,
                    float* c, int64_t ldc, int ncols, bool load_c, const ConvTileOut* out, const ConvL2Lines* l2) {
  conv_tile_split<MR, NR / V::W, SW, SPLIT>(seg, nseg, a_step, a, jump, b, 0, c, ldc, ncols, load_c, out, l2);
}

// The 6 x 64 family (KernelTable::conv_tile_p64, AVX-512): ROWS pixels, or mr pixels wrapping
// after SPLIT of them, by the four vectors of one 64-column panel row. No software prefetch of
// the weight rows: a step's 4 lines are consecutive with the last step's, which the hardware
// prefetcher follows, and the 4 prefetches took load slots the step needs (in-process pairs on
// one core, Xeon 5th gen: 3x3 at 56x56 and 28x28 0.944-0.945 of the time with them, the 7x7/2
// stem 0.937, a stride-2 3x3 1.026).
constexpr int kP64Rows = 6, kP64Cols = 64;
template <int ROWS, int SW>
void conv_tile_p64(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, const float* b, int64_t,
                   float* c, int64_t ldc, int ncols, bool load_c, const ConvTileOut* out, const ConvL2Lines* l2) {
  conv_tile_split<ROWS, kP64Cols / V::W, SW, 0, false, kP64Cols, false>(seg, nseg, a_step, a, 0, b, 0, c, ldc,
                                                                         ncols, load_c, out, l2);
}
template <int SW, int SPLIT>
void conv_wrap_p64(const ConvSegment* seg, int nseg, int64_t a_step, const float* a, int64_t jump, const float* b,
                   float* c, int64_t ldc, int ncols, bool load_c, const ConvTileOut* out, const ConvL2Lines* l2) {
  conv_tile_split<kP64Rows, kP64Cols / V::W, SW, SPLIT, false, kP64Cols, false>(seg, nseg, a_step, a, jump, b,
                                                                                 0, c, ldc, ncols, load_c, out, l2);
}
// Slots [SLOT] of pixel stride SW: tiles of ROWS..1 rows and wraps of split ROWS-1..1.
template <int ROWS, int SLOT, int SW>
void fill_p64(KernelTable& t) {
  if constexpr (ROWS > 0) {
    t.conv_tile_p64[SLOT][ROWS - 1] = conv_tile_p64<ROWS, SW>;
    if constexpr (ROWS < kP64Rows) t.conv_wrap_p64[SLOT][ROWS - 1] = conv_wrap_p64<SW, ROWS>;
    fill_p64<ROWS - 1, SLOT, SW>(t);
  }
}
template <class VV = V>
void fill_p64_tiles(KernelTable& t) {
  if constexpr (VV::W == 16) {
    t.conv_shape_p64 = ConvTileShape{kP64Rows, kP64Cols};
    fill_p64<kP64Rows, 0, 1>(t);
    fill_p64<kP64Rows, 1, 2>(t);
    fill_p64<kP64Rows, 2, 8>(t);
    fill_p64<kP64Rows, 3, 16>(t);
  }
}

// The edge-row tile (KernelTable::conv_edge_row, conv_direct_rows.cpp): a whole output row of
// ROWS pixels by one NR-column panel, reading the unpadded channel-blocked input in place (pixels
// SW floats apart). A segment's pixels [P0, P1) take its steps: the others' taps lie in the left
// or right padding, where the general schedule's padded copy has zeros and its FMAs add 0 * w,
// which leaves every sum as it was (finite weights): same sums in the same order, fewer FMAs.
// A segment's offset is its first computed pixel's, so no pointer leaves the input.
// digits_cnn's 8-wide rows: 22 of 24 pixel-taps a window row (ORT's NCHWc kernel skips them too).
template <int ROWS, int SW, int P0, int P1>
[[gnu::always_inline]] inline void edge_row_steps(V (&acc)[ROWS][NR / V::W], const float* __restrict ap,
                                                  const float* __restrict b, int64_t steps) {
  constexpr int NVEC = NR / V::W;
#pragma GCC unroll 8
  for (int64_t q = 0; q < steps; ++q, ++ap, b += NR) {
    V bv[NVEC];
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) bv[v] = V::load(b + v * V::W);
#pragma GCC unroll 16
    for (int r = P0; r < P1; ++r) {
      const V ar = V::set1(ap[(r - P0) * SW]);
#pragma GCC unroll 4
      for (int v = 0; v < NVEC; ++v) acc[r][v] = fma(ar, bv[v], acc[r][v]);
    }
  }
}
template <int ROWS, int SW>
void conv_edge_row(const ConvEdgeSegment* seg, int nseg, const float* a, const float* b, const ConvTileOut& out,
                   int ncols) {
  constexpr int NVEC = NR / V::W;
  V acc[ROWS][NVEC];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) acc[r][v] = V::zero();
  for (int s = 0; s < nseg; ++s) {
    const float* ap = a + seg[s].offset;
    switch (seg[s].skip) {
      case 1: edge_row_steps<ROWS, SW, 1, ROWS>(acc, ap, b, seg[s].steps); break;
      case 2: edge_row_steps<ROWS, SW, 0, ROWS - 1>(acc, ap, b, seg[s].steps); break;
      default: edge_row_steps<ROWS, SW, 0, ROWS>(acc, ap, b, seg[s].steps); break;
    }
    b += seg[s].steps * NR;
  }
  conv_tile_store_blocked<ROWS, NVEC>(acc, out, ncols);
}
// 8-wide rows on 16 lanes: 16 accumulators of one 32-column panel.
template <class VV = V>
void fill_edge_rows(KernelTable& t) {
  if constexpr (VV::W == 16 && NR == 2 * VV::W) {
    t.conv_edge_row[0][7] = conv_edge_row<8, 8>;
    t.conv_edge_row[1][7] = conv_edge_row<8, 16>;
  }
}

// The table slots for pixel stride SW: planar (1, 2) or channel-blocked (8, 16).
template <int SW>
auto& conv_tile_slots(KernelTable& t) {
  if constexpr (SW <= 2) return t.conv_tile[SW - 1];
  else return t.conv_tile_blk[SW / 8 - 1];
}
template <int SW>
auto& conv_wrap_slots(KernelTable& t) {
  if constexpr (SW <= 2) return t.conv_tile_wrap[SW - 1];
  else return t.conv_tile_wrap_blk[SW / 8 - 1];
}

// Fills the wrap slots of pixel stride SW for split 1..SPLIT.
template <int SPLIT, int SW>
void fill_wrap_tiles(KernelTable& t) {
  if constexpr (SPLIT > 0) {
    conv_wrap_slots<SW>(t)[SPLIT - 1] = conv_tile_wrap<SW, SPLIT>;
    fill_wrap_tiles<SPLIT - 1, SW>(t);
  }
}

// Which wrap tiles a table has. AVX2 (mr 6, where most rows end in a short tile): every split.
// Other tables only mr/2 (two rows of mr/2, AVX-512's 7-wide layers); a missing split runs as
// two one-row tiles (conv_direct.cpp). All 26 of AVX-512's unrolled 14-row variants made its
// file compile 392 -> 613 s in the sanitizer build of fuzz.import (clang, ASan), on CI's
// critical path; the scalar table takes the fallback so that every host tests it.
template <int SW>
void fill_wraps(KernelTable& t) {
  if constexpr (kIsa == Isa::Avx2) {
    fill_wrap_tiles<MR - 1, SW>(t);
  } else if constexpr (MR % 2 == 0) {
    conv_wrap_slots<SW>(t)[MR / 2 - 1] = conv_tile_wrap<SW, MR / 2>;
  }
}

// Fills the tile slots of pixel stride SW: [0][rows-1] for rows 1..MR and [1][rows-1] for rows
// 1..MR/2 (twice the columns: the same number of accumulators).
template <int ROWS, int SW>
void fill_conv_tiles(KernelTable& t) {
  if constexpr (ROWS > 0) {
    auto& slot = conv_tile_slots<SW>(t);
    slot[0][ROWS - 1] = conv_tile<ROWS, NR / V::W, SW>;
    if constexpr (2 * ROWS <= MR) slot[1][ROWS - 1] = conv_tile<ROWS, 2 * NR / V::W, SW>;
    fill_conv_tiles<ROWS - 1, SW>(t);
  }
}

// The direct tactic's 1x1 schedule (conv_direct_1x1.cpp, KernelTable::conv_1x1_blk): ROWS
// pixels by 64 output channels (four vectors: two packed NR-column panels, b_next apart) over
// `blocks` KB-channel blocks of a channel-blocked input (a pixel's KB channels consecutive, the
// blocks a_block floats apart, the panel rows advancing NR per channel). The sums start at zero
// and, after the loop, take the bias and then the residual (first: the first batch; the
// residual is read before the tile writes its own output, so the output may lie over it) or
// the partial sums the previous batch stored at out.dst. last: the activation, else the sums
// stored as they are. One batch thus adds (sum + bias) + residual, the general schedule's
// floats. Added after the loop rather than before it, those loads held up no FMA: 1024 -> 256
// at 14x14 (8 batches) 1.01 -> 0.96 of the general schedule's time, 256 -> 64 at 56x56 0.96 ->
// 0.93. No software prefetch: the batch's 32 KiB of weight rows stay in L1 across the tiles of
// a batch, and each block's pixels are a sequential stream the hardware prefetcher follows
// (in-process A/B: a prefetch of the weight rows 8 steps ahead made 1x1 layers 4-5% slower).
// SW: floats between consecutive pixels' blocks: KB * stride (the downsample 1x1s' stride 2 on
// 8-channel blocks). The output's blocks (out.block) are 8 or 16 channels: partial sums read
// back from 16-channel ones are whole vectors, from 8-channel ones two halves.
// (VV: V, as a template parameter so that only the AVX-512 table compiles the body.)
template <int ROWS, int SW, int KB, class VV = V>
void conv_tile_1x1(const float* __restrict a, int64_t a_block, int64_t blocks, const float* __restrict b,
                   int64_t b_next, bool first, bool last, const ConvTileOut& out, const ConvL2Lines* l2) {
  constexpr int NVEC = 4;
  static_assert(VV::W == 16 && NR == 2 * VV::W, "64 columns are two AVX-512 panels");
  // 7 rows: last_weight_from_l1. Zen 5, paired against the spilling tile: resnet50's 1x1 layers
  // 0.90-0.93 of the time on one thread and 0.89-0.93 on two; the models (in-process pairs)
  // resnet50 0.965 / 0.932, mobilenet_v2 0.960 on two.
  constexpr bool kLastFromL1 = last_weight_from_l1(ROWS, NVEC, 32);
  VV acc[ROWS][NVEC];
  const int64_t bs = out.block_stride;
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVEC; ++v) acc[r][v] = VV::zero();
  const float* b2 = b + b_next;
  // The first batch stores the output's lines first (later ones read them back).
  if (first && out.fetch_for_write) conv_tile_fetch_out<ROWS>(out, NVEC * VV::W);
  L2Fetch fetch(l2);
  for (int64_t blk = 0; blk < blocks; ++blk, a += a_block) {
#pragma GCC unroll 2
    for (int i = 0; i < KB; ++i, b += NR, b2 += NR) {
      fetch.step();
      VV bv[NVEC] = {VV::load(b), VV::load(b + VV::W), VV::load(b2), VV::zero()};
      if constexpr (!kLastFromL1) bv[NVEC - 1] = VV::load(b2 + VV::W);
#pragma GCC unroll 8
      for (int r = 0; r < ROWS; ++r) {
        const VV ar = VV::set1(a[r * SW + i]);
        if constexpr (kLastFromL1) bv[NVEC - 1] = VV::load(load_each_use(b2 + VV::W));
#pragma GCC unroll 4
        for (int v = 0; v < NVEC; ++v) acc[r][v] = fma(ar, bv[v], acc[r][v]);
      }
    }
  }
  // Added after the loop, so that no FMA waits on these loads.
  const bool wide_out = out.block == VV::W;
#pragma GCC unroll 4
  for (int v = 0; v < NVEC; ++v) {
    const float* from = first ? out.residual : out.dst;  // null: the bias alone
    const VV bias = first && out.bias ? VV::load(out.bias + v * VV::W) : VV::zero();
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; ++r) {
      if (first && out.bias) acc[r][v] = acc[r][v] + bias;
      if (!from) continue;
      if (wide_out) {
        acc[r][v] = acc[r][v] + VV::load(from + v * bs + r * VV::W);
      } else {
        const float* lo = from + 2 * v * bs + r * kConvBlock;
        acc[r][v] = acc[r][v] + VV::load_halves(lo, lo + bs);
      }
    }
  }
  ConvTileOut o = out;
  o.bias = nullptr, o.residual = nullptr;
  if (!last) o.act = Act::None;
  conv_tile_store_blocked<ROWS, NVEC, 0, VV>(acc, o, NVEC * VV::W);
}

template <int ROWS>
void fill_conv_1x1(KernelTable& t) {
  if constexpr (ROWS > 0) {
    t.conv_1x1_blk[0][ROWS - 1] = conv_tile_1x1<ROWS, 8, 8>;
    t.conv_1x1_blk[1][ROWS - 1] = conv_tile_1x1<ROWS, 16, 8>;
    t.conv_1x1_blk[2][ROWS - 1] = conv_tile_1x1<ROWS, 16, 16>;
    t.conv_1x1_blk[3][ROWS - 1] = conv_tile_1x1<ROWS, 32, 16>;
    fill_conv_1x1<ROWS - 1>(t);
  }
}

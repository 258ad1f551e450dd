#include "gemm_driver.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "kiln/kernels/parallel.h"
#include "line_scratch.h"

namespace kiln::kernels::detail {
namespace {

// Below this many multiply-adds a product runs on one thread: a fork-join of the pool costs
// ~3 µs on a quiet machine and can cost ~100 µs when the worker has lost its core
// (bench/parallel_bench); 2^21 MACs take ~25 µs at 90 GMAC/s.
constexpr double kMinParallelMacs = 1 << 21;

// Depth of the K blocks over a prepacked B (see run_part): measured on bert/gpt2 shapes
// (K = 768: 199 -> 210 GFLOP/s for 128 x 3072, 167 -> 191 for gpt2's 128 x 50257 head).
constexpr int64_t kPackedKc = 768;
// Depth up to which a prepacked B's product runs all of K in one block: each further block
// reads and writes the C tiles once more, and on a 1 MiB L2 (Zen 5) the wider panels (kc x 64
// floats, up to 512 KiB) still stream from L2 fast enough. Zen 5, in-process pairs against
// blocks of kPackedKc, one / two threads: 1024^3 0.957 / 0.946, 1536^3 0.991 / 0.976,
// 128 x 4096 x 1024 0.985 / 0.974, 384 x 1024 x 1024 0.987 / 0.983, 128 x 1024 x 1024 0.997 /
// 0.997; 2048^3 whole against blocks of 1024 0.983 / 0.989. Deeper (BERT's 128 x 768 x 3072)
// stays in blocks of kPackedKc: whole, 0.953 alone, but blocks of 1536 ran bert_base 1.004 /
// 1.010 of the time.
constexpr int64_t kPackedWholeK = 2048;

// K up to which in-place-B products run in strips: the block's kc x nc rows of B (64 x 1024
// floats: 256 KiB) then stay in L2 while every row tile passes over them. At K = kStripMaxK
// only when the part is at most one column block wide: resnet50's layer1 1x1 layers (K = 64
// over 3136 pixels) ran 71 -> 81 GFLOP/s with column strips outer on Zen 3, while mobilenet's
// 64 -> 384 at 14x14 preferred strips (83 vs 79) and 28x28 was even.
constexpr int64_t kStripMaxK = 64;
// The largest block of B rows run_part packs (see pack_rows there): about half of a 512 KB L2.
constexpr int64_t kPackRowsBytes = 256 << 10;

struct Part {
  int64_t i0, i1, j0, j1;
};

// Splits C into pm x pn parts on tile boundaries, choosing the split whose largest part (in
// padded tiles) is smallest; ties go to fewer parts, then to more row parts when rows_first.
void partition(int64_t M, int64_t N, int mr, int nr, int threads, bool rows_first, std::vector<Part>& parts) {
  const int64_t mt = ceil_div(M, mr), nt = ceil_div(N, nr);
  // Cost: the largest part's padded tiles (rows x columns, in floats).
  int64_t best_pm = 1, best_pn = 1, best_cost = mt * mr * nt * nr;
  for (int64_t pm = 1; pm <= std::min<int64_t>(threads, mt); ++pm)
    for (int64_t pn = 1; pm * pn <= threads && pn <= nt; ++pn) {
      const int64_t cost = ceil_div(mt, pm) * mr * ceil_div(nt, pn) * nr;
      const bool tie = cost == best_cost && pm * pn == best_pm * best_pn;
      if (cost < best_cost || (cost == best_cost && pm * pn < best_pm * best_pn) || (tie && rows_first && pm > best_pm))
        best_pm = pm, best_pn = pn, best_cost = cost;
    }
  for (int64_t a = 0; a < best_pm; ++a)
    for (int64_t b = 0; b < best_pn; ++b) {
      Part p{mt * a / best_pm * mr, std::min(M, mt * (a + 1) / best_pm * mr), nt * b / best_pn * nr,
             std::min(N, nt * (b + 1) / best_pn * nr)};
      if (p.i0 < p.i1 && p.j0 < p.j1) parts.push_back(p);
    }
}

// Whether every part of a Rows split packs B again: B packed per call, or in-place rows longer
// than the strips' K (run_part packs those when they are not line-aligned). resnet50's 14x14
// 1x1 layers (196-float rows) packed all of B in each of 8 parts on 2 threads: 1024->256 ran at
// 137 GFLOP/s, 166 with one part per thread (Zen 3, conv_bench).
bool repacks_b(const GemmProblem& p) { return !p.b_packed && (!p.b_rows || p.K > kStripMaxK); }

// Rows / Cols split (GemmProblem::split): up to kSplitPartsPerThread parts per thread along one
// dimension, whole tiles each; one per thread when every part packs the whole other operand
// again (`repacks`: pixel-gemm's pixels, packed on the fly, under a Cols split: with 8 parts on
// 2 threads, mobilenet_v2's 7x7 960->160 projections ran slower on 2 threads than on 1).
void split_parts(int64_t M, int64_t N, int mr, int nr, int threads, bool rows, bool repacks, std::vector<Part>& parts) {
  const int64_t tiles = rows ? ceil_div(M, mr) : ceil_div(N, nr), step = rows ? mr : nr, extent = rows ? M : N;
  const int64_t per_thread = repacks ? 1 : kSplitPartsPerThread;
  const int64_t count = threads <= 1 ? 1 : std::min<int64_t>(tiles, int64_t{threads} * per_thread);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t lo = tiles * k / count * step, hi = std::min(extent, tiles * (k + 1) / count * step);
    if (lo < hi) parts.push_back(rows ? Part{lo, hi, 0, N} : Part{0, M, lo, hi});
  }
}

// The part list of a gemm_run: one of the calling thread's vectors, kept between calls (no
// allocation per call once warm). A gemm_run nested in another's callback on the same thread
// takes the next vector; a deque keeps the outer ones where they are.
class PartList {
 public:
  PartList() : parts_(next()) { parts_.clear(); }
  ~PartList() { --depth(); }
  PartList(const PartList&) = delete;
  PartList& operator=(const PartList&) = delete;
  std::vector<Part>& get() { return parts_; }

 private:
  static size_t& depth() {
    thread_local size_t d = 0;
    return d;
  }
  static std::vector<Part>& next() {
    thread_local std::deque<std::vector<Part>> lists;
    if (lists.size() <= depth()) lists.emplace_back();
    return lists[depth()++];
  }
  std::vector<Part>& parts_;
};

// One K block of consecutive panels: where the first starts and how far apart they are.
struct Panels {
  const float* first;
  int64_t stride;
};
// Panels packed over the full K (panel q at q*K*width): the K block starting at depth pc.
Panels prepacked(const float* packed, int64_t panel, int width, int64_t K, int64_t pc) {
  return {packed + panel * K * width + pc * width, K * width};
}

void run_part(const KernelTable& t, const GemmProblem& p, const Part& part, float* bbuf) {
  const GemmBlocking& g = t.gemm;
  const int MR = g.mr, NR = g.nr;
  // B packed ahead of time: the whole K up to kPackedWholeK, else K blocks of up to kPackedKc
  // (equal sizes). Each K block reads and writes every C tile once more, and for wide products
  // (gpt2's 50257-column head: C is 26 MB) those tiles come from DRAM, one page per row. Few
  // rows: B is streamed once whatever kc is, so do not split K at all (C is then written once).
  int64_t kc_max = std::max<int64_t>(1, g.kc);
  if (p.b_packed)
    kc_max = p.M <= MR || p.K <= kPackedWholeK ? p.K : ceil_div(p.K, ceil_div(p.K, std::max(kPackedKc, g.kc)));
  const int64_t mc_max = round_up(std::max<int64_t>(g.mc, MR), MR);
  const int64_t nc_max = p.b_packed ? part.j1 - part.j0 : round_up(std::max<int64_t>(g.nc, NR), NR);
  thread_local LineScratch abuf_tl;
  thread_local std::vector<const float*> brows;
  float* const abuf = p.a_packed ? nullptr : abuf_tl.floats(static_cast<size_t>(mc_max * std::min(kc_max, p.K)));
  const bool epi = p.epi && !epilogue_is_identity(*p.epi);
  const bool regs_epi = epi && epilogue_in_registers(tile_epilogue(*p.epi, 0, 0));
  // Strips (KernelTable::tile_rows_strip) for B read in place with a short K: a 6x16 tile over
  // 16 input channels (mobilenet_v2's 112x112 pointwise layers) spent as long in the driver
  // loop and the call as in its FMAs.
  const bool strips = p.b_rows && (p.K < kStripMaxK || (p.K == kStripMaxK && part.j1 - part.j0 <= nc_max));
  // Longer K: B's rows are packed into panels once per block. Read in place, a panel's NR
  // floats of each of kc rows span twice as many cache lines as its packed copy (rows are
  // rarely line-aligned: 196 floats apart for a 14x14 image), which with the A panel no longer
  // fit in L1 for the row tiles that reuse them (resnet50's 1x1 layers, K = 256..2048).
  // Only blocks whose packed copy stays in L2 (kPackRowsBytes) and whose rows are not already
  // line-aligned: 56x56 and 28x28 planes (3136 and 784 floats) were as fast or faster in place.
  thread_local LineScratch rows_tl;
  bool pack_rows = false;
  for (int64_t jc = part.j0; jc < part.j1; jc += nc_max) {
    const int64_t nc = std::min(nc_max, part.j1 - jc);
    for (int64_t pc = 0; pc < p.K; pc += kc_max) {
      const int64_t kc = std::min(kc_max, p.K - pc);
      Panels b{nullptr, 0};
      if (p.b_rows) {
        if (static_cast<int64_t>(brows.size()) < kc) brows.resize(kc);
        p.b_rows(pc, kc, brows.data());
        auto aligned = [&](const float* r) { return reinterpret_cast<uintptr_t>(r + jc) % 64 == 0; };
        pack_rows = !strips && kc * nc * static_cast<int64_t>(sizeof(float)) <= kPackRowsBytes &&
                    !(aligned(brows[0]) && (kc == 1 || aligned(brows[1])));
        if (pack_rows) {
          float* const packed = rows_tl.floats(static_cast<size_t>(round_up(nc, NR) * kc));
          t.pack_row_panels(brows.data(), kc, jc, nc, packed);
          b = Panels{packed, kc * NR};
        }
      } else {
        b = p.b_packed ? prepacked(p.b_packed, jc / NR, NR, p.K, pc)
                       : (p.pack_b(pc, kc, jc, nc, bbuf), Panels{bbuf, kc * NR});
      }
      const bool load_c = p.accumulate || pc > 0, last = pc + kc == p.K;
      for (int64_t ic = part.i0; ic < part.i1; ic += mc_max) {
        const int64_t mc = std::min(mc_max, part.i1 - ic);
        // The panel the strip after the one at column jr reads (prepacked B: see
        // gemm_tile.inl's NextPanel): the next panel, the block's first for the next row block,
        // or the next K block's first.
        auto next_panel = [&](int64_t jr) -> const float* {
          if (jr + NR < nc) return b.first + (jr / NR + 1) * b.stride;
          if (ic + mc < part.i1) return b.first;
          if (pc + kc < p.K) return prepacked(p.b_packed, jc / NR, NR, p.K, pc + kc).first;
          return jc + nc >= part.j1 ? p.b_next : nullptr;
        };
        // A short tail (at most MR / 2 rows past the block's whole tiles) and the last whole
        // tile become two tiles of about (MR + tail) / 2 rows, packed as two panels: a 2-row
        // tile streams the whole B panel for two FMAs per vector loaded. M = 128 (BERT's and
        // GPT-2's sequence: 9 x 14 + 2 on AVX-512's former 14-row tile, 21 x 6 + 2 on its 6-row
        // one) took 3.7% more per row than 126; split, BERT's four GEMM shapes ran 0.989-0.994 of
        // the time (one Ice Lake core, paired, 14-row tiles).
        const int64_t tail = mc % MR, whole_tiles = mc / MR;
        const bool split_tail = p.a_any_rows && !p.a_packed && !strips && tail > 0 && 2 * tail <= MR && whole_tiles >= 1;
        const int64_t tail_row = split_tail ? (whole_tiles - 1) * MR : 0;  // where the two tiles start
        const int64_t tail_first = split_tail ? (MR + tail + 1) / 2 : 0;    // rows of the first
        Panels a{nullptr, 0};
        if (p.a_packed) {
          a = prepacked(p.a_packed, ic / MR, MR, p.K, pc);
        } else if (p.a_rows) {  // only the tail's panels, where the packed block would have them
          if (split_tail) {
            p.pack_a(ic + tail_row, tail_first, pc, kc, abuf + (whole_tiles - 1) * kc * MR);
            p.pack_a(ic + tail_row + tail_first, MR + tail - tail_first, pc, kc, abuf + whole_tiles * kc * MR);
          } else if (tail > 0) {
            p.pack_a(ic + whole_tiles * MR, tail, pc, kc, abuf + whole_tiles * kc * MR);
          }
          a = Panels{abuf, kc * MR};
        } else if (split_tail) {
          p.pack_a(ic, tail_row + tail_first, pc, kc, abuf);
          p.pack_a(ic + tail_row + tail_first, MR + tail - tail_first, pc, kc, abuf + whole_tiles * kc * MR);
          a = Panels{abuf, kc * MR};
        } else {
          p.pack_a(ic, mc, pc, kc, abuf);
          a = Panels{abuf, kc * MR};
        }
        // One tile of `rows` rows from row ir of the block, its A in panel `panel`.
        auto tile_at = [&](int64_t ir, int64_t jr, int rows, int64_t panel) {
          const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          const int vecs = (nr + t.simd_width - 1) / t.simd_width;  // the fewest that cover nr
          float* c = p.C + (ic + ir) * p.ldc + jc + jr;
          const float* ap = a.first + panel * a.stride;
          const TileEpilogue te = last && epi ? tile_epilogue(*p.epi, ic + ir, jc + jr) : TileEpilogue{};
          const TileEpilogue* in_regs = last && epi && regs_epi ? &te : nullptr;
          if (p.b_rows && !pack_rows)
            t.tile_rows[rows - 1][vecs - 1][nr != vecs * t.simd_width](kc, ap, brows.data(), jc + jr, c, p.ldc, nr,
                                                                       load_c, in_regs);
          else
            t.tile[rows - 1][vecs - 1](kc, ap, b.first + (jr / NR) * b.stride, c, p.ldc, nr, load_c, in_regs);
          if (last && epi && !regs_epi) t.epilogue_tile(c, p.ldc, rows, nr, te);
        };
        auto tile = [&](int64_t ir, int64_t jr) {
          tile_at(ir, jr, static_cast<int>(std::min<int64_t>(MR, mc - ir)), ir / MR);
        };
        if (strips) {
          // Row tiles outer: each mr-row tile runs over the block's whole panels in one call,
          // then its partial panel; the kc x nc rows of B stay in L2 for the next row tile.
          const int64_t whole = nc / NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            if (mc - ir < MR) {
              for (int64_t jr = 0; jr < nc; jr += NR) tile(ir, jr);
              continue;
            }
            if (whole > 0) {
              const TileEpilogue te = last && epi ? tile_epilogue(*p.epi, ic + ir, jc) : TileEpilogue{};
              float* c = p.C + (ic + ir) * p.ldc + jc;
              t.tile_rows_strip(kc, a.first + (ir / MR) * a.stride, brows.data(), jc, c, p.ldc, whole, load_c,
                                last && epi && regs_epi ? &te : nullptr);
              if (last && epi && !regs_epi) t.epilogue_tile(c, p.ldc, MR, whole * NR, te);
            }
            if (whole * NR < nc) tile(ir, whole * NR);
          }
        } else {
          // Each whole panel's whole row tiles in one call, the rest one by one; with A in place
          // (p.a_rows) every panel's, a partial one's too (its rows' A is not packed).
          const int64_t whole_rows = split_tail ? tail_row : whole_tiles * MR;
          for (int64_t jr = 0; jr < nc; jr += NR) {
            const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
            const bool strip = whole_rows > 0 && (nr == NR || p.a_rows);
            if (strip) {
              const TileEpilogue te = last && epi ? tile_epilogue(*p.epi, ic, jc + jr) : TileEpilogue{};
              const TileEpilogue* in_regs = last && epi && regs_epi ? &te : nullptr;
              float* c = p.C + ic * p.ldc + jc + jr;
              if (p.a_rows)
                t.tile_a_rows_col_strip[(nr + t.simd_width - 1) / t.simd_width - 1](
                    kc, p.a_rows + ic * p.lda + pc, p.lda, b.first + (jr / NR) * b.stride, c, p.ldc, nr,
                    whole_rows / MR, load_c, in_regs, next_panel(jr));
              else if (p.b_rows && !pack_rows)
                t.tile_rows_col_strip(kc, a.first, a.stride, brows.data(), jc + jr, c, p.ldc, whole_rows / MR, load_c,
                                      in_regs);
              else
                t.tile_col_strip(kc, a.first, a.stride, b.first + (jr / NR) * b.stride, c, p.ldc, whole_rows / MR,
                                 load_c, in_regs, p.b_packed ? next_panel(jr) : nullptr);
              if (last && epi && !regs_epi) t.epilogue_tile(c, p.ldc, whole_rows, nr, te);
            }
            const int64_t rows_end = split_tail ? tail_row : mc;  // then the two half tiles
            for (int64_t ir = strip ? whole_rows : 0; ir < rows_end; ir += MR) tile(ir, jr);
            if (split_tail) {
              tile_at(tail_row, jr, static_cast<int>(tail_first), whole_tiles - 1);
              tile_at(tail_row + tail_first, jr, static_cast<int>(MR + tail - tail_first), whole_tiles);
            }
          }
        }
      }
    }
  }
}

}  // namespace

size_t gemm_b_block_floats(const GemmBlocking& g) {
  return static_cast<size_t>(std::max<int64_t>(1, g.kc) * round_up(std::max<int64_t>(g.nc, g.nr), g.nr));
}

int gemm_threads(int64_t M, int64_t N, int64_t K, bool b_prepacked, int threads) {
  if (threads <= 0) threads = default_threads();
  double macs = static_cast<double>(M) * N * K;
  // A few-row product with packed weights streams B from memory: ~1 MAC per 4 bytes, so
  // count it as the bandwidth-bound work it is (a 4-byte load costs about 8 MACs of time).
  if (b_prepacked && M < 8) macs = static_cast<double>(N) * K * 8;
  return macs < kMinParallelMacs ? 1 : threads;
}

TileEpilogue tile_epilogue(const Epilogue& e, int64_t row, int64_t col) {
  TileEpilogue t;
  t.alpha = e.alpha;
  if (e.bias) {
    t.bias_mode = e.bias_per_row ? TileEpilogue::Bias::PerRow : TileEpilogue::Bias::PerCol;
    t.bias = e.bias + (e.bias_per_row ? row : col);
  }
  if (e.residual) {
    t.residual = e.residual + row * e.ldr + col;
    t.ldr = e.ldr;
  }
  t.act = e.act;
  t.act_alpha = e.act_alpha;
  t.act_beta = e.act_beta;
  return t;
}

bool epilogue_is_identity(const Epilogue& e) {
  return e.alpha == 1.f && !e.bias && !e.residual && e.act == Act::None;
}

void gemm_run(const KernelTable& t, const GemmProblem& p, int threads) {
  if (p.M <= 0 || p.N <= 0) return;
  const bool epi = p.epi && !epilogue_is_identity(*p.epi);
  if (p.K <= 0) {  // empty product: C = epilogue(C or 0)
    for (int64_t i = 0; i < p.M; ++i)
      if (!p.accumulate) std::fill(p.C + i * p.ldc, p.C + i * p.ldc + p.N, 0.f);
    if (epi) t.epilogue_tile(p.C, p.ldc, p.M, p.N, tile_epilogue(*p.epi, 0, 0));
    return;
  }
  threads = gemm_threads(p.M, p.N, p.K, p.b_packed != nullptr, threads);
  using Split = GemmProblem::Split;
  PartList list;
  std::vector<Part>& parts = list.get();
  if (p.split == Split::Auto)
    // Every column part packs all of A again; every row part reads all of the prepacked B. With
    // M >= N the packing is the larger cost: gemm 1024^3 and 1536^3 on two Ice Lake cores ran
    // 0.965-0.989 of the time split by rows (equal tile counts either way).
    partition(p.M, p.N, t.gemm.mr, t.gemm.nr, threads, p.b_packed && !p.a_packed && p.M >= p.N, parts);
  else
    split_parts(p.M, p.N, t.gemm.mr, t.gemm.nr, threads, p.split == Split::Rows,
                p.split == Split::Rows ? repacks_b(p) : !p.a_packed, parts);
  const size_t bfloats = gemm_b_block_floats(t.gemm);
  auto buffer_for = [&](int64_t part) -> float* {
    if (p.b_packed || p.b_rows) return nullptr;
    if (p.workspace && p.split == Split::Auto) return p.workspace + part * bfloats;
    thread_local LineScratch bbuf_tl;
    return bbuf_tl.floats(bfloats);
  };
  auto run = [&](int64_t i) {
    run_part(t, p, parts[i], buffer_for(i));
    if (p.part_done) p.part_done(parts[i].i0, parts[i].i1, parts[i].j0, parts[i].j1);
  };
  if (parts.size() == 1) {
    run(0);
    return;
  }
  parallel_for(static_cast<int64_t>(parts.size()), std::min<int>(threads, static_cast<int>(parts.size())),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) run(i);
               });
}

bool gemv_run(const KernelTable& t, int64_t N, int64_t K, const float* a, const float* packed_b, float* C,
              const Epilogue* epi, int threads) {
  if (!t.gemv_panels || N <= 0 || K <= 0) return false;
  const int64_t NR = t.gemm.nr, panels = ceil_div(N, NR);
  threads = gemm_threads(1, N, K, true, threads);
  const bool apply = epi && !epilogue_is_identity(*epi);
  // Panels [q0, q1).
  auto part = [&](int64_t q0, int64_t q1) {
    const int64_t j0 = q0 * NR, cols = std::min(N, q1 * NR) - j0;
    t.gemv_panels(K, a, packed_b + q0 * K * NR, q1 - q0, C + j0, static_cast<int>(cols - (q1 - q0 - 1) * NR));
    if (apply) t.epilogue_tile(C + j0, N, 1, cols, tile_epilogue(*epi, 0, j0));
  };
  // One share of the panels a thread (each streams its weights once: smaller pieces would only
  // add joins), sized by the threads' measured speeds on this product (parallel_shares, keyed
  // by its weights).
  if (threads <= 1 || panels <= 1) part(0, panels);
  else parallel_shares(panels, threads, part, packed_b);
  return true;
}

void pack_a_panels(const KernelTable& t, const float* A, int64_t lda, bool trans, float alpha, int64_t M, int64_t i0,
                   int64_t mc, int64_t p0, int64_t kc, float* out) {
  const int mr = t.gemm.mr;
  for (int64_t ip = 0; ip < mc; ip += mr, out += kc * mr) {
    const int64_t rows = std::min<int64_t>(mr, std::min(mc, M - i0) - ip);
    if (!trans && alpha == 1.f) {
      t.pack_a_panel(A + (i0 + ip) * lda + p0, lda, rows, kc, mr, out);
    } else if (!trans) {
      for (int64_t r = 0; r < mr; ++r) {
        const float* src = A + (i0 + ip + r) * lda + p0;
        for (int64_t q = 0; q < kc; ++q) out[q * mr + r] = r < rows ? alpha * src[q] : 0.f;
      }
    } else {
      for (int64_t q = 0; q < kc; ++q) {
        const float* src = A + (p0 + q) * lda + i0 + ip;
        for (int64_t r = 0; r < mr; ++r) out[q * mr + r] = r < rows ? alpha * src[r] : 0.f;
      }
    }
  }
}

void pack_b_panels(const float* B, int64_t ldb, bool trans, int64_t N, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                   int nr, float* out) {
  for (int64_t jp = 0; jp < nc; jp += nr, out += kc * nr) {
    const int64_t cols = std::min<int64_t>(nr, std::min(nc, N - j0) - jp);
    if (!trans) {
      for (int64_t q = 0; q < kc; ++q) {
        const float* src = B + (p0 + q) * ldb + j0 + jp;
        float* dst = out + q * nr;
        if (cols == nr) {
          std::copy(src, src + nr, dst);
        } else {
          std::copy(src, src + cols, dst);
          std::fill(dst + cols, dst + nr, 0.f);
        }
      }
    } else {
      for (int64_t c = 0; c < nr; ++c) {
        if (c < cols) {
          const float* src = B + (j0 + jp + c) * ldb + p0;
          for (int64_t q = 0; q < kc; ++q) out[q * nr + c] = src[q];
        } else {
          for (int64_t q = 0; q < kc; ++q) out[q * nr + c] = 0.f;
        }
      }
    }
  }
}

}  // namespace kiln::kernels::detail

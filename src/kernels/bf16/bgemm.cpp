// BF16 packing, the blocked GEMM driver, convolution as an implicit GEMM, the scalar emulation
// and the choice of table (the AVX512-BF16 micro-kernel is in bgemm_avx512bf16.cpp).
//
// Blocking as the INT8 driver: blocks of kRowBlock rows of the rows operand against one cols
// panel at a time; work items (row block, cols panel) split over threads. The f32 epilogue runs
// on each finished tile (kernels/rows.h apply_epilogue), so bias, residual and activation are the
// f32 kernels' own arithmetic.
#include <algorithm>
#include <atomic>
#include <vector>

#include "kiln/kernels/bf16.h"
#include "kiln/kernels/parallel.h"
#include "kiln/kernels/rows.h"

namespace kiln::kernels::bf16 {

#if defined(__x86_64__)
BKernels make_avx512bf16_bkernels();
#endif

namespace {

constexpr int64_t kRowBlock = 64;
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

uint32_t pair(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }

// The emulation: the two products of a pair are exact in f32 (8-bit significands); their sum and
// the accumulation round as f32 additions.
constexpr int kEmuMr = 4, kEmuNr = 8;
void emulated_tile(int64_t kpairs, const uint32_t* rows, const uint32_t* cols, float* acc) {
  for (int i = 0; i < kEmuMr * kEmuNr; ++i) acc[i] = 0.f;
  for (int64_t g = 0; g < kpairs; ++g) {
    for (int r = 0; r < kEmuMr; ++r) {
      const uint32_t a = rows[g * kEmuMr + r];
      const float a0 = to_f32(static_cast<uint16_t>(a)), a1 = to_f32(static_cast<uint16_t>(a >> 16));
      for (int j = 0; j < kEmuNr; ++j) {
        const uint32_t b = cols[g * kEmuNr + j];
        acc[r * kEmuNr + j] += a0 * to_f32(static_cast<uint16_t>(b)) + a1 * to_f32(static_cast<uint16_t>(b >> 16));
      }
    }
  }
}

void emulated_pack_panel(const float* base, const int64_t* offsets, int64_t kpairs, int64_t count, uint32_t* out) {
  for (int64_t g = 0; g < kpairs; ++g, out += kEmuNr) {
    const int64_t o0 = offsets[2 * g], o1 = offsets[2 * g + 1];
    for (int64_t j = 0; j < kEmuNr; ++j)
      out[j] = j < count ? pair(from_f32(base[o0 + j]), o1 >= 0 ? from_f32(base[o1 + j]) : 0) : 0;
  }
}

struct Tables {
  BKernels emulated{BIsa::Emulated, kEmuMr, kEmuNr, emulated_tile, emulated_pack_panel};
  BKernels avx512;
  bool has_avx512 = false;
  Tables() {
#if defined(__x86_64__)
    has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    if (has_avx512) avx512 = make_avx512bf16_bkernels();
#endif
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}
std::atomic<bool> g_force_fallback{false};

}  // namespace

const char* bisa_name(BIsa isa) { return isa == BIsa::Avx512Bf16 ? "avx512-bf16" : "emulated"; }
const BKernels* native() { return tables().has_avx512 ? &tables().avx512 : nullptr; }
const BKernels& emulated() { return tables().emulated; }
const BKernels* runtime_kernels() { return g_force_fallback.load() ? nullptr : native(); }
void set_force_fallback(bool on) { g_force_fallback.store(on); }

size_t packed_rows_words(const BKernels& k, int64_t M, int64_t K) {
  return static_cast<size_t>(ceil_div(M, k.mr) * ceil_div(K, 2) * k.mr);
}
size_t packed_cols_words(const BKernels& k, int64_t K, int64_t N) {
  return static_cast<size_t>(ceil_div(N, k.nr) * ceil_div(K, 2) * k.nr);
}

void pack_rows_bf16(const BKernels& k, const uint16_t* a, int64_t lda, int64_t M, int64_t K, uint32_t* out) {
  const int64_t kp = ceil_div(K, 2), mt = ceil_div(M, k.mr);
  for (int64_t t = 0; t < mt; ++t)
    for (int64_t g = 0; g < kp; ++g)
      for (int r = 0; r < k.mr; ++r) {
        const int64_t m = t * k.mr + r, k0 = 2 * g;
        uint16_t lo = 0, hi = 0;
        if (m < M) {
          lo = a[m * lda + k0];
          if (k0 + 1 < K) hi = a[m * lda + k0 + 1];
        }
        out[(t * kp + g) * k.mr + r] = pair(lo, hi);
      }
}

void pack_rows_f32(const BKernels& k, const float* a, int64_t lda, int64_t M, int64_t K, uint32_t* out, int threads) {
  const int64_t kp = ceil_div(K, 2), mt = ceil_div(M, k.mr);
  parallel_for(mt, threads_for_work(static_cast<double>(M) * K, threads), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      for (int r = 0; r < k.mr; ++r) {
        const int64_t m = t * k.mr + r;
        const float* row = m < M ? a + m * lda : nullptr;
        for (int64_t g = 0; g < kp; ++g) {
          const int64_t k0 = 2 * g;
          out[(t * kp + g) * k.mr + r] =
              row ? pair(from_f32(row[k0]), k0 + 1 < K ? from_f32(row[k0 + 1]) : 0) : 0;
        }
      }
  });
}

void pack_cols_bf16(const BKernels& k, const uint16_t* b, int64_t ldb, bool trans, int64_t K, int64_t N, uint32_t* out) {
  const int64_t kp = ceil_div(K, 2), nt = ceil_div(N, k.nr);
  auto at = [&](int64_t kk, int64_t n) -> uint16_t {
    if (kk >= K || n >= N) return 0;
    return trans ? b[n * ldb + kk] : b[kk * ldb + n];
  };
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t g = 0; g < kp; ++g)
      for (int j = 0; j < k.nr; ++j) {
        const int64_t n = t * k.nr + j;
        out[(t * kp + g) * k.nr + j] = pair(at(2 * g, n), at(2 * g + 1, n));
      }
}

void gemm_packed(const BKernels& k, int64_t M, int64_t N, int64_t K, const uint32_t* rows, const uint32_t* cols,
                 float* C, int64_t ldc, const Epilogue& epi, int threads) {
  if (M <= 0 || N <= 0) return;
  const int64_t kp = ceil_div(K, 2), mt = ceil_div(M, k.mr), nt = ceil_div(N, k.nr);
  const int64_t tiles_per_block = std::max<int64_t>(1, kRowBlock / k.mr);
  const int64_t blocks = ceil_div(mt, tiles_per_block);
  threads = threads_for_work(static_cast<double>(M) * N * K / 2, threads <= 0 ? default_threads() : threads);
  const bool trivial = epi.alpha == 1.f && !epi.bias && !epi.residual && epi.act == Act::None;
  parallel_for(blocks * nt, threads, [&](int64_t begin, int64_t end) {
    alignas(64) float acc[16 * 64];  // mr * nr <= 16 * 64 for every table
    for (int64_t w = begin; w < end; ++w) {
      const int64_t b = w / nt, c = w % nt;
      const uint32_t* cp = cols + c * kp * k.nr;
      const int64_t col0 = c * k.nr;
      const int cols_here = static_cast<int>(std::min<int64_t>(k.nr, N - col0));
      const int64_t t0 = b * tiles_per_block, t1 = std::min(mt, (b + 1) * tiles_per_block);
      for (int64_t t = t0; t < t1; ++t) {
        k.tile(kp, rows + t * kp * k.mr, cp, acc);
        const int64_t row0 = t * k.mr;
        const int rows_here = static_cast<int>(std::min<int64_t>(k.mr, M - row0));
        float* out = C + row0 * ldc + col0;
        for (int r = 0; r < rows_here; ++r) std::memcpy(out + r * ldc, acc + r * k.nr, cols_here * sizeof(float));
      }
      if (trivial) continue;
      // The epilogue once per work item (the block's rows x this panel), still in cache.
      const int64_t row0 = t0 * k.mr, rows_here = std::min(M, t1 * k.mr) - row0;
      Epilogue e = epi;
      if (e.bias) e.bias += e.bias_per_row ? row0 : col0;
      if (e.residual) e.residual += row0 * e.ldr + col0;
      apply_epilogue(C + row0 * ldc + col0, ldc, rows_here, cols_here, e, 1);
    }
  });
}

// ---- convolution -------------------------------------------------------------------------------
// Implicit GEMM one cols panel at a time: a thread packs the nr GEMM columns of its panel for
// every k pair (two kernel taps) into its own buffer, which stays in cache while every row tile of
// the weights passes over it, then stores and applies the epilogue to those output positions.
//
// Every tap is a contiguous row at an offset, for any stride, padding and dilation: the input is
// copied once per image into zero-padded *phase planes* — plane (c, ph, pw)[i][j] is the padded
// input at row i * stride_h + ph, column j * stride_w + pw, of Hq x Wq = ceil(Hp / stride_h) x
// ceil(Wp / stride_w) — and the GEMM runs over the phase-plane grid: column j = oh * Wq + ow
// (N = (OH - 1) * Wq + OW columns; those with j % Wq >= OW are computed and dropped). Tap (kh, kw)
// of output (oh, ow) is padded row oh * stride_h + kh * dil_h, i.e. phase (kh * dil_h) % stride_h,
// phase row oh + (kh * dil_h) / stride_h: plane offset ((kh*dil_h)/stride_h) * Wq + (kw*dil_w)/stride_w
// from column j. Only the phases some tap reads are filled. A stride-1 unpadded convolution reads
// the input planes themselves (one phase, Hq x Wq = H x W).

namespace {

struct Geometry {
  int64_t C, P, OH, OW, Kc, kpairs, Hp, Wp, Hq, Wq, N;
  bool copy;  // phase planes are built (else the input planes are the only phase)
  explicit Geometry(const Conv2dShape& s)
      : C(s.C), P(s.out_h() * s.out_w()), OH(s.out_h()), OW(s.out_w()), Kc(s.C * s.R * s.S), kpairs(ceil_div(Kc, 2)),
        Hp(s.H + s.pad_top + s.pad_bottom), Wp(s.W + s.pad_left + s.pad_right) {
    copy = !(s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 &&
             s.pad_right == 0);
    Hq = copy ? ceil_div(Hp, s.stride_h) : s.H;
    Wq = copy ? ceil_div(Wp, s.stride_w) : s.W;
    N = (OH - 1) * Wq + OW;
  }
  int64_t plane_floats() const { return Hq * Wq; }
  int64_t planes_floats(const Conv2dShape& s) const { return copy ? C * s.stride_h * s.stride_w * Hq * Wq : 0; }
  int64_t panel_words(const BKernels& k) const { return round_up(kpairs * k.nr, 16); }
};

// Fills the phase planes a tap reads (zeros where the padded input is padding).
void fill_phase_planes(const Conv2dShape& s, const Geometry& g, const float* x, float* planes, int threads) {
  std::vector<char> used_h(static_cast<size_t>(s.stride_h), 0), used_w(static_cast<size_t>(s.stride_w), 0);
  for (int64_t kh = 0; kh < s.R; ++kh) used_h[static_cast<size_t>(kh * s.dil_h % s.stride_h)] = 1;
  for (int64_t kw = 0; kw < s.S; ++kw) used_w[static_cast<size_t>(kw * s.dil_w % s.stride_w)] = 1;
  const int64_t phases = s.stride_h * s.stride_w;
  parallel_for(s.C * phases, threads_for_work(static_cast<double>(s.C) * g.Hp * g.Wp, threads), [&](int64_t b, int64_t e) {
    for (int64_t cp = b; cp < e; ++cp) {
      const int64_t c = cp / phases, ph = cp % phases / s.stride_w, pw = cp % s.stride_w;
      if (!used_h[static_cast<size_t>(ph)] || !used_w[static_cast<size_t>(pw)]) continue;
      float* d = planes + cp * g.plane_floats();
      // Phase columns j whose input column j * stride_w + pw - pad_left lies in [0, W).
      const int64_t first = pw - s.pad_left;  // input column of j = 0
      const int64_t j_lo = std::min(g.Wq, first >= 0 ? 0 : ceil_div(-first, s.stride_w));
      const int64_t j_hi = std::max(j_lo, std::min(g.Wq, s.W - 1 - first >= 0 ? (s.W - 1 - first) / s.stride_w + 1 : 0));
      for (int64_t i = 0; i < g.Hq; ++i, d += g.Wq) {
        const int64_t ih = i * s.stride_h + ph - s.pad_top;
        if (ih < 0 || ih >= s.H) {
          std::fill(d, d + g.Wq, 0.f);
          continue;
        }
        const float* row = x + (c * s.H + ih) * s.W;
        std::fill(d, d + j_lo, 0.f);
        if (s.stride_w == 1)
          std::memcpy(d + j_lo, row + j_lo + first, static_cast<size_t>(j_hi - j_lo) * sizeof(float));
        else
          for (int64_t j = j_lo; j < j_hi; ++j) d[j] = row[j * s.stride_w + first];
        std::fill(d + j_hi, d + g.Wq, 0.f);
      }
    }
  });
}

// offsets[kk] = where tap kk's row starts relative to column 0 (kk < Kc); -1 pads an odd Kc.
void tap_offsets(const Conv2dShape& s, const Geometry& g, int64_t* offsets) {
  for (int64_t kk = 0; kk < g.Kc; ++kk) {
    const int64_t c = kk / (s.R * s.S), kh = kk % (s.R * s.S) / s.S, kw = kk % s.S;
    const int64_t dh = kh * s.dil_h, dw = kw * s.dil_w;
    const int64_t plane = (c * s.stride_h + dh % s.stride_h) * s.stride_w + dw % s.stride_w;
    offsets[kk] = plane * g.plane_floats() + dh / s.stride_h * g.Wq + dw / s.stride_w;
  }
  if (g.Kc % 2) offsets[g.Kc] = -1;
}

// Calls fn(column in the panel, output position, length) for each run of the panel's GEMM columns
// [j0, j0 + count) that are output positions.
template <typename Fn>
void for_each_output_run(const Geometry& g, int64_t j0, int64_t count, Fn&& fn) {
  if (g.Wq == g.OW) {
    fn(int64_t{0}, j0, count);
    return;
  }
  for (int64_t j = j0; j < j0 + count;) {
    const int64_t oh = j / g.Wq, ow = j % g.Wq, run = std::min(j0 + count - j, g.Wq - ow);
    if (ow < g.OW) fn(j - j0, oh * g.OW + ow, std::min(run, g.OW - ow));
    j += run;
  }
}

}  // namespace

size_t conv_packed_weight_words(const BKernels& k, const Conv2dShape& s) {
  return packed_rows_words(k, s.K, Geometry(s).Kc);
}

void conv_pack_weight(const BKernels& k, const Conv2dShape& s, const uint16_t* w, uint32_t* packed) {
  const Geometry g(s);
  pack_rows_bf16(k, w, g.Kc, s.K, g.Kc, packed);
}

namespace {
// Packed panels a thread keeps at once: the weights stream once per chunk of panels (row tiles
// outer, the chunk's panels inner), so a chunk is as many panels as fit in about half an L2.
constexpr int64_t kChunkBytes = 256 << 10;
int64_t chunk_panels(const BKernels& k, const Geometry& g) {
  return std::clamp<int64_t>(kChunkBytes / (g.panel_words(k) * 4), 1, ceil_div(g.N, k.nr));
}

// Workspace: [phase planes][tap offsets][per thread: one chunk of packed panels]
struct Layout {
  int64_t planes_bytes, offsets_bytes, per_thread_bytes;
  Layout(const BKernels& k, const Conv2dShape& s, const Geometry& g)
      : planes_bytes(round_up(g.planes_floats(s) * 4, 64)), offsets_bytes(round_up((g.Kc + 1) * 8, 64)),
        per_thread_bytes(chunk_panels(k, g) * g.panel_words(k) * 4) {}
};
}  // namespace

size_t conv_workspace_bytes(const BKernels& k, const Conv2dShape& s, int threads) {
  const Geometry g(s);
  const Layout l(k, s, g);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  return static_cast<size_t>(l.planes_bytes + l.offsets_bytes + threads * l.per_thread_bytes);
}

// Work is split over threads by panels when there are plenty (each thread streams the weights
// once per chunk of its panels), else by row tiles (each thread packs every panel — cheap next to
// the weights — and streams only its share of the weights: small images, many channels).
void conv2d(const BKernels& k, const Conv2dShape& s, const float* x, const uint32_t* packed_w, float* y,
            const Epilogue& epi, void* workspace, int threads) {
  const Geometry g(s);
  const Layout l(k, s, g);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const int64_t nt = ceil_div(g.N, k.nr), mt = ceil_div(s.K, k.mr), kp = g.kpairs, chunk = chunk_panels(k, g);
  const int64_t panel_words = g.panel_words(k);
  char* ws = static_cast<char*>(workspace);
  float* planes = reinterpret_cast<float*>(ws);
  int64_t* offsets = reinterpret_cast<int64_t*>(ws + l.planes_bytes);
  char* slots_base = ws + l.planes_bytes + l.offsets_bytes;
  tap_offsets(s, g, offsets);
  const int work_threads = threads_for_work(static_cast<double>(s.K) * g.N * g.Kc / 2, threads);
  const bool by_panels = nt >= 2 * work_threads;
  const int64_t slots = std::min<int64_t>(work_threads, by_panels ? nt : mt);
  const bool trivial = epi.alpha == 1.f && !epi.bias && !epi.residual && epi.act == Act::None;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.H * s.W;
    float* yn = y + n * s.K * g.P;
    if (g.copy) fill_phase_planes(s, g, xn, planes, threads);
    const float* base = g.copy ? planes : xn;
    parallel_for(slots, static_cast<int>(slots), [&](int64_t sb, int64_t se) {
      for (int64_t slot = sb; slot < se; ++slot) {
        uint32_t* panels = reinterpret_cast<uint32_t*>(slots_base + slot * l.per_thread_bytes);
        alignas(64) float acc[16 * 64];  // mr * nr <= 16 * 64 for every table
        const int64_t p_begin = by_panels ? nt * slot / slots : 0, p_end = by_panels ? nt * (slot + 1) / slots : nt;
        const int64_t t_begin = by_panels ? 0 : mt * slot / slots, t_end = by_panels ? mt : mt * (slot + 1) / slots;
        const int64_t row_begin = t_begin * k.mr, row_end = std::min(s.K, t_end * k.mr);
        for (int64_t c0 = p_begin; c0 < p_end; c0 += chunk) {
          const int64_t c1 = std::min(p_end, c0 + chunk);
          for (int64_t p = c0; p < c1; ++p) {
            const int64_t j0 = p * k.nr;
            k.pack_panel(base + j0, offsets, kp, std::min<int64_t>(k.nr, g.N - j0), panels + (p - c0) * panel_words);
          }
          for (int64_t t = t_begin; t < t_end; ++t) {
            const int64_t row0 = t * k.mr, rows_here = std::min<int64_t>(k.mr, s.K - row0);
            for (int64_t p = c0; p < c1; ++p) {
              k.tile(kp, packed_w + t * kp * k.mr, panels + (p - c0) * panel_words, acc);
              const int64_t j0 = p * k.nr;
              for_each_output_run(g, j0, std::min<int64_t>(k.nr, g.N - j0), [&](int64_t col, int64_t pos, int64_t len) {
                for (int64_t r = 0; r < rows_here; ++r)
                  std::memcpy(yn + (row0 + r) * g.P + pos, acc + r * k.nr + col, static_cast<size_t>(len) * sizeof(float));
              });
            }
          }
          if (trivial) continue;
          const int64_t j0 = c0 * k.nr;
          for_each_output_run(g, j0, std::min(c1 * k.nr, g.N) - j0, [&](int64_t, int64_t pos, int64_t len) {
            Epilogue e = epi;
            e.bias_per_row = true;
            if (e.bias) e.bias += row_begin;
            if (e.residual) e.residual += (n * s.K + row_begin) * g.P + pos, e.ldr = g.P;
            apply_epilogue(yn + row_begin * g.P + pos, g.P, row_end - row_begin, len, e, 1);
          });
        }
      }
    });
  }
}

}  // namespace kiln::kernels::bf16

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

void emulated_pair_f32(const float* r0, const float* r1, int64_t n, uint32_t* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = pair(from_f32(r0[j]), r1 ? from_f32(r1[j]) : 0);
}

struct Tables {
  BKernels emulated{BIsa::Emulated, kEmuMr, kEmuNr, emulated_tile, emulated_pair_f32};
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
      for (int64_t t = b * tiles_per_block; t < std::min(mt, (b + 1) * tiles_per_block); ++t) {
        k.tile(kp, rows + t * kp * k.mr, cp, acc);
        const int64_t row0 = t * k.mr;
        const int rows_here = static_cast<int>(std::min<int64_t>(k.mr, M - row0));
        float* out = C + row0 * ldc + col0;
        for (int r = 0; r < rows_here; ++r) std::memcpy(out + r * ldc, acc + r * k.nr, cols_here * sizeof(float));
        if (trivial) continue;
        Epilogue e = epi;
        if (e.bias) e.bias += e.bias_per_row ? row0 : col0;
        if (e.residual) e.residual += row0 * e.ldr + col0;
        apply_epilogue(out, ldc, rows_here, cols_here, e, 1);
      }
    }
  });
}

// ---- convolution -------------------------------------------------------------------------------

namespace {

struct Geometry {
  int64_t P, Kc, kpairs;
  bool direct;  // 1x1, stride 1, unpadded: each tap's row is an input plane
  explicit Geometry(const Conv2dShape& s)
      : P(s.out_h() * s.out_w()), Kc(s.C * s.R * s.S), kpairs(ceil_div(Kc, 2)),
        direct(s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 && s.pad_left == 0 &&
               s.pad_bottom == 0 && s.pad_right == 0) {}
};

// dst[oh * OW + ow] = the input value under tap (kh, kw) at output (oh, ow), 0 outside the plane.
void gather_tap_row(const Conv2dShape& s, const float* plane, int64_t kh, int64_t kw, float* dst) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  const int64_t off = kw * s.dil_w - s.pad_left;  // iw = ow * stride_w + off
  int64_t ow_lo = off >= 0 ? 0 : ceil_div(-off, s.stride_w);
  int64_t ow_hi = s.W - 1 - off >= 0 ? std::min(OW, (s.W - 1 - off) / s.stride_w + 1) : 0;
  ow_lo = std::min(ow_lo, OW);
  ow_hi = std::max(ow_hi, ow_lo);
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* d = dst + oh * OW;
    const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dil_h;
    if (ih < 0 || ih >= s.H) {
      std::fill(d, d + OW, 0.f);
      continue;
    }
    const float* src = plane + ih * s.W + off;
    for (int64_t ow = 0; ow < ow_lo; ++ow) d[ow] = 0.f;
    for (int64_t ow = ow_hi; ow < OW; ++ow) d[ow] = 0.f;
    if (s.stride_w == 1) std::memcpy(d + ow_lo, src + ow_lo, static_cast<size_t>(ow_hi - ow_lo) * sizeof(float));
    else
      for (int64_t ow = ow_lo; ow < ow_hi; ++ow) d[ow] = src[ow * s.stride_w];
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

size_t conv_workspace_bytes(const BKernels& k, const Conv2dShape& s, int threads) {
  const Geometry g(s);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  return static_cast<size_t>(round_up(static_cast<int64_t>(packed_cols_words(k, g.Kc, g.P) * 4), 64) +
                             threads * 2 * round_up(g.P * 4, 64) + round_up(k.nr * 4, 64) * threads);
}

void conv2d(const BKernels& k, const Conv2dShape& s, const float* x, const uint32_t* packed_w, float* y,
            const Epilogue& epi, void* workspace, int threads) {
  const Geometry g(s);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  uint32_t* cols = static_cast<uint32_t*>(workspace);
  char* scratch = static_cast<char*>(workspace) + round_up(static_cast<int64_t>(packed_cols_words(k, g.Kc, g.P) * 4), 64);
  const int64_t row_bytes = round_up(g.P * 4, 64);
  const int64_t nt = ceil_div(g.P, k.nr), panel = g.kpairs * k.nr;
  const int pack_threads = threads_for_work(static_cast<double>(g.Kc) * g.P, threads);
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.H * s.W;
    // im2col straight into the packed cols panels, one k pair (two taps) at a time.
    parallel_for(pack_threads, pack_threads, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        float* mine = reinterpret_cast<float*>(scratch + t * 2 * row_bytes);
        uint32_t* tail = reinterpret_cast<uint32_t*>(scratch + pack_threads * 2 * row_bytes) + t * round_up(k.nr, 16);
        const int64_t g0 = g.kpairs * t / pack_threads, g1 = g.kpairs * (t + 1) / pack_threads;
        for (int64_t kg = g0; kg < g1; ++kg) {
          const float* r[2];
          for (int q = 0; q < 2; ++q) {
            const int64_t kk = kg * 2 + q;
            if (kk >= g.Kc) {
              r[q] = nullptr;
              continue;
            }
            const int64_t c = kk / (s.R * s.S), rem = kk % (s.R * s.S);
            if (g.direct) {
              r[q] = xn + c * s.H * s.W;
            } else {
              gather_tap_row(s, xn + c * s.H * s.W, rem / s.S, rem % s.S, mine + q * (row_bytes / 4));
              r[q] = mine + q * (row_bytes / 4);
            }
          }
          for (int64_t p = 0; p < nt; ++p) {
            const int64_t j0 = p * k.nr, count = std::min<int64_t>(k.nr, g.P - j0);
            uint32_t* dst = cols + p * panel + kg * k.nr;
            if (!r[0]) {
              std::fill(dst, dst + k.nr, 0u);
              continue;
            }
            if (count == k.nr) {
              k.pair_f32(r[0] + j0, r[1] ? r[1] + j0 : nullptr, count, dst);
            } else {  // the last panel: zeros past P
              k.pair_f32(r[0] + j0, r[1] ? r[1] + j0 : nullptr, count, tail);
              std::fill(tail + count, tail + k.nr, 0u);
              std::memcpy(dst, tail, k.nr * sizeof(uint32_t));
            }
          }
        }
      }
    });
    Epilogue e = epi;
    e.bias_per_row = true;
    if (e.residual) {
      e.residual += n * s.K * g.P;
      e.ldr = g.P;
    }
    gemm_packed(k, s.K, g.P, g.Kc, packed_w, cols, y + n * s.K * g.P, g.P, e, threads);
  }
}

}  // namespace kiln::kernels::bf16

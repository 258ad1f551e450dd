// BF16 packing, the blocked GEMM driver, the scalar emulation and the choice of table (the
// AVX512-BF16 micro-kernel is in bgemm_avx512bf16.cpp, convolution in bconv.cpp).
//
// Blocking as the INT8 driver: blocks of kRowBlock rows of the rows operand against one cols
// panel at a time; work items (row block, cols panel) split over threads. The f32 epilogue runs
// on each finished tile (kernels/rows.h apply_epilogue), so bias, residual and activation are the
// f32 kernels' own arithmetic.
#include <algorithm>
#include <atomic>
#include <vector>

#include "kiln/kernels/bf16.h"
#include "isa_gate.h"
#include "kiln/kernels/parallel.h"
#include "kiln/kernels/rows.h"

namespace kiln::kernels::bf16 {

#if defined(__x86_64__)
BKernels make_avx512bf16_bkernels();
#endif

namespace {

constexpr int64_t kRowBlock = 64;
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

uint32_t pair(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }

// The emulation: the two products of a pair are exact in f32 (8-bit significands); their sum and
// the accumulation round as f32 additions.
constexpr int kEmuMr = 4, kEmuNr = 8, kEmuMrPx = 3;
template <int kEmuMr>
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

void emulated_pack_rows_px(const float* base, const int64_t* offsets, int64_t kpairs, const int64_t* cols, int count,
                           uint32_t* out) {
  for (int64_t g = 0; g < kpairs; ++g, out += kEmuMrPx) {
    const int64_t o0 = offsets[2 * g], o1 = offsets[2 * g + 1];
    for (int r = 0; r < kEmuMrPx; ++r)
      out[r] = r < count ? pair(from_f32(base[o0 + cols[r]]), o1 >= 0 ? from_f32(base[o1 + cols[r]]) : 0) : 0;
  }
}

struct Tables {
  BKernels emulated{BIsa::Emulated,    kEmuMr,     kEmuNr, emulated_tile<kEmuMr>, emulated_pack_panel,
                    kEmuMrPx,          emulated_tile<kEmuMrPx>, emulated_pack_rows_px};
  BKernels avx512;
  bool has_avx512 = false;
  Tables() {
#if defined(__x86_64__)
    has_avx512 = kSimdKernelsAllowed && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
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

}  // namespace kiln::kernels::bf16

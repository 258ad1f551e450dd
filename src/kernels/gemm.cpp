// Blocked SGEMM in the BLIS style: C is walked in NC-column, KC-deep, MC-row blocks; each
// block of op(A) and op(B) is packed into MR-row / NR-column panels so the micro-kernel
// reads both operands contiguously, and a 6x16 register tile accumulates C.
// Two micro-kernels share the packing: an AVX2+FMA one (compiled for that target only and
// chosen at run time by CPU features) and a portable one the compiler may vectorise.
#include "kiln/kernels/gemm.h"

#include <algorithm>
#include <vector>

#include "kiln/kernels/parallel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_GEMM_X86 1
#endif

namespace kiln::kernels {
namespace {

constexpr int64_t MR = 6, NR = 16;
constexpr int64_t KC = 256, MC = 120, NC = 3072;  // A block ~120 KiB (L2), B block ~3 MiB (L3)

// Element (i, p) of op(A) and (p, j) of op(B).
struct Operand {
  const float* p;
  int64_t ld;
  bool trans;
  float at(int64_t r, int64_t c) const { return trans ? p[c * ld + r] : p[r * ld + c]; }
};

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into MR-row panels, k-major inside a
// panel; rows past the edge are zero so the kernel never branches on them.
void pack_a(const Operand& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ip = 0; ip < mc; ip += MR) {
    int64_t rows = std::min(MR, mc - ip);
    if (!a.trans) {
      for (int64_t r = 0; r < MR; ++r) {
        if (r < rows) {
          const float* src = a.p + (i0 + ip + r) * a.ld + p0;
          for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = src[p];
        } else {
          for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = 0.f;
        }
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a.p + (p0 + p) * a.ld + i0 + ip;
        for (int64_t r = 0; r < MR; ++r) out[p * MR + r] = r < rows ? src[r] : 0.f;
      }
    }
    out += MR * kc;
  }
}

// Packs rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) into NR-column panels.
void pack_b(const Operand& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t jp = 0; jp < nc; jp += NR) {
    int64_t cols = std::min(NR, nc - jp);
    if (!b.trans) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b.p + (p0 + p) * b.ld + j0 + jp;
        float* dst = out + p * NR;
        if (cols == NR) {
          for (int64_t c = 0; c < NR; ++c) dst[c] = src[c];
        } else {
          for (int64_t c = 0; c < NR; ++c) dst[c] = c < cols ? src[c] : 0.f;
        }
      }
    } else {
      for (int64_t c = 0; c < NR; ++c) {
        if (c < cols) {
          const float* src = b.p + (j0 + jp + c) * b.ld + p0;
          for (int64_t p = 0; p < kc; ++p) out[p * NR + c] = src[p];
        } else {
          for (int64_t p = 0; p < kc; ++p) out[p * NR + c] = 0.f;
        }
      }
    }
    out += NR * kc;
  }
}

// C[0:mr, 0:nr] += alpha * tile
inline void add_tile(const float* tile, float* c, int64_t ldc, float alpha, int64_t mr, int64_t nr) {
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] += alpha * tile[r * NR + j];
}

// GCC/Clang vector extension: lowered to whatever SIMD the baseline target has (SSE2 on
// x86-64, NEON on AArch64) without ISA-specific code.
typedef float v4f __attribute__((vector_size(16)));

void kernel_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
                     int64_t mr, int64_t nr) {
  // Three rows at a time keep 12 accumulators plus 4 B vectors within 16 SIMD registers.
  constexpr int NV = NR / 4, RH = MR / 2;
  float tile[MR * NR];
  for (int half = 0; half < 2; ++half) {
    v4f acc[RH][NV] = {};
    const float* ap = a + half * RH;
    const float* bp = b;
    for (int64_t p = 0; p < kc; ++p, ap += MR, bp += NR) {
      v4f bv[NV];
      for (int v = 0; v < NV; ++v) __builtin_memcpy(&bv[v], bp + 4 * v, sizeof(v4f));
      for (int r = 0; r < RH; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] += ap[r] * bv[v];
    }
    __builtin_memcpy(tile + half * RH * NR, acc, sizeof(acc));
  }
  add_tile(tile, c, ldc, alpha, mr, nr);
}

#ifdef KILN_GEMM_X86
__attribute__((target("avx2,fma"))) void kernel_avx2(int64_t kc, const float* a, const float* b, float* c,
                                                     int64_t ldc, float alpha, int64_t mr, int64_t nr) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t p = 0; p < kc; ++p, a += MR, b += NR) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 av = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);
  }
  __m256 rows[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  __m256 al = _mm256_set1_ps(alpha);
  if (mr == MR && nr == NR) {
    for (int64_t r = 0; r < MR; ++r) {
      float* cr = c + r * ldc;
      _mm256_storeu_ps(cr, _mm256_fmadd_ps(al, rows[r][0], _mm256_loadu_ps(cr)));
      _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(al, rows[r][1], _mm256_loadu_ps(cr + 8)));
    }
    return;
  }
  alignas(32) float tile[MR * NR];
  for (int64_t r = 0; r < MR; ++r) {
    _mm256_store_ps(tile + r * NR, rows[r][0]);
    _mm256_store_ps(tile + r * NR + 8, rows[r][1]);
  }
  add_tile(tile, c, ldc, alpha, mr, nr);
}
#endif

using KernelFn = void (*)(int64_t, const float*, const float*, float*, int64_t, float, int64_t, int64_t);

KernelFn pick_kernel() {
#ifdef KILN_GEMM_X86
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return kernel_avx2;
#endif
  return kernel_portable;
}
// Chosen once, from CPU features (a function-local static, so safe during static init).
KernelFn chosen_kernel() {
  static const KernelFn k = pick_kernel();
  return k;
}

// C[0:M, 0:N] += alpha * op(A) op(B) on one thread (C already scaled by beta).
void gemm_serial(KernelFn kernel, const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, float alpha,
                 float* C, int64_t ldc) {
  thread_local std::vector<float> abuf, bbuf;
  abuf.resize(MC * KC);
  for (int64_t jc = 0; jc < N; jc += NC) {
    int64_t nc = std::min(NC, N - jc);
    int64_t nc_pad = (nc + NR - 1) / NR * NR;
    if (static_cast<int64_t>(bbuf.size()) < nc_pad * KC) bbuf.resize(nc_pad * KC);
    for (int64_t pc = 0; pc < K; pc += KC) {
      int64_t kc = std::min(KC, K - pc);
      pack_b(b, pc, kc, jc, nc, bbuf.data());
      for (int64_t ic = 0; ic < M; ic += MC) {
        int64_t mc = std::min(MC, M - ic);
        pack_a(a, ic, mc, pc, kc, abuf.data());
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += MR)
            kernel(kc, abuf.data() + ir * kc, bbuf.data() + jr * kc, C + (ic + ir) * ldc + jc + jr, ldc, alpha,
                     std::min(MR, mc - ir), std::min(NR, nc - jr));
      }
    }
  }
}

// Few rows of C (matrix-vector like, e.g. a batch-1 fully connected layer): packing B
// would cost as much as the product, so stream B once. Lanes of 8 partial sums keep the
// dot products vectorisable without reassociation flags.
// c[j] += a * b[j] over [0, n); restrict lets -O2 vectorise the fixed 8-lane body.
inline void axpy_row(float* __restrict c, const float* __restrict b, float a, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) c[j + u] += a * b[j + u];
  for (; j < n; ++j) c[j] += a * b[j];
}

inline float dot_row(const float* __restrict x, const float* __restrict y, int64_t n) {
  float lanes[8] = {};
  int64_t p = 0;
  for (; p + 8 <= n; p += 8)
    for (int u = 0; u < 8; ++u) lanes[u] += x[p + u] * y[p + u];
  float s = 0;
  for (; p < n; ++p) s += x[p] * y[p];
  for (float l : lanes) s += l;
  return s;
}

void gemm_few_rows(const Operand& a, const Operand& b, int64_t M, int64_t j0, int64_t j1, int64_t K, float alpha,
                   float* C, int64_t ldc) {
  std::vector<float> arow(K);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t p = 0; p < K; ++p) arow[p] = a.at(i, p);
    float* c = C + i * ldc;
    if (b.trans) {
      for (int64_t j = j0; j < j1; ++j) c[j] += alpha * dot_row(arow.data(), b.p + j * b.ld, K);
    } else {
      for (int64_t p = 0; p < K; ++p) axpy_row(c + j0, b.p + p * b.ld + j0, alpha * arow[p], j1 - j0);
    }
  }
}

}  // namespace

bool sgemm_uses_avx2() {
#ifdef KILN_GEMM_X86
  return chosen_kernel() == kernel_avx2;
#else
  return false;
#endif
}

namespace {

void sgemm_with(KernelFn kernel, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                int threads) {
  if (M <= 0 || N <= 0) return;
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    if (beta == 0.f)
      std::fill(c, c + N, 0.f);
    else if (beta != 1.f)
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
  }
  if (K <= 0 || alpha == 0.f) return;
  if (threads <= 0) threads = default_threads();
  // Small problems are not worth waking the pool: a wake-up costs tens of microseconds,
  // about as long as 2 M multiply-adds take on one core (measured on the digits CNN, whose
  // per-image 32x64x144 GEMMs ran 3x slower on 2 threads than on 1 with a 64^3 cut-off).
  if (static_cast<double>(M) * N * K < 128.0 * 128 * 128) threads = 1;
  if (M < MR) {
    Operand a{A, lda, transA}, b{B, ldb, transB};
    int64_t blocks = (N + 63) / 64;  // columns in blocks of 64 across threads
    parallel_for(blocks, threads, [&](int64_t lo, int64_t hi) {
      gemm_few_rows(a, b, M, lo * 64, std::min(N, hi * 64), K, alpha, C, ldc);
    });
    return;
  }
  // Split C along its longer side (in tiles) into one part per thread; each part packs
  // its own panels, so the parts share nothing but read-only A and B.
  bool split_m = (M + MR - 1) / MR >= (N + NR - 1) / NR;
  int64_t tiles = split_m ? (M + MR - 1) / MR : (N + NR - 1) / NR;
  int64_t parts = std::min<int64_t>(threads, tiles);
  auto run_part = [&](int64_t part) {
    int64_t t0 = tiles * part / parts, t1 = tiles * (part + 1) / parts;
    if (split_m) {
      int64_t i0 = t0 * MR, i1 = std::min(M, t1 * MR);
      if (i0 >= i1) return;
      Operand a{transA ? A + i0 : A + i0 * lda, lda, transA};
      gemm_serial(kernel, a, {B, ldb, transB}, i1 - i0, N, K, alpha, C + i0 * ldc, ldc);
    } else {
      int64_t j0 = t0 * NR, j1 = std::min(N, t1 * NR);
      if (j0 >= j1) return;
      Operand b{transB ? B + j0 * ldb : B + j0, ldb, transB};
      gemm_serial(kernel, {A, lda, transA}, b, M, j1 - j0, K, alpha, C + j0, ldc);
    }
  };
  if (parts <= 1) {
    run_part(0);
    return;
  }
  parallel_for(parts, static_cast<int>(parts), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) run_part(p);
  });
}

}  // namespace

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int threads) {
  sgemm_with(chosen_kernel(), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
}

void sgemm_portable(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int threads) {
  sgemm_with(kernel_portable, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
}

}  // namespace kiln::kernels

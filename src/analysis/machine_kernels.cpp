#include "machine_kernels.h"

#include <immintrin.h>

namespace kiln::analysis::machine_kernels {
namespace {
// Keeps results alive so the compiler cannot drop the timed loops.
volatile float g_sink_f = 0;
volatile int g_sink_i = 0;
volatile double g_sink_d = 0;

// Horizontal sums through memory: GCC 12's _mm512_reduce_* intrinsics warn (-Wuninitialized).
__attribute__((target("avx512f"))) float lane_sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}
__attribute__((target("avx512f"))) int lane_sum(__m512i v) {
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, v);
  int s = 0;
  for (int x : lanes) s += x;
  return s;
}
}  // namespace

// The twelve chains are written out: an array indexed in a loop could be spilled to memory.
#define KILN_REPEAT12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
static_assert(kAccumulators == 12, "KILN_REPEAT12 writes out the accumulators");

__attribute__((target("avx512f"))) double fma_f32_avx512(int64_t iters) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
#define DECL(i) __m512 acc##i = _mm512_set1_ps(1.0f + 0.01f * i);
  KILN_REPEAT12(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
    KILN_REPEAT12(STEP)
#undef STEP
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, acc##i);
  KILN_REPEAT12(SUM)
#undef SUM
  g_sink_f = lane_sum(s);
  return static_cast<double>(iters) * kAccumulators * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_f32_avx2(int64_t iters) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
#define DECL(i) __m256 acc##i = _mm256_set1_ps(1.0f + 0.01f * i);
  KILN_REPEAT12(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
    KILN_REPEAT12(STEP)
#undef STEP
  }
  __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, acc##i);
  KILN_REPEAT12(SUM)
#undef SUM
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  g_sink_f = lanes[0] + lanes[7];
  return static_cast<double>(iters) * kAccumulators * 8 * 2;
}

// Without FMA hardware: a multiply and an add per chain step (2 flops).
double fma_f32_scalar(int64_t iters) {
  const float a = 0.999999f, b = 1e-6f;
#define DECL(i) float acc##i = 1.0f + 0.01f * i;
  KILN_REPEAT12(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = acc##i * a + b;
    KILN_REPEAT12(STEP)
#undef STEP
  }
  float s = 0;
#define SUM(i) s += acc##i;
  KILN_REPEAT12(SUM)
#undef SUM
  g_sink_f = s;
  return static_cast<double>(iters) * kAccumulators * 2;
}

__attribute__((target("avx512f,avx512vnni"))) double dot_u8s8_avx512vnni(int64_t iters) {
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
#define DECL(i) __m512i acc##i = _mm512_set1_epi32(i);
  KILN_REPEAT12(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = _mm512_dpbusd_epi32(acc##i, a, b);
    KILN_REPEAT12(STEP)
#undef STEP
  }
  __m512i s = _mm512_setzero_si512();
#define SUM(i) s = _mm512_add_epi32(s, acc##i);
  KILN_REPEAT12(SUM)
#undef SUM
  g_sink_i = lane_sum(s);
  return static_cast<double>(iters) * kAccumulators * 64 * 2;
}

__attribute__((target("avx2,avxvnni"))) double dot_u8s8_avxvnni(int64_t iters) {
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
#define DECL(i) __m256i acc##i = _mm256_set1_epi32(i);
  KILN_REPEAT12(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = _mm256_dpbusd_avx_epi32(acc##i, a, b);
    KILN_REPEAT12(STEP)
#undef STEP
  }
  __m256i s = _mm256_setzero_si256();
#define SUM(i) s = _mm256_add_epi32(s, acc##i);
  KILN_REPEAT12(SUM)
#undef SUM
  g_sink_i = _mm256_extract_epi32(s, 0) + _mm256_extract_epi32(s, 7);
  return static_cast<double>(iters) * kAccumulators * 32 * 2;
}

// AVX2 without VNNI: vpmaddubsw (u8 x s8 pairs into int16) then vpmaddwd by ones (pairs into
// int32) and an add, the instructions kiln's 7-bit-weight kernels run: 32 MACs per three. Six
// accumulators, each with its own weights, and a byte operand that changes every iteration, so
// nothing is hoisted and everything stays in the 16 ymm registers (with twelve, GCC kept the
// accumulators in memory and measured 160 of the ~200 GOP/s the kernels reach).
__attribute__((target("avx2"))) double dot_u8s8_avx2(int64_t iters) {
  __m256i a = _mm256_set1_epi8(3);
  const __m256i ones = _mm256_set1_epi16(1), step = _mm256_set1_epi8(1);
#define KILN_REPEAT6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define DECL(i) __m256i acc##i = _mm256_set1_epi32(i); const __m256i b##i = _mm256_set1_epi8(static_cast<char>(-i - 1));
  KILN_REPEAT6(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = _mm256_add_epi32(acc##i, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b##i), ones));
    KILN_REPEAT6(STEP)
#undef STEP
    a = _mm256_add_epi8(a, step);
  }
  __m256i s = _mm256_setzero_si256();
#define SUM(i) s = _mm256_add_epi32(s, acc##i);
  KILN_REPEAT6(SUM)
#undef SUM
#undef KILN_REPEAT6
  g_sink_i = _mm256_extract_epi32(s, 0) + _mm256_extract_epi32(s, 7);
  return static_cast<double>(iters) * 6 * 32 * 2;
}

__attribute__((target("avx512f,avx512bf16"))) double dot_bf16_avx512(int64_t iters) {
  // Small operands keep the sums finite over any length we time (no inf/NaN paths).
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(2e-3f), _mm512_set1_ps(2e-3f));
#define DECL(i) __m512 acc##i = _mm512_set1_ps(0.01f * i);
  KILN_REPEAT12(DECL)
#undef DECL
  for (int64_t it = 0; it < iters; ++it) {
#define STEP(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
    KILN_REPEAT12(STEP)
#undef STEP
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, acc##i);
  KILN_REPEAT12(SUM)
#undef SUM
  g_sink_f = lane_sum(s);
  return static_cast<double>(iters) * kAccumulators * 32 * 2;
}

#undef KILN_REPEAT12

namespace {

__attribute__((target("avx512f"))) void triad_avx512(double* a, const double* b, const double* c, double s,
                                                     int64_t begin, int64_t end) {
  const __m512d vs = _mm512_set1_pd(s);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8)
    _mm512_storeu_pd(a + i, _mm512_fmadd_pd(vs, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
  for (; i < end; ++i) a[i] = b[i] + s * c[i];
}

__attribute__((target("avx2,fma"))) void triad_avx2(double* a, const double* b, const double* c, double s,
                                                    int64_t begin, int64_t end) {
  const __m256d vs = _mm256_set1_pd(s);
  int64_t i = begin;
  for (; i + 4 <= end; i += 4)
    _mm256_storeu_pd(a + i, _mm256_fmadd_pd(vs, _mm256_loadu_pd(c + i), _mm256_loadu_pd(b + i)));
  for (; i < end; ++i) a[i] = b[i] + s * c[i];
}

__attribute__((target("avx512f"))) double read_avx512(const float* p, int64_t n, int64_t passes) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  for (int64_t r = 0; r < passes; ++r) {
    for (int64_t i = 0; i + 128 <= n; i += 128) {
      s0 = _mm512_add_ps(s0, _mm512_loadu_ps(p + i));
      s1 = _mm512_add_ps(s1, _mm512_loadu_ps(p + i + 16));
      s2 = _mm512_add_ps(s2, _mm512_loadu_ps(p + i + 32));
      s3 = _mm512_add_ps(s3, _mm512_loadu_ps(p + i + 48));
      s4 = _mm512_add_ps(s4, _mm512_loadu_ps(p + i + 64));
      s5 = _mm512_add_ps(s5, _mm512_loadu_ps(p + i + 80));
      s6 = _mm512_add_ps(s6, _mm512_loadu_ps(p + i + 96));
      s7 = _mm512_add_ps(s7, _mm512_loadu_ps(p + i + 112));
    }
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)),
                           _mm512_add_ps(_mm512_add_ps(s4, s5), _mm512_add_ps(s6, s7)));
  return lane_sum(s);
}

__attribute__((target("avx2"))) double read_avx2(const float* p, int64_t n, int64_t passes) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  for (int64_t r = 0; r < passes; ++r) {
    for (int64_t i = 0; i + 64 <= n; i += 64) {
      s0 = _mm256_add_ps(s0, _mm256_loadu_ps(p + i));
      s1 = _mm256_add_ps(s1, _mm256_loadu_ps(p + i + 8));
      s2 = _mm256_add_ps(s2, _mm256_loadu_ps(p + i + 16));
      s3 = _mm256_add_ps(s3, _mm256_loadu_ps(p + i + 24));
      s4 = _mm256_add_ps(s4, _mm256_loadu_ps(p + i + 32));
      s5 = _mm256_add_ps(s5, _mm256_loadu_ps(p + i + 40));
      s6 = _mm256_add_ps(s6, _mm256_loadu_ps(p + i + 48));
      s7 = _mm256_add_ps(s7, _mm256_loadu_ps(p + i + 56));
    }
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)),
                           _mm256_add_ps(_mm256_add_ps(s4, s5), _mm256_add_ps(s6, s7)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[3] + lanes[7];
}

double read_scalar(const float* p, int64_t n, int64_t passes) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t r = 0; r < passes; ++r)
    for (int64_t i = 0; i + 4 <= n; i += 4) {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
  return s0 + s1 + s2 + s3;
}

}  // namespace

double triad(VectorIsa isa, double* a, const double* b, const double* c, double s, int64_t begin, int64_t end) {
  switch (isa) {
    case VectorIsa::avx512: triad_avx512(a, b, c, s, begin, end); break;
    case VectorIsa::avx2: triad_avx2(a, b, c, s, begin, end); break;
    case VectorIsa::scalar:
      for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
      break;
  }
  return 24.0 * static_cast<double>(end - begin);
}

double read_sum(VectorIsa isa, const float* p, int64_t n, int64_t passes) {
  double s = 0;
  int64_t step = 128;
  switch (isa) {
    case VectorIsa::avx512: s = read_avx512(p, n, passes); break;
    case VectorIsa::avx2: s = read_avx2(p, n, passes); step = 64; break;
    case VectorIsa::scalar: s = read_scalar(p, n, passes); step = 4; break;
  }
  g_sink_d = s;
  return 4.0 * static_cast<double>(n / step * step) * static_cast<double>(passes);
}

}  // namespace kiln::analysis::machine_kernels

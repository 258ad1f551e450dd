// sgemm against a naive triple loop over many shapes (ragged edges, 1s, transposes,
// leading dimensions larger than the matrix, alpha/beta) on one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kiln/kernels/gemm.h"

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float alpha, beta;
};

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                       float, float*, int64_t, int);

void check(const Case& c, int threads, GemmFn gemm = kiln::kernels::sgemm) {
  std::mt19937 rng(static_cast<unsigned>(c.M * 131 + c.N * 17 + c.K));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // Padded leading dimensions catch stride mistakes.
  int64_t lda = (c.ta ? c.M : c.K) + 3, ldb = (c.tb ? c.K : c.N) + 2, ldc = c.N + 5;
  std::vector<float> A((c.ta ? c.K : c.M) * lda), B((c.tb ? c.N : c.K) * ldb), C(c.M * ldc);
  for (auto& v : A) v = u(rng);
  for (auto& v : B) v = u(rng);
  for (auto& v : C) v = u(rng);
  std::vector<float> want = C;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.K; ++p) {
        double a = c.ta ? A[p * lda + i] : A[i * lda + p];
        double b = c.tb ? B[j * ldb + p] : B[p * ldb + j];
        s += a * b;
      }
      want[i * ldc + j] = static_cast<float>(c.alpha * s + (c.beta == 0 ? 0.0 : c.beta * C[i * ldc + j]));
    }
  gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(), ldc, threads);
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      float tol = 1e-4f * static_cast<float>(c.K + 1);
      ASSERT_NEAR(C[i * ldc + j], want[i * ldc + j], tol)
          << "M=" << c.M << " N=" << c.N << " K=" << c.K << " ta=" << c.ta << " tb=" << c.tb << " at (" << i << ","
          << j << ") threads=" << threads;
    }
}

TEST(Sgemm, MatchesNaiveOverShapes) {
  const int64_t sizes[] = {1, 2, 5, 6, 7, 16, 17, 33, 130};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : sizes)
        for (int64_t N : {1, 3, 16, 17, 40})
          for (int64_t K : {1, 4, 19, 300})
            for (int threads : {1, 2}) check({ta, tb, M, N, K, 1.f, 0.f}, threads);
}

TEST(Sgemm, AlphaBetaAndLargeBlocks) {
  for (int threads : {1, 2}) {
    check({false, false, 257, 3100, 5, 0.5f, 1.f}, threads);   // crosses the NC block
    check({true, false, 130, 70, 600, -2.f, 0.25f}, threads);  // crosses KC and MC blocks
    check({false, true, 64, 64, 64, 1.f, 1.f}, threads);
  }
}

TEST(Sgemm, PortableMicroKernelMatchesNaive) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : {1, 7, 13})
        for (int64_t N : {1, 17, 35})
          for (int threads : {1, 2}) check({ta, tb, M, N, 29, 1.5f, 0.5f}, threads, kiln::kernels::sgemm_portable);
  check({false, false, 130, 70, 300, 1.f, 0.f}, 1, kiln::kernels::sgemm_portable);
}

TEST(Sgemm, BetaZeroIgnoresNaNInC) {
  std::vector<float> A = {1, 2}, B = {3, 4}, C = {NAN};
  kiln::kernels::sgemm(false, false, 1, 1, 2, 1.f, A.data(), 2, B.data(), 1, 0.f, C.data(), 1, 1);
  EXPECT_FLOAT_EQ(C[0], 11.f);
}

TEST(Sgemm, EmptyKScalesC) {
  std::vector<float> C = {2, 4};
  kiln::kernels::sgemm(false, false, 1, 2, 0, 1.f, nullptr, 1, nullptr, 2, 0.5f, C.data(), 2, 1);
  EXPECT_FLOAT_EQ(C[0], 1.f);
  EXPECT_FLOAT_EQ(C[1], 2.f);
}

}  // namespace

// gemm_packed_b / gemm_packed_a on every ISA table against naive double-precision loops:
// ragged shapes (1, primes, non-multiples of the register tile and of the cache blocks),
// strides larger than the width, every activation, bias per row and per column, residual,
// alpha, 1 and 2 threads. Tolerance: |err| <= 1e-5·(sum over k of |a||b|) + the activation's
// own error (2e-6 relative), i.e. relative to the magnitude of the product.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernel_test_util.h"
#include "kiln/kernels/gemm_packed.h"

namespace kiln::kernels {
namespace {

using test::all_tables;
using test::random_vec;

struct Case {
  int64_t M, N, K;
  Act act = Act::None;
  bool bias = false, bias_per_row = false, residual = false;
  float alpha = 1.f;
  int threads = 1;
};

enum class Which { PackedB, PackedA };

void check(const KernelTable& t, Which which, const Case& c) {
  const int64_t lda = c.K + 3, ldb = c.N + 5, ldc = c.N + 2, ldr = c.N + 7;
  auto A = random_vec(c.M * lda, 1 + c.M * 7 + c.K);
  auto B = random_vec(c.K * ldb, 2 + c.N * 3 + c.K);
  auto bias = random_vec(std::max(c.M, c.N), 3);
  auto res = random_vec(c.M * ldr, 4);
  std::vector<float> C(c.M * ldc, 12345.f);
  Epilogue e;
  e.alpha = c.alpha;
  e.act = c.act;
  test::act_params(c.act, e.act_alpha, e.act_beta);
  if (c.bias) e.bias = bias.data(), e.bias_per_row = c.bias_per_row;
  if (c.residual) e.residual = res.data(), e.ldr = ldr;
  if (which == Which::PackedB) {
    std::vector<float> pb(packed_b_floats_on(t, c.K, c.N));
    pack_b_on(t, B.data(), ldb, false, c.K, c.N, pb.data());
    gemm_packed_b_on(t, c.M, c.N, c.K, A.data(), lda, pb.data(), C.data(), ldc, e, c.threads);
  } else {
    std::vector<float> pa(packed_a_floats_on(t, c.M, c.K));
    pack_a_on(t, A.data(), lda, c.M, c.K, pa.data());
    gemm_packed_a_on(t, c.M, c.N, c.K, pa.data(), B.data(), ldb, C.data(), ldc, e, c.threads);
  }
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      double acc = 0, mag = 0;
      for (int64_t p = 0; p < c.K; ++p) {
        acc += double(A[i * lda + p]) * B[p * ldb + j];
        mag += std::fabs(double(A[i * lda + p]) * B[p * ldb + j]);
      }
      double want = test::ref_epilogue(e, acc, i, j);
      double tol = 1e-5 * (mag * std::fabs(c.alpha) + 1) + 2e-6 * std::fabs(want);
      ASSERT_NEAR(C[i * ldc + j], want, tol) << isa_name(t.isa) << (which == Which::PackedB ? " packed_b" : " packed_a")
                                             << " M=" << c.M << " N=" << c.N << " K=" << c.K << " act="
                                             << test::act_label(c.act) << " threads=" << c.threads << " at (" << i
                                             << "," << j << ")";
    }
    for (int64_t j = c.N; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], 12345.f) << "wrote past N at row " << i;
  }
}

TEST(GemmPacked, ShapesOnEveryIsa) {
  const int64_t ms[] = {1, 2, 5, 13, 14, 15, 29, 64};
  const int64_t ns[] = {1, 7, 16, 17, 31, 33, 49, 64, 97};  // 1-4 vectors of a 64-column panel
  const int64_t ks[] = {1, 3, 37, 300};
  for (const KernelTable* t : all_tables())
    for (Which w : {Which::PackedB, Which::PackedA})
      for (int64_t M : ms)
        for (int64_t N : ns)
          for (int64_t K : ks) check(*t, w, {M, N, K});
}

TEST(GemmPacked, EpiloguesOnEveryIsa) {
  for (const KernelTable* t : all_tables())
    for (Which w : {Which::PackedB, Which::PackedA})
      for (Act a : test::kAllActs) {
        check(*t, w, {19, 45, 23, a, true, false, false, 1.f});
        check(*t, w, {19, 45, 23, a, true, true, true, 0.5f});
        check(*t, w, {3, 70, 9, a, false, false, true, -1.5f});
        check(*t, w, {1, 45, 23, a, true, true, true, 0.5f});  // one row: KernelTable::gemv_panels
        check(*t, w, {1, 70, 8, a, false, true, false, 1.f, 2});
      }
}

TEST(GemmPacked, CrossesCacheBlocksAndThreads) {
  for (const KernelTable* t : all_tables())
    for (Which w : {Which::PackedB, Which::PackedA})
      for (int threads : {1, 2}) {
        check(*t, w, {211, 1100, 523, Act::Relu, true, w == Which::PackedA, true, 1.f, threads});
        check(*t, w, {1, 2311, 67, Act::Gelu, true, false, false, 1.f, threads});   // GEMV-like
        check(*t, w, {128, 96, 260, Act::None, false, false, true, 1.f, threads});  // BERT-like, small
      }
}

// One row on two threads (KernelTable::gemv_panels over each thread's share of the panels,
// parallel_shares keyed by the packed weights): a cut skewed 3:1 (test::skew_shares) gives the
// even cut's floats.
TEST(GemmPacked, GemvGivesTheSameFloatsOnAnyCut) {
  for (const KernelTable* t : all_tables()) {
    const int64_t N = 2311, K = 67;
    const auto A = random_vec(K, 5), B = random_vec(K * N, 6), bias = random_vec(N, 7);
    std::vector<float> pb(packed_b_floats_on(*t, K, N));
    pack_b_on(*t, B.data(), N, false, K, N, pb.data());
    Epilogue e;
    e.bias = bias.data(), e.act = Act::Relu;
    reset_thread_speeds();
    std::vector<float> even(N), skewed(N);
    gemm_packed_b_on(*t, 1, N, K, A.data(), K, pb.data(), even.data(), N, e, 2);
    test::skew_shares(pb.data());
    gemm_packed_b_on(*t, 1, N, K, A.data(), K, pb.data(), skewed.data(), N, e, 2);
    reset_thread_speeds();
    EXPECT_EQ(even, skewed) << isa_name(t->isa);
    size_t nonzero = 0;
    for (float v : even) nonzero += v != 0.f;
    EXPECT_GT(nonzero, static_cast<size_t>(N / 4)) << isa_name(t->isa);
  }
}

// A row block whose tail is at most mr / 2 rows runs its last whole tile and the tail as two
// tiles of about (mr + tail) / 2 rows from two separately packed panels (gemm_driver.cpp): every
// row, its per-row bias and its residual must still land where they belong, past a cache block
// (M = 184: 168 + 14 + 2) and on two threads; with A read in place (up to 16 panels of B) and
// packed (wider).
TEST(GemmPacked, ShortRowTailsSplitIntoTwoTiles) {
  for (const KernelTable* t : all_tables()) {
    const int64_t mr = t->gemm.mr, wide = 16 * t->gemm.nr + 6;
    for (int64_t M : {mr + 1, 2 * mr + mr / 2, int64_t{128}, int64_t{184}})
      for (int threads : {1, 2})
        for (int64_t N : {int64_t{70}, wide}) {
          check(*t, Which::PackedB, {M, N, 40, Act::Relu, true, true, true, 1.f, threads});
          check(*t, Which::PackedB, {M, N - 37, 300, Act::None, true, false, false, 0.5f, threads});
        }
  }
}

// Products up to 16 panels of B wide read A in place (KernelTable::tile_a_rows_col_strip),
// packing only each row block's tail: digits_cnn's classifier (360 x 512 -> 64, then -> 10), a
// tail of every length, two K blocks (K = 1000: the residual and epilogue after the second),
// two panels and a partial third, 16 panels, one and two threads; and 17 panels, which pack A.
TEST(GemmPacked, NarrowProductsReadAInPlace) {
  for (const KernelTable* t : all_tables()) {
    const int64_t mr = t->gemm.mr, nr = t->gemm.nr;
    for (int threads : {1, 2}) {
      check(*t, Which::PackedB, {360, 64, 512, Act::Relu, true, false, false, 1.f, threads});
      check(*t, Which::PackedB, {360, 10, 64, Act::None, true, false, false, 1.f, threads});
      for (int64_t tail = 1; tail < mr; ++tail)
        check(*t, Which::PackedB, {4 * mr + tail, nr + 5, 37, Act::Silu, true, true, true, 0.5f, threads});
      check(*t, Which::PackedB, {97, 2 * nr, 1000, Act::Relu, true, true, true, 1.f, threads});
      check(*t, Which::PackedB, {61, 2 * nr + 1, 33, Act::None, true, false, true, 1.f, threads});
      check(*t, Which::PackedB, {29, 16 * nr, 20, Act::None, true, true, false, 1.f, threads});
      check(*t, Which::PackedB, {29, 16 * nr + 3, 20, Act::Relu, true, false, true, 1.f, threads});
    }
  }
}

// pack_a_on writes exactly its panels: mr rows per K step, zero rows past M, and nothing past
// packed_a_floats_on. AVX-512's 6-row panels store whole 16-lane columns whose spill reaches two
// steps ahead: a panel's last two steps once wrote 4 floats past the buffer (heap corruption
// while lowering efficientnet_b0).
TEST(GemmPacked, PackedAPanelsStayInTheirBuffer) {
  for (const KernelTable* t : all_tables()) {
    const int64_t mr = t->gemm.mr;
    for (int64_t M : {int64_t{1}, mr - 1, mr, mr + 1, 2 * mr + 3})
      for (int64_t K : {1, 2, 3, 15, 16, 17, 33, 48, 53}) {
        const int64_t lda = K + 2;
        auto A = random_vec(M * lda, 7 + M * K);
        const size_t n = packed_a_floats_on(*t, M, K);
        std::vector<float> pa(n + 64, -777.f);
        pack_a_on(*t, A.data(), lda, M, K, pa.data());
        for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
          const int64_t panel = i / (K * mr), q = i % (K * mr) / mr, r = panel * mr + i % mr;
          ASSERT_EQ(pa[i], r < M ? A[r * lda + q] : 0.f) << isa_name(t->isa) << " M=" << M << " K=" << K << " at " << i;
        }
        for (size_t i = n; i < pa.size(); ++i)
          ASSERT_EQ(pa[i], -777.f) << isa_name(t->isa) << " M=" << M << " K=" << K << " wrote past the panels at " << i;
      }
  }
}

TEST(GemmPacked, EmptyKGivesEpilogueOfZero) {
  for (const KernelTable* t : all_tables()) {
    std::vector<float> bias = {1.f, -2.f, 3.f}, C(6, 99.f), pb(packed_b_floats_on(*t, 0, 3));
    Epilogue e;
    e.bias = bias.data();
    e.act = Act::Relu;
    gemm_packed_b_on(*t, 2, 3, 0, nullptr, 0, pb.data(), C.data(), 3, e, 1);
    EXPECT_EQ(C, (std::vector<float>{1, 0, 3, 1, 0, 3}));
  }
}

TEST(GemmPacked, TransposedBPacksTheSameProduct) {
  for (const KernelTable* t : all_tables()) {
    const int64_t M = 9, N = 21, K = 13;
    auto A = random_vec(M * K, 5), B = random_vec(K * N, 6);
    std::vector<float> Bt(N * K);
    for (int64_t p = 0; p < K; ++p)
      for (int64_t j = 0; j < N; ++j) Bt[j * K + p] = B[p * N + j];
    std::vector<float> p1(packed_b_floats_on(*t, K, N)), p2(p1.size()), C1(M * N), C2(M * N);
    pack_b_on(*t, B.data(), N, false, K, N, p1.data());
    pack_b_on(*t, Bt.data(), K, true, K, N, p2.data());
    EXPECT_EQ(p1, p2);
    gemm_packed_b_on(*t, M, N, K, A.data(), K, p2.data(), C2.data(), N, Epilogue{}, 1);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) s += double(A[i * K + p]) * B[p * N + j];
        EXPECT_NEAR(C2[i * N + j], s, 1e-5 * K);
      }
  }
}

TEST(GemmPacked, DefaultTableIsTheBestIsa) {
  const KernelTable& t = kernel_table();
  EXPECT_EQ(gemm_isa(), isa_name(t.isa));
  if (kernel_table_for(Isa::Avx512)) {
    EXPECT_EQ(t.isa, Isa::Avx512);
  }
  EXPECT_GT(t.gemm.mr, 0);
  EXPECT_EQ(t.gemm.nr % t.simd_width, 0);
}

}  // namespace
}  // namespace kiln::kernels

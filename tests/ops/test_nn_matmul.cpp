// Gemm, MatMul and Einsum against naive loops: transposes, broadcasting, 1-D operands,
// batched contractions, implicit outputs, ellipses, diagonals; shapes, costs, errors.
#include "test_nn_support.h"

namespace kiln::nntest {
namespace {

using Ints = std::vector<int64_t>;

// Naive batched matmul of row-major [.., M, K] x [.., K, N] with numpy broadcasting.
Tensor naive_matmul(const Tensor& A, const Tensor& B) {
  Ints ad = A.dims(), bd = B.dims();
  bool a1 = ad.size() == 1, b1 = bd.size() == 1;
  if (a1) ad.insert(ad.begin(), 1);
  if (b1) bd.push_back(1);
  size_t r = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), r - ad.size(), 1);
  bd.insert(bd.begin(), r - bd.size(), 1);
  int64_t M = ad[r - 2], K = ad[r - 1], N = bd[r - 1];
  Ints batch;
  for (size_t i = 0; i + 2 < r; ++i) batch.push_back(std::max(ad[i], bd[i]));
  Ints out = batch;
  if (!a1) out.push_back(M);
  if (!b1) out.push_back(N);
  Tensor Y(DType::f32, out);
  int64_t nb = numel_of(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += (ad[d] == 1 ? 0 : idx) * sa;
      ob += (bd[d] == 1 ? 0 : idx) * sb;
      sa *= ad[d], sb *= bd[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(A.data<float>()[oa * M * K + i * K + k]) * B.data<float>()[ob * K * N + k * N + j];
        Y.data<float>()[(bi * M + i) * N + j] = static_cast<float>(s);
      }
  }
  return Y;
}

TEST(NnMatMul, BroadcastAnd1DOperandsAgainstNaive) {
  std::vector<std::pair<Ints, Ints>> cases = {
      {{3, 4}, {4, 5}},       {{2, 3, 4}, {4, 5}},       {{2, 3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {5, 4, 7}}, {{4}, {4, 5}},          {{2, 3, 4}, {4}},
      {{4}, {4}},             {{1, 7, 33}, {3, 1, 33, 17}}, {{3, 4}, {2, 4, 5}},
      {{4}, {2, 4, 5}},       {{2, 1, 6, 4}, {4, 3}},    {{1, 1}, {1, 1}},
  };
  unsigned seed = 3;
  for (const auto& [a, b] : cases) {
    Tensor A = random_f32(a, seed++), B = random_f32(b, seed++);
    OneNode g("MatMul", {in("a", A), in("b", B)}, {"y"});
    Tensor y = g.run(2)[0];
    expect_close(y, naive_matmul(A, B), 1e-4, str_cat(dims_str(a), " x ", dims_str(b)));
    EXPECT_EQ(g.out(0).shape, Shape::of(y.dims()));
  }
}

TEST(NnMatMul, SymbolicBatchAndSequence) {
  OneNode g("MatMul", {{"a", Tensor(), false, Shape({Dim::sym("B"), Dim::sym("S"), Dim(768)})},
                       init("w", Tensor(DType::f32, {768, 3072}))},
            {"y"});
  g.m.graph->inputs[0]->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("B"), Dim::sym("S"), Dim(3072)}));
}

TEST(NnMatMul, CostAndErrors) {
  OneNode g("MatMul", {in("a", Tensor(DType::f32, {2, 3, 4})), in("b", Tensor(DType::f32, {4, 5}))}, {"y"});
  g.infer();
  auto cost = ops::node_cost(*g.node);
  ASSERT_TRUE(cost.has_value());
  EXPECT_DOUBLE_EQ(cost->flops, 2.0 * 2 * 3 * 5 * 4);
  EXPECT_DOUBLE_EQ(cost->bytes_read, 4.0 * (24 + 20));
  OneNode bad("MatMul", {in("a", Tensor(DType::f32, {2, 3})), in("b", Tensor(DType::f32, {4, 5}))}, {"y"});
  EXPECT_THROW(bad.infer(), Error);
}

TEST(NnMatMul, Int32) {
  OneNode g("MatMul", {in("a", Tensor::from_vector<int32_t>({1, 2}, {2, 3})),
                       in("b", Tensor::from_vector<int32_t>({2, 2}, {1, 10, 100, 1000}))},
            {"y"});
  expect_values(g.run()[0], {1, 2}, {302, 3020});
}

TEST(NnGemm, TransposesAlphaBetaAndBroadcastC) {
  Tensor A = random_f32({5, 3}, 31), B = random_f32({4, 5}, 32), C = random_f32({4}, 33);
  // Y = 0.5 * A^T B^T + 2 * C (C broadcast along rows)
  OneNode g("Gemm", {in("a", A), in("b", B), init("c", C)}, {"y"},
            {{"transA", 1}, {"transB", 1}, {"alpha", 0.5f}, {"beta", 2.f}});
  Tensor y = g.run(2)[0];
  ASSERT_EQ(y.dims(), (Ints{3, 4}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 5; ++k) s += A.data<float>()[k * 3 + i] * B.data<float>()[j * 5 + k];
      ASSERT_NEAR(y.data<float>()[i * 4 + j], 0.5 * s + 2 * C.data<float>()[j], 1e-5);
    }
  auto cost = ops::node_cost(*g.node);
  ASSERT_TRUE(cost.has_value());
  EXPECT_DOUBLE_EQ(cost->flops, 2.0 * 3 * 4 * 5 + 2.0 * 3 * 4);
}

TEST(NnGemm, HandCheckedWithoutCAndColumnC) {
  Tensor A = f32({2, 2}, {1, 2, 3, 4}), B = f32({2, 2}, {5, 6, 7, 8});
  OneNode g("Gemm", {in("a", A), in("b", B)}, {"y"});
  expect_values(g.run()[0], {2, 2}, {19, 22, 43, 50});
  OneNode gc("Gemm", {in("a", A), in("b", B), init("c", f32({2, 1}, {1, -1}))}, {"y"});
  expect_values(gc.run()[0], {2, 2}, {20, 23, 42, 49});
  OneNode f64("Gemm", {in("a", A.cast(DType::f64)), in("b", B.cast(DType::f64))}, {"y"}, {{"alpha", 2.f}});
  expect_values(f64.run()[0], {2, 2}, {38, 44, 86, 100});
}

TEST(NnGemm, InnerDimMismatchNamesNode) {
  OneNode g("Gemm", {in("a", Tensor(DType::f32, {2, 3})), in("b", Tensor(DType::f32, {2, 3}))}, {"y"});
  try {
    g.infer();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n0"), std::string::npos) << e.what();
  }
}

// ---- Einsum ----------------------------------------------------------------------

TEST(NnEinsum, AttentionScoresUseTheMatmulPathAndMatchNaive) {
  Tensor q = random_f32({2, 3, 5, 4}, 41), k = random_f32({2, 3, 6, 4}, 42);
  OneNode g("Einsum", {in("q", q), in("k", k)}, {"y"}, {{"equation", "bhid,bhjd->bhij"}});
  Tensor y = g.run(2)[0];
  ASSERT_EQ(y.dims(), (Ints{2, 3, 5, 6}));
  for (int64_t bh = 0; bh < 6; ++bh)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        double s = 0;
        for (int64_t d = 0; d < 4; ++d) s += q.data<float>()[(bh * 5 + i) * 4 + d] * k.data<float>()[(bh * 6 + j) * 4 + d];
        ASSERT_NEAR(y.data<float>()[(bh * 5 + i) * 6 + j], s, 1e-5);
      }
}

TEST(NnEinsum, PermutedOutputAndImplicitForm) {
  Tensor a = random_f32({3, 4}, 43), b = random_f32({4, 5}, 44);
  // "ij,jk" implicit output is "ik"; "ij,jk->ki" is its transpose.
  OneNode im("Einsum", {in("a", a), in("b", b)}, {"y"}, {{"equation", "ij,jk"}});
  Tensor y = im.run()[0];
  expect_close(y, naive_matmul(a, b));
  OneNode tr("Einsum", {in("a", a), in("b", b)}, {"y"}, {{"equation", "ij,jk->ki"}});
  Tensor t = tr.run()[0];
  ASSERT_EQ(t.dims(), (Ints{5, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 5; ++k) ASSERT_NEAR(t.data<float>()[k * 3 + i], y.data<float>()[i * 5 + k], 1e-6);
}

TEST(NnEinsum, GeneralPathTraceDiagonalSumOuterAndEllipsis) {
  Tensor m = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  OneNode trace("Einsum", {in("m", m)}, {"y"}, {{"equation", "ii"}});
  expect_values(trace.run()[0], {}, {15});
  OneNode diag("Einsum", {in("m", m)}, {"y"}, {{"equation", "ii->i"}});
  expect_values(diag.run()[0], {3}, {1, 5, 9});
  OneNode colsum("Einsum", {in("m", m)}, {"y"}, {{"equation", "ij->j"}});
  expect_values(colsum.run()[0], {3}, {12, 15, 18});
  OneNode transpose("Einsum", {in("m", m)}, {"y"}, {{"equation", "ij->ji"}});
  expect_values(transpose.run()[0], {3, 3}, {1, 4, 7, 2, 5, 8, 3, 6, 9});
  OneNode outer("Einsum", {in("a", f32({2}, {1, 2})), in("b", f32({3}, {1, 10, 100}))}, {"y"}, {{"equation", "i,j->ij"}});
  expect_values(outer.run()[0], {2, 3}, {1, 10, 100, 2, 20, 200});
  // Ellipsis with broadcasting: [2,1,2] ... [3,2] -> [2,3]: batch dims broadcast.
  Tensor a = f32({2, 1, 2}, {1, 2, 3, 4}), b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  OneNode ell("Einsum", {in("a", a), in("b", b)}, {"y"}, {{"equation", "...k,...k->..."}});
  expect_values(ell.run()[0], {2, 3}, {1, 2, 3, 3, 4, 7});
  // Three operands.
  OneNode three("Einsum", {in("a", f32({2}, {1, 2})), in("b", f32({2}, {3, 4})), in("c", f32({2}, {5, 6}))}, {"y"},
                {{"equation", "i,i,i->"}});
  expect_values(three.run()[0], {}, {1 * 3 * 5 + 2 * 4 * 6});
}

TEST(NnEinsum, ShapeInferenceAndErrors) {
  OneNode g("Einsum", {{"q", Tensor(), false, Shape({Dim::sym("B"), Dim(12), Dim::sym("S"), Dim(64)})},
                       {"k", Tensor(), false, Shape({Dim::sym("B"), Dim(12), Dim::sym("S"), Dim(64)})}},
            {"y"}, {{"equation", "bhid,bhjd->bhij"}});
  for (auto* v : g.m.graph->inputs) v->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("B"), Dim(12), Dim::sym("S"), Dim::sym("S")}));
  OneNode bad("Einsum", {in("a", Tensor(DType::f32, {2, 3})), in("b", Tensor(DType::f32, {4, 5}))}, {"y"},
              {{"equation", "ij,jk->ik"}});
  EXPECT_THROW(bad.infer(), Error);
  OneNode rank("Einsum", {in("a", Tensor(DType::f32, {2, 3}))}, {"y"}, {{"equation", "ijk->i"}});
  EXPECT_THROW(rank.infer(), Error);
}

}  // namespace
}  // namespace kiln::nntest

namespace kiln::nntest {
namespace {

TEST(NnMatMul, HalfPrecisionComputesInFloat) {
  Tensor A = f32({2, 2}, {1, 2, 3, 4}), B = f32({2, 2}, {0.5f, 1, 2, 4});
  OneNode g("MatMul", {in("a", A.cast(DType::f16)), in("b", B.cast(DType::f16))}, {"y"});
  Tensor y = g.run()[0];
  EXPECT_EQ(y.dtype(), DType::f16);
  expect_values(y, {2, 2}, {4.5, 9, 9.5, 19});
}

}  // namespace
}  // namespace kiln::nntest

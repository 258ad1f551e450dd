// Row kernels on every ISA table against naive double-precision loops: softmax (relative
// error <= 2e-6 per element), layer norm (|err| <= 1e-5·max|y|), attention with and without
// mask and causal flag, Sq != Sk, broadcast masks (|err| <= 1e-5·max|V|), and the standalone
// epilogue. Rows of lengths around the vector widths (1, 7, 16, 17, 100, 1000).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernel_test_util.h"
#include "kiln/kernels/rows.h"

namespace kiln::kernels {
namespace {

using test::random_vec;

TEST(Rows, SoftmaxMatchesNaive) {
  for (const KernelTable* t : test::all_tables())
    for (int64_t n : {1, 7, 16, 17, 100, 1000})
      for (int threads : {1, 2}) {
        const int64_t rows = 37, ld = n + 3;
        auto x = random_vec(rows * ld, 21 + n, -8.f, 8.f);
        x[5] = -std::numeric_limits<float>::infinity();  // a masked element
        std::vector<float> y(rows * ld, 0.f);
        softmax_rows(x.data(), ld, y.data(), ld, rows, n, threads, *t);
        for (int64_t r = 0; r < rows; ++r) {
          double m = -INFINITY, s = 0;
          for (int64_t j = 0; j < n; ++j) m = std::max(m, double(x[r * ld + j]));
          for (int64_t j = 0; j < n; ++j) s += std::exp(double(x[r * ld + j]) - m);
          for (int64_t j = 0; j < n; ++j) {
            double want = std::exp(double(x[r * ld + j]) - m) / s;
            ASSERT_NEAR(y[r * ld + j], want, 2e-6 * want + 1e-30) << isa_name(t->isa) << " n=" << n << " r=" << r;
          }
        }
      }
}

TEST(Rows, SoftmaxOfAllMaskedRowIsZero) {
  for (const KernelTable* t : test::all_tables()) {
    std::vector<float> x(20, -std::numeric_limits<float>::infinity()), y(20, 5.f);
    softmax_rows(x.data(), 20, y.data(), 20, 1, 20, 1, *t);
    for (float v : y) EXPECT_EQ(v, 0.f);
  }
}

TEST(Rows, LayerNormMatchesNaive) {
  for (const KernelTable* t : test::all_tables())
    for (int64_t n : {1, 7, 16, 17, 100, 768})
      for (bool with_bias : {false, true}) {
        const int64_t rows = 9;
        auto x = random_vec(rows * n, 31 + n, -3.f, 5.f), scale = random_vec(n, 32), bias = random_vec(n, 33);
        std::vector<float> y(rows * n);
        layer_norm_rows(x.data(), n, scale.data(), with_bias ? bias.data() : nullptr, 1e-5f, y.data(), n, rows, n, 2,
                        *t);
        for (int64_t r = 0; r < rows; ++r) {
          double mean = 0, var = 0;
          for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
          mean /= n;
          for (int64_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
          var /= n;
          std::vector<double> want(n);
          double ymax = 0;
          for (int64_t j = 0; j < n; ++j) {
            want[j] = (x[r * n + j] - mean) / std::sqrt(var + 1e-5) * scale[j] + (with_bias ? bias[j] : 0.0);
            ymax = std::max(ymax, std::fabs(want[j]));
          }
          for (int64_t j = 0; j < n; ++j)
            ASSERT_NEAR(y[r * n + j], want[j], 1e-5 * (ymax + 1)) << isa_name(t->isa) << " n=" << n;
        }
      }
}

TEST(Rows, ApplyEpilogueMatchesNaive) {
  for (const KernelTable* t : test::all_tables())
    for (Act a : test::kAllActs) {
      const int64_t rows = 5, cols = 37, ld = 40;
      auto y = random_vec(rows * ld, 41, -4.f, 4.f), bias = random_vec(cols, 42), res = random_vec(rows * cols, 43);
      auto orig = y;
      Epilogue e;
      e.alpha = 0.75f, e.bias = bias.data(), e.residual = res.data(), e.ldr = cols, e.act = a;
      test::act_params(a, e.act_alpha, e.act_beta);
      apply_epilogue(y.data(), ld, rows, cols, e, 1, *t);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < ld; ++j) {
          if (j >= cols) {
            ASSERT_EQ(y[i * ld + j], orig[i * ld + j]);
            continue;
          }
          double want = test::ref_epilogue(e, orig[i * ld + j], i, j);
          ASSERT_NEAR(y[i * ld + j], want, 2e-6 * (std::fabs(want) + 1))
              << isa_name(t->isa) << " " << test::act_label(a) << " x=" << orig[i * ld + j];
        }
    }
}

struct AttnCase {
  int64_t B, H, Sq, Sk, D, Dv;
  bool mask, causal;
  int mask_kind = 0;  // 0: [B, 1, 1, Sk] padding mask; 1: full [B, H, Sq, Sk]
};

void check_attention(const KernelTable& t, const AttnCase& c, int threads) {
  auto q = random_vec(c.B * c.H * c.Sq * c.D, 51, -2.f, 2.f);
  auto k = random_vec(c.B * c.H * c.Sk * c.D, 52, -2.f, 2.f);
  auto v = random_vec(c.B * c.H * c.Sk * c.Dv, 53);
  std::vector<float> mask;
  AttentionArgs a;
  a.q = q.data(), a.k = k.data(), a.v = v.data();
  a.B = c.B, a.H = c.H, a.Sq = c.Sq, a.Sk = c.Sk, a.D = c.D, a.Dv = c.Dv;
  a.scale = 1.f / std::sqrt(float(c.D));
  a.causal = c.causal;
  if (c.mask) {
    if (c.mask_kind == 0) {
      mask.assign(c.B * c.Sk, 0.f);
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t j = c.Sk - 1 - b; j < c.Sk; j += 3) mask[b * c.Sk + j] = -10000.f;  // padded keys
      a.mask_strides[0] = c.Sk, a.mask_strides[1] = 0, a.mask_strides[2] = 0, a.mask_strides[3] = 1;
    } else {
      mask = random_vec(c.B * c.H * c.Sq * c.Sk, 54, -3.f, 1.f);
      a.mask_strides[0] = c.H * c.Sq * c.Sk, a.mask_strides[1] = c.Sq * c.Sk, a.mask_strides[2] = c.Sk;
      a.mask_strides[3] = 1;
    }
    a.mask = mask.data();
  }
  std::vector<float> y(c.B * c.H * c.Sq * c.Dv, 9.f);
  a.y = y.data();
  attention(a, threads, t);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t i = 0; i < c.Sq; ++i) {
        const int64_t bh = b * c.H + h;
        std::vector<double> s(c.Sk);
        double m = -INFINITY;
        for (int64_t j = 0; j < c.Sk; ++j) {
          double d = 0;
          for (int64_t x = 0; x < c.D; ++x) d += double(q[(bh * c.Sq + i) * c.D + x]) * k[(bh * c.Sk + j) * c.D + x];
          d *= a.scale;
          if (a.mask)
            d += a.mask[b * a.mask_strides[0] + h * a.mask_strides[1] + i * a.mask_strides[2] + j * a.mask_strides[3]];
          if (c.causal && j > i + c.Sk - c.Sq) d = -INFINITY;
          s[j] = d;
          m = std::max(m, d);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.Sk; ++j) sum += (s[j] = (m == -INFINITY ? 0 : std::exp(s[j] - m)));
        for (int64_t dv = 0; dv < c.Dv; ++dv) {
          double want = 0;
          for (int64_t j = 0; j < c.Sk; ++j) want += s[j] * v[(bh * c.Sk + j) * c.Dv + dv];
          want = sum > 0 ? want / sum : 0;
          ASSERT_NEAR(y[(bh * c.Sq + i) * c.Dv + dv], want, 1e-5 * (1 + c.Sk / 1000.0))
              << isa_name(t.isa) << " B=" << c.B << " H=" << c.H << " Sq=" << c.Sq << " Sk=" << c.Sk << " D=" << c.D
              << " mask=" << c.mask << " causal=" << c.causal << " threads=" << threads << " at b=" << b << " h=" << h
              << " i=" << i << " dv=" << dv;
        }
      }
}

TEST(Rows, AttentionMatchesNaive) {
  const AttnCase cases[] = {
      {1, 2, 16, 16, 8, 8, false, false},
      {2, 3, 37, 37, 16, 16, true, false},      // padding mask broadcast over heads and queries
      {1, 2, 70, 70, 64, 64, false, true},      // causal self-attention (GPT-2 full sequence)
      {1, 2, 1, 131, 64, 64, false, true},      // decode step: one query, KV cache of 131
      {1, 12, 1, 128, 64, 64, false, true},     // GPT-2's decode step: over 2^16 MACs, heads on threads
      {1, 1, 5, 150, 12, 20, true, true, 1},    // Sq < Sk with a full mask, D != Dv
      {2, 1, 50, 20, 8, 5, true, false, 1},     // Sq > Sk
      {1, 1, 40, 20, 8, 8, false, true},        // causal with Sq > Sk: first rows see no key
      {1, 12, 128, 128, 64, 64, true, false},   // bert_base: whole 128-row tiles, 4-row groups
      {1, 2, 130, 130, 72, 72, false, true},    // 2-row group tail, 4.5 vectors of D and Dv
      {1, 1, 7, 200, 24, 100, true, false, 1},  // 3-row tail, Dv over one 4-vector block
  };
  for (const KernelTable* t : test::all_tables())
    for (const AttnCase& c : cases)
      for (int threads : {1, 2}) check_attention(*t, c, threads);
}

// Q, K and V read as strided views of one [S, B, 3·H·D] projection output (torch's seq-first
// nn.MultiheadAttention: Q at column 0, K at H·D, V at 2·H·D) and Y written into [S, B, H·Dv]
// give the floats of contiguous [B,H,S,D] copies: the same tile code, only the row pointers
// move. B = 2 so that every stride matters; 1 and 2 threads.
TEST(Rows, AttentionReadsAndWritesStridedViews) {
  const int64_t B = 2, H = 3, S = 37, D = 16, E = H * D, row = 3 * E;
  const auto qkv = random_vec(S * B * row, 61, -1.f, 1.f);
  // Contiguous copies: x[b][h][s][d] = qkv[s][b][part * E + h * D + d].
  auto gather = [&](int64_t part) {
    std::vector<float> x(B * H * S * D);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t d = 0; d < D; ++d) x[((b * H + h) * S + s) * D + d] = qkv[(s * B + b) * row + part * E + h * D + d];
    return x;
  };
  const auto q = gather(0), k = gather(1), v = gather(2);
  for (const KernelTable* t : test::all_tables())
    for (int threads : {1, 2})
      for (bool causal : {false, true}) {
        AttentionArgs a;
        a.B = B, a.H = H, a.Sq = a.Sk = S, a.D = a.Dv = D, a.scale = 0.25f, a.causal = causal;
        a.q = q.data(), a.k = k.data(), a.v = v.data();
        std::vector<float> want(B * H * S * D);
        a.y = want.data();
        attention(a, threads, *t);
        AttentionArgs sv = a;
        sv.q = qkv.data(), sv.k = qkv.data() + E, sv.v = qkv.data() + 2 * E;
        for (int64_t* st : {sv.q_strides, sv.k_strides, sv.v_strides}) st[0] = row, st[1] = D, st[2] = B * row;
        std::vector<float> got(S * B * E, 7.f);
        sv.y = got.data();
        sv.y_strides[0] = E, sv.y_strides[1] = D, sv.y_strides[2] = B * E;
        attention(sv, threads, *t);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t s = 0; s < S; ++s)
              for (int64_t d = 0; d < D; ++d)
                ASSERT_EQ(got[(s * B + b) * E + h * D + d], want[((b * H + h) * S + s) * D + d])
                    << isa_name(t->isa) << " threads " << threads << " causal " << causal << " at b" << b << " h" << h
                    << " s" << s << " d" << d;
      }
}

}  // namespace
}  // namespace kiln::kernels

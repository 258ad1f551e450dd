// The INT8 kernels on every ISA this CPU has (scalar, AVX2, AVX-VNNI, AVX-512 VNNI) against
// naive integer loops: accumulators exactly, the requantizing epilogue bit for bit against
// epilogue_real/quantize_value, convolutions over strides, pads, dilations, groups and ragged
// edges, for u8 and (sign-flipped) s8 activations.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8 {
namespace {

std::vector<const QKernels*> all_qkernels() {
  std::vector<const QKernels*> out;
  for (QIsa isa : {QIsa::Scalar, QIsa::Avx2, QIsa::AvxVnni, QIsa::Avx512Vnni})
    if (const QKernels* k = qkernels_for(isa)) out.push_back(k);
  return out;
}

// The tables a product with weights `w` can run on: every ISA's, or (narrow) only AVX2's
// vpmaddubsw kernels for 7-bit weights, empty where the CPU does not pick them.
std::vector<const QKernels*> tables_for(bool narrow) {
  if (!narrow) return all_qkernels();
  const int8_t seven_bit[] = {-64, 64};
  const QKernels& k = qkernels_for_signed(seven_bit, 2);
  if (!k.narrow_signed) return {};
  return {&k};
}

// Random weights in [-127, 127], or in [-64, 64] for the narrow kernels.
std::vector<int8_t> random_weights(size_t n, unsigned seed, bool narrow) {
  std::mt19937 rng(seed);
  std::vector<int8_t> w(n);
  for (auto& v : w) v = static_cast<int8_t>(narrow ? static_cast<int>(rng() % 129) - 64 : static_cast<int>(rng() % 255) - 127);
  return w;
}

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<float> random_floats(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

TEST(Int8Kernels, TablesIncludeScalarAndBestIsLast) {
  auto ks = all_qkernels();
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks.front()->isa, QIsa::Scalar);
  EXPECT_EQ(qkernels().isa, ks.back()->isa);
  for (const QKernels* k : ks) EXPECT_LE(k->mr * k->nr, 16 * 64) << qisa_name(k->isa);
}

// acc = rows x cols exactly (scale 1, f32 output is exact below 2^24), ragged M, N, K.
TEST(Int8Kernels, GemmAccumulatorsMatchNaiveIntegerLoops) {
  const int64_t shapes[][3] = {{1, 1, 1},  {3, 5, 7},    {8, 32, 4},   {9, 33, 5},   {17, 70, 130},
                               {64, 64, 64}, {65, 31, 257}, {130, 18, 96}, {5, 100, 3}, {70, 129, 33}};
  for (const QKernels* k : all_qkernels())
    for (bool rows_signed : {true, false})
      for (const auto& sh : shapes) {
        const int64_t M = sh[0], N = sh[1], K = sh[2];
        auto a = random_bytes(M * K, 11 + M), b = random_bytes(K * N, 7 + N);
        std::vector<uint8_t> pa(packed_rows_bytes(*k, M, K)), pb(packed_cols_bytes(*k, K, N));
        pack_rows(*k, a.data(), K, M, K, 0, pa.data());
        pack_cols(*k, b.data(), N, false, K, N, pb.data());
        std::vector<float> ones(std::max(M, N), 1.f), y(M * N, -1.f);
        QEpilogue e;
        e.scale = ones.data();
        qgemm_packed(*k, rows_signed, M, N, K, pa.data(), pb.data(), e, y.data(), N, 2);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            int32_t s = 0;
            for (int64_t q = 0; q < K; ++q) {
              int32_t av = rows_signed ? static_cast<int8_t>(a[m * K + q]) : a[m * K + q];
              int32_t bv = rows_signed ? b[q * N + n] : static_cast<int8_t>(b[q * N + n]);
              s += av * bv;
            }
            ASSERT_EQ(y[m * N + n], static_cast<float>(s))
                << qisa_name(k->isa) << " rows_signed " << rows_signed << " M N K " << M << " " << N << " " << K
                << " at " << m << "," << n;
          }
      }
}

// Extreme operands: every product 255 * -128 (vpmaddubsw would saturate here).
TEST(Int8Kernels, NoSaturationAtExtremes) {
  const int64_t M = 9, N = 17, K = 64;
  for (const QKernels* k : all_qkernels()) {
    std::vector<uint8_t> w(M * K, 0x80), x(K * N, 255);  // s8 -128, u8 255
    std::vector<uint8_t> pa(packed_rows_bytes(*k, M, K)), pb(packed_cols_bytes(*k, K, N));
    pack_rows(*k, w.data(), K, M, K, 0, pa.data());
    pack_cols(*k, x.data(), N, false, K, N, pb.data());
    std::vector<float> ones(M, 1.f), y(M * N);
    QEpilogue e;
    e.scale = ones.data();
    qgemm_packed(*k, true, M, N, K, pa.data(), pb.data(), e, y.data(), N, 1);
    for (float v : y) ASSERT_EQ(v, -128.f * 255.f * K) << qisa_name(k->isa);
  }
}

// 7-bit signed operands (kiln quantize --reduce-range): qkernels_for_signed picks the
// vpmaddubsw kernels on AVX2 without VNNI, which must stay exact at the range's extremes
// (255 x 64 x 2 = 32640 per byte pair, just under vpmaddubsw's int16 saturation) and on random
// operands, with the signed bytes on either side.
TEST(Int8Kernels, NarrowSignedKernelsAreExactWithinSevenBits) {
  std::vector<int8_t> narrow = {-64, 64, 0, 17}, wide = {-64, 65};
  const QKernels& k = qkernels_for_signed(narrow.data(), 4);
  EXPECT_EQ(&qkernels_for_signed(wide.data(), 2), &qkernels()) << "a byte outside [-64, 64]: the best kernels";
  EXPECT_EQ(k.narrow_signed, qkernels().isa == QIsa::Avx2) << "only AVX2 without VNNI needs them";
  const int64_t M = 13, N = 37, K = 70;
  std::mt19937 rng(3);
  for (int trial = 0; trial < 4; ++trial)
    for (bool rows_signed : {true, false}) {
      // trial 0: every u8 255 against s8 -64, trial 1: against +64; then random.
      std::vector<uint8_t> a(M * K), b(K * N);
      auto fill = [&](std::vector<uint8_t>& v, bool is_signed) {
        for (auto& x : v) {
          if (trial < 2) x = is_signed ? static_cast<uint8_t>(trial == 0 ? -64 : 64) : 255;
          else x = is_signed ? static_cast<uint8_t>(static_cast<int>(rng() % 129) - 64) : static_cast<uint8_t>(rng());
        }
      };
      fill(a, rows_signed);
      fill(b, !rows_signed);
      std::vector<uint8_t> pa(packed_rows_bytes(k, M, K)), pb(packed_cols_bytes(k, K, N));
      pack_rows(k, a.data(), K, M, K, 0, pa.data());
      pack_cols(k, b.data(), N, false, K, N, pb.data());
      std::vector<float> ones(std::max(M, N), 1.f), y(M * N);
      QEpilogue e;
      e.scale = ones.data();
      qgemm_packed(k, rows_signed, M, N, K, pa.data(), pb.data(), e, y.data(), N, 2);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          int32_t s = 0;
          for (int64_t q = 0; q < K; ++q) {
            const int32_t av = rows_signed ? static_cast<int8_t>(a[m * K + q]) : a[m * K + q];
            const int32_t bv = rows_signed ? b[q * N + n] : static_cast<int8_t>(b[q * N + n]);
            s += av * bv;
          }
          ASSERT_EQ(y[m * N + n], static_cast<float>(s)) << "trial " << trial << " rows_signed " << rows_signed;
        }
    }
}

struct EpilogueCase {
  bool per_row, bias, bias_f;
  QType residual;  // F32 with has_residual false = none
  bool has_residual;
  float lo, hi;
  QType out;
  // 0: small products; 1: past int16 (the 256-bit pair path's saturating packs); 2: past 2^31
  // (where the conversion overflows and the pair path must keep its upper clamp).
  int scales = 0;
};

// The epilogue of each ISA equals the scalar formula bit for bit on every combination.
TEST(Int8Kernels, EpilogueIsBitIdenticalToTheFormula) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<EpilogueCase> cases;
  for (bool per_row : {true, false})
    for (QType out : {QType::U8, QType::S8, QType::F32})
      for (int res = 0; res < 4; ++res)
        for (int clamp = 0; clamp < 3; ++clamp) {
          EpilogueCase c{per_row, res != 1, res >= 2, res == 0 ? QType::F32 : (res == 1 ? QType::U8 : (res == 2 ? QType::S8 : QType::F32)),
                         res != 3 || clamp == 0, clamp == 0 ? -inf : 0.f, clamp == 2 ? 6.f : inf, out};
          for (c.scales = 0; c.scales < 3; ++c.scales) cases.push_back(c);
        }
  const int64_t M = 13, N = 37;
  std::mt19937 rng(5);
  std::vector<int32_t> accs(M * N), bias(std::max(M, N));
  for (auto& v : accs) v = static_cast<int32_t>(rng() % 200001) - 100000;
  for (auto& v : bias) v = static_cast<int32_t>(rng() % 2001) - 1000;
  auto scale = random_floats(std::max(M, N), 3, 1e-4f, 2e-3f);
  // Up to |acc| * scale / 0.037 = 40000 steps (an int16 saturates), while int32 * scale / 0.037
  // stays under 2^30: the pair path may drop its upper clamp (pair_needs_upper_clamp).
  auto scale_big = random_floats(std::max(M, N), 6, 1e-2f, 1.45e-2f);
  auto scale_huge = random_floats(std::max(M, N), 7, 500.f, 1000.f);
  auto bias_f = random_floats(std::max(M, N), 4, -2.f, 2.f);
  auto res_b = random_bytes(M * N, 9);
  auto res_f = random_floats(M * N, 10, -3.f, 3.f);
  // Every ISA's epilogue, and the 7-bit AVX2 table's own (16 outputs at a time, per row).
  std::vector<const QKernels*> tables = all_qkernels();
  for (const QKernels* k : tables_for(true)) tables.push_back(k);
  for (const QKernels* k : tables)
    for (const EpilogueCase& c : cases) {
      QEpilogue e;
      e.per_row = c.per_row;
      e.bias = c.bias ? bias.data() : nullptr;
      e.scale = (c.scales == 0 ? scale : c.scales == 1 ? scale_big : scale_huge).data();
      e.bias_f = c.bias_f ? bias_f.data() : nullptr;
      if (c.has_residual) {
        e.residual_type = c.residual;
        e.residual = c.residual == QType::F32 ? static_cast<const void*>(res_f.data()) : res_b.data();
        e.ldr = N;
        e.residual_scale = 0.02f;
        e.residual_zp = c.residual == QType::U8 ? 121 : -3;
        e.res_lo = -30.f, e.res_hi = 25.f;  // a folded intermediate quantization's range
      }
      e.lo = c.lo;
      e.hi = c.hi;
      e.out = c.out;
      e.out_inv_scale = 1.f / 0.037f;
      e.out_zp = c.out == QType::U8 ? 100 : 5;
      const size_t osize = c.out == QType::F32 ? 4 : 1;
      std::vector<uint8_t> got(M * N * osize), want(M * N * osize);
      // Whole matrix as tiles of the ISA's shape, the accumulators laid out per tile.
      for (int64_t r0 = 0; r0 < M; r0 += k->mr)
        for (int64_t c0 = 0; c0 < N; c0 += k->nr) {
          std::vector<int32_t> tile(k->mr * k->nr, 0);
          int rows = static_cast<int>(std::min<int64_t>(k->mr, M - r0)), cols = static_cast<int>(std::min<int64_t>(k->nr, N - c0));
          for (int r = 0; r < rows; ++r)
            for (int j = 0; j < cols; ++j) tile[r * k->nr + j] = accs[(r0 + r) * N + c0 + j];
          k->epilogue(tile.data(), k->nr, rows, cols, e, r0, c0, got.data(), N);
        }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const void* rp = nullptr;
          if (e.residual) rp = static_cast<const char*>(e.residual) + (m * N + n) * (c.residual == QType::F32 ? 4 : 1);
          float v = epilogue_real(e, accs[m * N + n], c.per_row ? m : n, rp);
          store_output(e, v, want.data() + (m * N + n) * osize);
        }
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size()))
          << qisa_name(k->isa) << " per_row " << c.per_row << " out " << int(c.out) << " residual " << c.has_residual
          << "/" << int(c.residual) << " clamp " << c.lo << ".." << c.hi << " scales " << c.scales;
    }
}

TEST(Int8Kernels, QuantizeValueRoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(quantize_value(2.5f, 1.f, 0, QType::U8), 2);
  EXPECT_EQ(quantize_value(3.5f, 1.f, 0, QType::U8), 4);
  EXPECT_EQ(quantize_value(-2.5f, 1.f, 0, QType::S8), -2);
  EXPECT_EQ(quantize_value(1e12f, 1.f, 0, QType::U8), 255);
  EXPECT_EQ(quantize_value(-1e12f, 1.f, 3, QType::S8), -128);
  EXPECT_EQ(quantize_value(0.f, 10.f, 128, QType::U8), 128);
}

// Naive integer convolution of u8 (or s8) x with s8 w, zero point zx, real output f32 at scale 1.
std::vector<float> naive_conv(const Conv2dShape& s, const std::vector<uint8_t>& x, bool x_signed, int32_t zx,
                              const std::vector<int8_t>& w, const std::vector<int32_t>& bias) {
  const int64_t OH = s.out_h(), OW = s.out_w(), Cg = s.C / s.group, Mg = s.K / s.group;
  std::vector<float> y(s.N * s.K * OH * OW);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.K; ++m) {
      const int64_t g = m / Mg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int32_t acc = bias[m];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < s.R; ++kh)
              for (int64_t kw = 0; kw < s.S; ++kw) {
                int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dil_h, iw = ow * s.stride_w - s.pad_left + kw * s.dil_w;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;  // padding is real 0
                uint8_t raw = x[((n * s.C + g * Cg + c) * s.H + ih) * s.W + iw];
                int32_t xv = (x_signed ? static_cast<int8_t>(raw) : raw) - zx;
                acc += xv * w[((m * Cg + c) * s.R + kh) * s.S + kw];
              }
          y[((n * s.K + m) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
    }
  return y;
}

TEST(Int8Kernels, ConvMatchesNaiveIntegerConvolution) {
  auto shape = [](int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t st, int64_t pad,
                  int64_t dil, int64_t group) {
    Conv2dShape s;
    s.N = N, s.C = C, s.H = H, s.W = W, s.K = K, s.R = R, s.S = S;
    s.stride_h = s.stride_w = st;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    s.dil_h = s.dil_w = dil;
    s.group = group;
    return s;
  };
  std::vector<Conv2dShape> shapes = {
      shape(1, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1),   shape(2, 8, 7, 7, 16, 1, 1, 1, 0, 1, 1),
      shape(1, 16, 12, 10, 9, 3, 3, 2, 1, 1, 1), shape(1, 5, 13, 13, 7, 7, 7, 2, 3, 1, 1),
      shape(1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 8),    shape(1, 12, 10, 10, 6, 3, 3, 1, 2, 2, 3),
      shape(1, 6, 17, 19, 40, 1, 1, 2, 0, 1, 2), shape(1, 64, 5, 5, 33, 3, 3, 1, 1, 1, 1),
      shape(2, 4, 14, 15, 6, 3, 3, 2, 2, 2, 1),  shape(1, 5, 16, 13, 9, 5, 3, 3, 1, 1, 1),
      shape(1, 3, 9, 70, 5, 3, 3, 2, 1, 1, 1),   shape(1, 4, 6, 37, 6, 3, 3, 1, 1, 1, 1),  // 16-byte row copies
      shape(1, 64, 5, 5, 120, 3, 3, 1, 1, 1, 1),  // few panels, many rows: threads split the row tiles
      shape(1, 64, 40, 40, 8, 3, 3, 1, 1, 1, 1),  // more panels per thread than one chunk
      shape(2, 8, 6, 7, 5, 3, 3, 1, 1, 1, 1),     // channel quads read in place, two images
      shape(1, 16, 9, 9, 40, 3, 3, 1, 0, 1, 2),   // channel quads, two groups, unpadded
      shape(1, 8, 7, 11, 6, 3, 3, 1, 0, 1, 1),    // channel quads, only right padding (below)
      shape(1, 8, 7, 11, 6, 3, 5, 1, 0, 1, 1),    // channel quads, more padding left than right
      // Output pixels as rows (tables with tile_u8s8_pixels; the 3x3 shapes above take it there
      // too): 80 row tiles (two work items of 64), a ragged last tile, 16-channel blocks plus 4
      // more, a partial channel panel; a 1x1 on 7x7 maps, two images.
      shape(1, 20, 21, 19, 20, 3, 3, 1, 1, 1, 1), shape(2, 36, 7, 7, 33, 1, 1, 1, 0, 1, 1),
      // Enough work for two threads on both the image fill (split by pixels: 4 channel blocks
      // plus 12 channels) and the tiles (run-major: small weights).
      shape(1, 76, 60, 60, 64, 3, 3, 2, 1, 1, 1),
      // Depthwise (QKernels::depthwise_block where the table has it): partial channel blocks,
      // rows of 8-pixel groups plus a remainder, 7-pixel groups, strides 1-3, dilation, 5x5,
      // one input channel into 16, and bands of rows at two threads (40 output rows, enough work
      // for two threads), copied row by row (41 wide) and as one run of pixels (12 wide).
      shape(1, 20, 13, 17, 20, 3, 3, 1, 1, 1, 20), shape(2, 16, 14, 14, 16, 3, 3, 2, 1, 1, 16),
      shape(1, 9, 11, 12, 9, 5, 5, 2, 2, 1, 9),    shape(1, 8, 10, 10, 8, 3, 3, 1, 2, 2, 8),
      shape(1, 12, 9, 30, 12, 3, 3, 3, 1, 1, 12),  shape(1, 1, 8, 8, 16, 3, 3, 1, 1, 1, 1),
      shape(1, 24, 40, 41, 24, 3, 3, 1, 1, 1, 24),    shape(1, 24, 28, 28, 24, 3, 3, 1, 1, 1, 24),
      shape(1, 3, 5, 4, 3, 1, 1, 1, 0, 1, 3),      shape(1, 64, 40, 12, 64, 3, 3, 1, 1, 1, 64),
      // 1x1 stride 2 through phase planes with rows of 14, 16 and 9 bytes (the 9-16 byte copy).
      shape(1, 16, 28, 28, 24, 1, 1, 2, 0, 1, 1), shape(1, 8, 6, 31, 8, 1, 1, 2, 0, 1, 1),
      shape(1, 8, 5, 17, 8, 1, 1, 2, 0, 1, 1),
  };
  shapes[3].pad_bottom = 1;  // asymmetric padding
  shapes[18].pad_left = 2, shapes[18].pad_bottom = 0;
  shapes[23].pad_left = 0, shapes[23].pad_bottom = 2;  // depthwise 5x5, asymmetric padding
  // Quad rows share padding with the next row: reads past a row's end must land on padding.
  shapes[16].pad_right = 2, shapes[16].pad_bottom = 1;
  shapes[17].pad_left = 3, shapes[17].pad_right = 1, shapes[17].pad_top = 1;
  for (bool narrow : {false, true})
  for (const QKernels* k : tables_for(narrow))
    for (const Conv2dShape& s : shapes)
      for (bool x_signed : {false, true}) {
        const int64_t Kc = (s.C / s.group) * s.R * s.S;
        auto x = random_bytes(s.N * s.C * s.H * s.W, 21 + s.C);
        const std::vector<int8_t> w = random_weights(s.K * Kc, 22 + s.K, narrow);
        const int32_t zx = x_signed ? -7 : 131;
        std::vector<int32_t> bias(s.K), sums(s.K), comp(s.K);
        for (int64_t m = 0; m < s.K; ++m) bias[m] = static_cast<int32_t>(m * 37 % 101) - 50;
        row_sums_s8(w.data(), s.K, Kc, sums.data());
        // The kernel sees x ^ flip (u8) with zero point zx + 128 for s8; fold -zp * sum(w) into the bias.
        const int32_t zu = x_signed ? zx + 128 : zx;
        for (int64_t m = 0; m < s.K; ++m) comp[m] = bias[m] - zu * sums[m];
        std::vector<uint8_t> pw(qconv_packed_weight_bytes(*k, s));
        qconv_pack_weight(*k, s, w.data(), pw.data());
        std::vector<uint8_t> ws(qconv_workspace_bytes(*k, s, 2));
        std::vector<float> ones(s.K, 1.f), y(s.N * s.K * s.out_h() * s.out_w(), -1.f);
        QEpilogue e;
        e.bias = comp.data();
        e.scale = ones.data();
        qconv2d(*k, s, x.data(), x_signed ? 0x80 : 0, static_cast<uint8_t>(zu), pw.data(), e, y.data(), ws.data(), 2);
        auto want = naive_conv(s, x, x_signed, zx, w, bias);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(y[i], want[i]) << qisa_name(k->isa) << (narrow ? " narrow" : "") << " C" << s.C << " K" << s.K << " R" << s.R << " stride "
                                   << s.stride_h << " group " << s.group << " signed " << x_signed << " at " << i;
      }
}

// Per-channel requantization with a u8 residual through the convolution entry point.
TEST(Int8Kernels, ConvRequantizesWithResidualPerChannel) {
  Conv2dShape s;
  s.N = 1, s.C = 16, s.H = 6, s.W = 6, s.K = 20, s.R = 3, s.S = 3, s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  const int64_t Kc = s.C * 9, P = 36;
  auto x = random_bytes(s.C * 36, 1);
  auto wb = random_bytes(s.K * Kc, 2);
  std::vector<int8_t> w(wb.begin(), wb.end());
  auto scale = random_floats(s.K, 3, 1e-4f, 1e-3f);
  std::vector<int32_t> sums(s.K), comp(s.K);
  row_sums_s8(w.data(), s.K, Kc, sums.data());
  for (int64_t m = 0; m < s.K; ++m) comp[m] = -128 * sums[m];
  auto res = random_bytes(s.K * P, 4);
  QEpilogue e;
  e.bias = comp.data();
  e.scale = scale.data();
  e.residual = res.data();
  e.residual_type = QType::U8;
  e.ldr = P;
  e.residual_scale = 0.05f;
  e.residual_zp = 128;
  e.lo = 0.f;
  e.out = QType::U8;
  e.out_inv_scale = 1 / 0.06f;
  e.out_zp = 0;
  std::vector<uint8_t> ref;
  for (const QKernels* k : all_qkernels()) {
    std::vector<uint8_t> pw(qconv_packed_weight_bytes(*k, s)), ws(qconv_workspace_bytes(*k, s, 2)), y(s.K * P);
    qconv_pack_weight(*k, s, w.data(), pw.data());
    qconv2d(*k, s, x.data(), 0, 128, pw.data(), e, y.data(), ws.data(), 2);
    if (ref.empty()) {
      // Scalar first: check it against the formula on naive accumulators, then the others against it.
      std::vector<int32_t> zero(s.K, 0);
      auto acc = naive_conv(s, x, false, 128, w, zero);
      QEpilogue en = e;
      en.bias = nullptr;
      for (int64_t i = 0; i < s.K * P; ++i) {
        float v = epilogue_real(en, static_cast<int32_t>(acc[i]), i / P, res.data() + i);
        ASSERT_EQ(y[i], quantize_value(v, e.out_inv_scale, 0, QType::U8)) << i;
      }
      ref = y;
    } else {
      ASSERT_EQ(y, ref) << qisa_name(k->isa);
    }
  }
}

// The epilogue the every-type tests run: output type `out`, residual `res` (0 none, 1 u8, 2 s8,
// 3 f32; planes P apart), with or without the f32 bias, clamped to [lo, 6].
QEpilogue every_type_epilogue(QType out, int res, bool with_bias_f, const std::vector<int32_t>& comp,
                              const std::vector<float>& scale, const std::vector<float>& bias_f,
                              const std::vector<uint8_t>& res_b, const std::vector<float>& res_f, int64_t P, float lo) {
  QEpilogue e;
  e.bias = comp.data();
  e.scale = scale.data();
  e.bias_f = with_bias_f ? bias_f.data() : nullptr;
  if (res > 0) {
    e.residual_type = res == 1 ? QType::U8 : res == 2 ? QType::S8 : QType::F32;
    e.residual = res == 3 ? static_cast<const void*>(res_f.data()) : res_b.data();
    e.ldr = P;
    e.residual_scale = 0.05f;
    e.residual_zp = res == 1 ? 128 : -2;
    e.res_lo = -4.f, e.res_hi = 5.f;
  }
  e.lo = lo, e.hi = 6.f;
  e.out = out;
  e.out_inv_scale = 1 / 0.03f;
  e.out_zp = out == QType::U8 ? 10 : -3;
  return e;
}

// Every output and residual type (with and without an f32 bias, clamped), through convolutions
// whose tiles take the fused tile + epilogue (1x1, and 1x1 stride 2 whose phase grid is the
// output: packed panels) and ones that do not (3x3 padded: the wider grid; channel quads read in
// place, or packed panels when the channels are not in quads), with ragged row tiles and
// columns: the bytes equal epilogue_real + store_output on naive accumulators, on every table.
TEST(Int8Kernels, ConvEpilogueMatchesTheFormulaForEveryType) {
  auto shape = [](int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t st, int64_t pad) {
    Conv2dShape s;
    s.N = 1, s.C = C, s.H = H, s.W = W, s.K = K, s.R = s.S = R;
    s.stride_h = s.stride_w = st;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    return s;
  };
  const Conv2dShape shapes[] = {shape(24, 7, 9, 20, 1, 1, 0), shape(12, 10, 14, 11, 1, 2, 0), shape(8, 6, 5, 9, 3, 1, 1),
                                shape(8, 9, 9, 12, 3, 2, 1), shape(8, 9, 8, 12, 5, 1, 0),
                                // grid rows (22 wide, 20 kept) holding whole vectors and split ones
                                shape(8, 5, 20, 9, 3, 1, 1),
                                // channels not in quads: the packed im2col path
                                shape(5, 6, 5, 9, 3, 1, 1)};
  for (bool narrow : {false, true})
  for (const Conv2dShape& s : shapes) {
    const int64_t Kc = s.C * s.R * s.S, P = s.out_h() * s.out_w();
    auto x = random_bytes(s.C * s.H * s.W, 31);
    const std::vector<int8_t> w = random_weights(s.K * Kc, 32, narrow);
    std::vector<int32_t> sums(s.K), comp(s.K), zero(s.K, 0);
    row_sums_s8(w.data(), s.K, Kc, sums.data());
    for (int64_t m = 0; m < s.K; ++m) comp[m] = static_cast<int32_t>(m % 7) * 50 - 128 * sums[m];
    const auto acc = naive_conv(s, x, false, 128, w, zero);
    auto scale = random_floats(s.K, 33, 1e-4f, 1e-3f), bias_f = random_floats(s.K, 34, -1.f, 1.f);
    auto res_b = random_bytes(s.K * P, 35);
    auto res_f = random_floats(s.K * P, 36, -2.f, 2.f);
    for (QType out : {QType::U8, QType::S8, QType::F32})
      for (int res = 0; res < 4; ++res)
        for (bool with_bias_f : {false, true}) {
          const QEpilogue e = every_type_epilogue(out, res, with_bias_f, comp, scale, bias_f, res_b, res_f, P, 0.f);
          const size_t osize = out == QType::F32 ? 4 : 1;
          std::vector<uint8_t> want(s.K * P * osize);
          for (int64_t i = 0; i < s.K * P; ++i) {
            const int64_t m = i / P;
            const void* rp = res == 0 ? nullptr : static_cast<const char*>(e.residual) + i * (res == 3 ? 4 : 1);
            // The kernel's accumulator: sum x * w, i.e. the naive one (x - 128) * w plus 128 * sum w.
            const int32_t a = static_cast<int32_t>(acc[i]) + 128 * sums[m];
            store_output(e, epilogue_real(e, a, m, rp), want.data() + i * osize);
          }
          for (const QKernels* k : tables_for(narrow)) {
            std::vector<uint8_t> pw(qconv_packed_weight_bytes(*k, s)), ws(qconv_workspace_bytes(*k, s, 2));
            std::vector<uint8_t> y(want.size(), 0xAB);
            qconv_pack_weight(*k, s, w.data(), pw.data());
            qconv2d(*k, s, x.data(), 0, 128, pw.data(), e, y.data(), ws.data(), 2);
            ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size()))
                << qisa_name(k->isa) << (narrow ? " narrow" : "") << " R" << s.R << " stride " << s.stride_h << " out " << int(out) << " residual "
                << res << " bias_f " << with_bias_f;
          }
        }
  }
}

// The byte-table lookup (AVX2 shuffles where the CPU has them) equals the plain loop for every
// byte value, on lengths around the 32-byte vectors, from unaligned starts.
TEST(Int8Kernels, LookupBytesMatchesThePlainLoop) {
  const std::vector<uint8_t> table = random_bytes(256, 51);
  for (int64_t n : {0, 1, 31, 32, 33, 255, 256, 1000}) {
    std::vector<uint8_t> x(static_cast<size_t>(n + 1)), y(static_cast<size_t>(n + 1), 0xAB);
    for (int64_t i = 0; i <= n; ++i) x[i] = static_cast<uint8_t>((i * 37 + 11) & 0xFF);  // every byte within 256
    lookup_bytes(x.data() + 1, table.data(), y.data() + 1, n);
    EXPECT_EQ(y[0], 0xAB) << "wrote before the start";
    for (int64_t i = 1; i <= n; ++i) ASSERT_EQ(y[i], table[x[i]]) << "n " << n << " at " << i;
  }
}

// The tactic names profiles show are the paths qconv2d takes.
TEST(Int8Kernels, TacticNamesAreThePathsTaken) {
  Conv2dShape pw;
  pw.N = 1, pw.C = 16, pw.H = pw.W = 8, pw.K = 32;
  Conv2dShape dw = pw;
  dw.K = dw.group = 16, dw.R = dw.S = 3, dw.pad_top = dw.pad_left = dw.pad_bottom = dw.pad_right = 1;
  Conv2dShape full = dw;
  full.K = 32, full.group = 1;
  // A 1x1 convolution on a 7x7 map: 49 outputs in 56 columns, or 50 pixel rows with mr = 5 or 8
  // (pixels), 54 with mr = 6 (AVX-VNNI: not 8 % fewer than 56, so planes).
  Conv2dShape small = pw;
  small.H = small.W = 7, small.C = 32;
  // The same with fewer input than output channels, and a 3x3 on a 56x56 map: the 32-column
  // tile (AVX-512) keeps both on the column-major paths.
  Conv2dShape widening = small;
  widening.C = 16;
  Conv2dShape large = full;
  large.H = large.W = 56;
  // 4 output channels per group: 16 columns of them in the pixels path's panels.
  Conv2dShape grouped = full;
  grouped.K = 16, grouped.group = 4;
  std::vector<const QKernels*> tables = all_qkernels();
  for (const QKernels* k : tables_for(true)) tables.push_back(k);
  for (const QKernels* k : tables) {
    const bool pixels = k->tile_u8s8_pixels != nullptr;
    EXPECT_STREQ(qconv_tactic_name(*k, pw, false), "planes");
    EXPECT_STREQ(qconv_tactic_name(*k, pw, true), "im2col");  // s8 inputs are flipped into a copy
    EXPECT_STREQ(qconv_tactic_name(*k, dw, false), k->depthwise_block ? "depthwise" : "im2col");
    EXPECT_STREQ(qconv_tactic_name(*k, full, false), pixels ? "pixels" : k->tile_s8u8_gather ? "quads" : "im2col");
    EXPECT_STREQ(qconv_tactic_name(*k, small, false), pixels && k->mr != 6 ? "pixels" : "planes") << qisa_name(k->isa);
    EXPECT_STREQ(qconv_tactic_name(*k, grouped, false), k->tile_s8u8_gather ? "quads" : "im2col");
    if (k->nr > 16) {
      EXPECT_STREQ(qconv_tactic_name(*k, widening, false), "planes");
      EXPECT_STREQ(qconv_tactic_name(*k, large, false), "quads");
    }
  }
  // The 256-bit VNNI-style tables have the pixels tile (AVX2's 7-bit one on every AVX2 CPU).
  for (const QKernels* k : tables_for(true)) EXPECT_NE(k->tile_u8s8_pixels, nullptr);
}

// Depthwise convolutions through the channel-blocked kernel (on every table that has it: the
// test fails where an AVX2 CPU's tables lack it) give the formula's bytes for every output and
// residual type, with and without an f32 bias, on ragged channel blocks and row ends, and equal
// the grouped GEMM's (the same table without the kernel) bit for bit.
TEST(Int8Kernels, DepthwiseEpilogueMatchesTheFormulaForEveryType) {
  auto shape = [](int64_t C, int64_t H, int64_t W, int64_t R, int64_t st, int64_t pad, bool one_input) {
    Conv2dShape s;
    s.N = 2, s.C = one_input ? 1 : C, s.H = H, s.W = W, s.K = C, s.R = s.S = R;
    s.stride_h = s.stride_w = st;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    s.group = one_input ? 1 : C;
    return s;
  };
  const Conv2dShape shapes[] = {shape(13, 9, 19, 3, 1, 1, false), shape(16, 11, 14, 3, 2, 1, false),
                                shape(9, 8, 12, 5, 1, 2, false), shape(10, 6, 9, 3, 1, 1, true)};
  for (bool narrow : {false, true})
    for (const Conv2dShape& s : shapes) {
      const int64_t RS = s.R * s.S, P = s.out_h() * s.out_w(), total = s.N * s.K * P;
      auto x = random_bytes(s.N * s.C * s.H * s.W, 41);
      const std::vector<int8_t> w = random_weights(s.K * RS, 42, narrow);
      std::vector<int32_t> sums(s.K), comp(s.K), zero(s.K, 0);
      row_sums_s8(w.data(), s.K, RS, sums.data());
      for (int64_t m = 0; m < s.K; ++m) comp[m] = static_cast<int32_t>(m % 5) * 40 - 128 * sums[m];
      const auto acc = naive_conv(s, x, false, 128, w, zero);
      auto scale = random_floats(s.K, 43, 1e-4f, 1e-3f), bias_f = random_floats(s.K, 44, -1.f, 1.f);
      auto res_b = random_bytes(total, 45);
      auto res_f = random_floats(total, 46, -2.f, 2.f);
      for (QType out : {QType::U8, QType::S8, QType::F32})
        for (int res = 0; res < 4; ++res)
          for (bool with_bias_f : {false, true}) {
            const QEpilogue e = every_type_epilogue(out, res, with_bias_f, comp, scale, bias_f, res_b, res_f, P, -1.f);
            const size_t osize = out == QType::F32 ? 4 : 1;
            std::vector<uint8_t> want(total * osize);
            for (int64_t i = 0; i < total; ++i) {
              const int64_t m = i / P % s.K;
              const void* rp = res == 0 ? nullptr : static_cast<const char*>(e.residual) + i * (res == 3 ? 4 : 1);
              const int32_t a = static_cast<int32_t>(acc[i]) + 128 * sums[m];
              store_output(e, epilogue_real(e, a, m, rp), want.data() + i * osize);
            }
            for (const QKernels* k : tables_for(narrow)) {
              if (k->isa != QIsa::Scalar && __builtin_cpu_supports("avx2")) {
                ASSERT_TRUE(qconv_is_depthwise(*k, s));
              }
              QKernels gemm_only = *k;
              gemm_only.depthwise_block = nullptr;
              for (const QKernels* run : {k, static_cast<const QKernels*>(&gemm_only)}) {
                std::vector<uint8_t> pw(qconv_packed_weight_bytes(*run, s)), ws(qconv_workspace_bytes(*run, s, 2));
                std::vector<uint8_t> y(want.size(), 0xAB);
                qconv_pack_weight(*run, s, w.data(), pw.data());
                qconv2d(*run, s, x.data(), 0, 128, pw.data(), e, y.data(), ws.data(), 2);
                ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size()))
                    << qisa_name(k->isa) << (narrow ? " narrow" : "") << (run == k ? "" : " gemm") << " C" << s.C << " K"
                    << s.K << " R" << s.R << " stride " << s.stride_h << " out " << int(out) << " residual " << res
                    << " bias_f " << with_bias_f;
              }
            }
          }
    }
}

}  // namespace
}  // namespace kiln::kernels::int8

namespace kiln::kernels::int8 {
namespace {

TEST(Int8Kernels, MaxPoolMatchesNaiveWindowsWithPaddingIgnored) {
  struct Case {
    int64_t H, W, kh, kw, s, pad;
  };
  // Rows of 16-32 starts take the overlapping last vector; stride 2 picks 16 outputs at a time.
  for (Case c : {Case{112, 112, 3, 3, 2, 1}, Case{7, 9, 2, 2, 2, 0}, Case{10, 11, 3, 2, 1, 1}, Case{5, 5, 5, 5, 1, 2},
                 Case{40, 37, 3, 3, 2, 1}, Case{9, 20, 3, 3, 1, 1}, Case{6, 70, 2, 2, 2, 0},
                 Case{21, 40, 18, 17, 1, 2},  // windows over 16 taps: more than one pass per direction
                 // 3x3 stride 2 pad 1 (the even/odd split): a 16-wide row (one vector), odd heights
                 // and widths (the last window past the edge), 15 wide (the generic passes)
                 Case{17, 16, 3, 3, 2, 1}, Case{9, 33, 3, 3, 2, 1}, Case{8, 15, 3, 3, 2, 1}})
    for (bool is_signed : {false, true}) {
      Pool2d p;
      p.planes = 3, p.H = c.H, p.W = c.W, p.kh = c.kh, p.kw = c.kw, p.stride_h = p.stride_w = c.s;
      p.pad_top = p.pad_left = c.pad;
      p.OH = (c.H + 2 * c.pad - c.kh) / c.s + 1, p.OW = (c.W + 2 * c.pad - c.kw) / c.s + 1;
      auto x = random_bytes(p.planes * c.H * c.W, 40 + c.H);
      std::vector<uint8_t> y(p.planes * p.OH * p.OW), ws(max_pool_workspace_bytes(p, 2));
      max_pool_2d(p, is_signed, x.data(), y.data(), ws.data(), 2);
      for (int64_t q = 0; q < p.planes; ++q)
        for (int64_t oh = 0; oh < p.OH; ++oh)
          for (int64_t ow = 0; ow < p.OW; ++ow) {
            int best = -1000;
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t ih = oh * c.s - c.pad + i, iw = ow * c.s - c.pad + j;
                if (ih < 0 || iw < 0 || ih >= c.H || iw >= c.W) continue;
                uint8_t raw = x[(q * c.H + ih) * c.W + iw];
                best = std::max(best, is_signed ? static_cast<int>(static_cast<int8_t>(raw)) : static_cast<int>(raw));
              }
            uint8_t got = y[(q * p.OH + oh) * p.OW + ow];
            ASSERT_EQ(is_signed ? static_cast<int>(static_cast<int8_t>(got)) : static_cast<int>(got), best)
                << "H" << c.H << " k" << c.kh << " s" << c.s << " signed " << is_signed;
          }
    }
}

}  // namespace
}  // namespace kiln::kernels::int8

namespace kiln::kernels::int8 {
namespace {

// [C][HW] planes -> [HW][C] pixel rows of `elem`-byte elements (and back with the roles swapped).
std::vector<uint8_t> planes_to_pixels(const std::vector<uint8_t>& v, int64_t C, int64_t HW, size_t elem) {
  std::vector<uint8_t> out(v.size());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < HW; ++p) std::memcpy(&out[(p * C + c) * elem], &v[(c * HW + p) * elem], elem);
  return out;
}

// Each of N images' [C][HW] planes -> [HW][C] pixel rows.
std::vector<uint8_t> images_to_pixels(const std::vector<uint8_t>& v, int64_t N, int64_t C, int64_t HW, size_t elem) {
  std::vector<uint8_t> out;
  const size_t image = static_cast<size_t>(C * HW) * elem;
  for (int64_t n = 0; n < N; ++n) {
    const auto t = planes_to_pixels(std::vector<uint8_t>(v.begin() + n * image, v.begin() + (n + 1) * image), C, HW, elem);
    out.insert(out.end(), t.begin(), t.end());
  }
  return out;
}
std::vector<float> images_to_pixels(const std::vector<float>& v, int64_t N, int64_t C, int64_t HW) {
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  const auto t = images_to_pixels(bytes, N, C, HW, 4);
  std::vector<float> out(v.size());
  std::memcpy(out.data(), t.data(), t.size());
  return out;
}

// One convolution's random operands in both layouts: weights (row sums folded into the int32
// bias with a -100 zero point), per-channel scales and f32 biases, input, u8 and f32 residuals,
// and the pixel-major copies of the input and residuals.
struct PixelMajorCase {
  std::vector<int8_t> w;
  std::vector<int32_t> comp;
  std::vector<float> scale, bias_f, res_f, res_f_t;
  std::vector<uint8_t> x, res_b, x_t, res_b_t;
  PixelMajorCase(const Conv2dShape& s, unsigned seed, float scale_lo, float scale_hi) {
    const int64_t Kc = s.C / s.group * s.R * s.S, P = s.out_h() * s.out_w(), HW = s.H * s.W;
    w = random_weights(s.K * Kc, seed, false);
    std::vector<int32_t> sums(s.K);
    comp.resize(s.K);
    row_sums_s8(w.data(), s.K, Kc, sums.data());
    for (int64_t m = 0; m < s.K; ++m) comp[m] = static_cast<int32_t>(m % 5) * 40 - 100 * sums[m];
    scale = random_floats(s.K, seed + 1, scale_lo, scale_hi), bias_f = random_floats(s.K, seed + 2, -1.f, 1.f);
    x = random_bytes(s.N * s.C * HW, seed + 3);
    res_b = random_bytes(s.N * s.K * P, seed + 4);
    res_f = random_floats(s.N * s.K * P, seed + 5, -2.f, 2.f);
    x_t = images_to_pixels(x, s.N, s.C, HW, 1), res_b_t = images_to_pixels(res_b, s.N, s.K, P, 1);
    res_f_t = images_to_pixels(res_f, s.N, s.K, P);
  }
};

// Every input flip, output and residual type, with and without the f32 bias, on `base` (NCHW):
// the epilogue e, the same with its residual pixel-major (es), and the NCHW run's bytes (want)
// and their pixel-major copy (want_t), for check(flip, what, e, es, want, want_t).
template <class Check>
void for_every_epilogue(const QKernels& k, const Conv2dShape& base, const PixelMajorCase& c,
                        const std::vector<uint8_t>& pw, uint8_t pad, const Check& check) {
  const int64_t P = base.out_h() * base.out_w();
  for (uint8_t flip : {0, 0x80})
    for (QType out : {QType::U8, QType::S8, QType::F32})
      for (int res = 0; res < 4; ++res)
        for (bool with_bias_f : {false, true}) {
          const QEpilogue e =
              every_type_epilogue(out, res, with_bias_f, c.comp, c.scale, c.bias_f, c.res_b, c.res_f, P, -1.f);
          const size_t osize = out == QType::F32 ? 4 : 1;
          std::vector<uint8_t> ws(qconv_workspace_bytes(k, base, 2)), want(base.N * base.K * P * osize);
          qconv2d(k, base, c.x.data(), flip, pad, pw.data(), e, want.data(), ws.data(), 2);
          QEpilogue es = e;
          if (res > 0) es.residual = res == 3 ? static_cast<const void*>(c.res_f_t.data()) : c.res_b_t.data();
          const std::string what = std::string(qisa_name(k.isa)) + " C" + std::to_string(base.C) + " K" +
                                   std::to_string(base.K) + " R" + std::to_string(base.R) + " stride " +
                                   std::to_string(base.stride_h) + " flip " + std::to_string(flip) + " out " +
                                   std::to_string(static_cast<int>(out)) + " residual " + std::to_string(res) +
                                   " bias_f " + std::to_string(with_bias_f);
          check(flip, what, e, es, want, images_to_pixels(want, base.N, base.K, P, osize));
        }
}

// Pixel-major activations (Conv2dShape::x_nhwc / y_nhwc: the pixels path's fused epilogue on
// the tables that have it, the NCHW paths between transposes on every other table and for
// grouped convolutions): every combination of input and output layout, u8 and flipped s8
// inputs, every output and residual type with and without the f32 bias, over 1x1 (read in place),
// strided, padded, dilated and grouped windows with ragged pixel tiles and channel panels, on two
// images (the 1x1s as one tall image, but a stride-2 one over odd rows) and two threads, gives the
// NCHW run's bytes (transposed), which
// ConvEpilogueMatchesTheFormulaForEveryType checks against the formula.
TEST(Int8Kernels, PixelMajorActivationsEqualTheNchwRunBitForBit) {
  auto shape = [](int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t st, int64_t pad, int64_t dil) {
    Conv2dShape s;
    s.N = 2, s.C = C, s.H = H, s.W = W, s.K = K, s.R = s.S = R;
    s.stride_h = s.stride_w = st;
    s.dil_h = s.dil_w = dil;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    return s;
  };
  const Conv2dShape shapes[] = {shape(24, 7, 9, 20, 1, 1, 0, 1), shape(12, 10, 14, 40, 1, 2, 0, 1),
                                shape(8, 6, 5, 33, 3, 1, 1, 1), shape(16, 9, 9, 64, 3, 2, 1, 1),
                                shape(8, 9, 8, 12, 3, 1, 2, 2), shape(16, 7, 7, 24, 3, 1, 1, 1),
                                shape(12, 9, 6, 40, 1, 2, 0, 1)};  // odd rows: the batch stays two images
  int tested = 0, native = 0;
  for (const QKernels* k : all_qkernels())
    for (Conv2dShape base : shapes) {
      if (base.K == 24) base.group = 2;  // grouped: always between transposes
      const PixelMajorCase c(base, 41, 1e-4f, 1e-3f);
      std::vector<uint8_t> pw(qconv_packed_weight_bytes(*k, base));
      qconv_pack_weight(*k, base, c.w.data(), pw.data());
      for_every_epilogue(*k, base, c, pw, 7, [&](uint8_t flip, const std::string& what, const QEpilogue& e,
                                                 const QEpilogue& es, const std::vector<uint8_t>& want,
                                                 const std::vector<uint8_t>& want_t) {
        for (int layout = 1; layout < 4; ++layout) {
          Conv2dShape s = base;
          s.x_nhwc = (layout & 1) != 0, s.y_nhwc = (layout & 2) != 0;
          const bool own = qconv_nhwc_supported(*k, s);
          native += own;
          ASSERT_STREQ(qconv_tactic_name(*k, s, flip != 0), own ? "nhwc" : "nhwc-transposed");
          std::vector<uint8_t> pw2(qconv_packed_weight_bytes(*k, s));  // the pixels path's layout
          qconv_pack_weight(*k, s, c.w.data(), pw2.data());
          std::vector<uint8_t> ws2(qconv_workspace_bytes(*k, s, 2)), y(want.size(), 0xAB);
          qconv2d(*k, s, s.x_nhwc ? c.x_t.data() : c.x.data(), flip, 7, pw2.data(), s.y_nhwc ? es : e, y.data(),
                  ws2.data(), 2);
          ASSERT_EQ(0, std::memcmp(y.data(), (s.y_nhwc ? want_t : want).data(), y.size()))
              << what << " x_nhwc " << s.x_nhwc << " y_nhwc " << s.y_nhwc;
        }
        ++tested;
      });
    }
  EXPECT_EQ(tested, static_cast<int>(all_qkernels().size()) * 7 * 48);  // 2 flips x 3 outputs x 4 residuals x 2
  // Every AVX-512 VNNI table has the fused pixels epilogue.
  if (qkernels_for(QIsa::Avx512Vnni)) {
    EXPECT_GT(native, 0);
  }
  Conv2dShape grouped = shape(8, 6, 6, 8, 3, 1, 1, 1);
  grouped.group = 2;
  for (const QKernels* k : all_qkernels()) EXPECT_FALSE(qconv_nhwc_supported(*k, grouped));
}

}  // namespace
}  // namespace kiln::kernels::int8

namespace kiln::kernels::int8 {
namespace {

// The pixel-major depthwise kernel (QKernels::depthwise_nhwc, AVX-512) gives the NCHW
// channel-blocked kernel's bytes, transposed, for every output and residual type (with and
// without the f32 bias), u8 and flipped s8 inputs, 3x3 and 5x5 windows at strides 1 and 2,
// dilation, ragged 16-channel blocks (40 channels) and rows (9 and 14 wide), two images, two
// threads. The NCHW kernel is checked against the formula by DepthwiseEpilogueMatchesTheFormulaForEveryType.
TEST(Int8Kernels, PixelMajorDepthwiseEqualsTheNchwKernelBitForBit) {
  auto shape = [](int64_t C, int64_t H, int64_t W, int64_t R, int64_t st, int64_t pad, int64_t dil) {
    Conv2dShape s;
    s.N = 2, s.C = s.K = s.group = C, s.H = H, s.W = W, s.R = s.S = R;
    s.stride_h = s.stride_w = st;
    s.dil_h = s.dil_w = dil;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    return s;
  };
  const Conv2dShape shapes[] = {shape(40, 9, 9, 3, 1, 1, 1), shape(32, 14, 14, 3, 2, 1, 1), shape(16, 11, 14, 5, 1, 2, 1),
                                shape(48, 13, 13, 5, 2, 2, 1), shape(24, 12, 9, 3, 1, 2, 2)};
  int tested = 0;
  for (const QKernels* k : all_qkernels())
    for (const Conv2dShape& base : shapes) {
      Conv2dShape s = base;
      s.x_nhwc = s.y_nhwc = true;
      // Tables without depthwise_nhwc run the NCHW kernel between transposes.
      ASSERT_STREQ(qconv_tactic_name(*k, s, false), qconv_nhwc_supported(*k, s) ? "nhwc" : "nhwc-transposed");
      const PixelMajorCase c(base, 51, 1e-3f, 1e-2f);
      std::vector<uint8_t> pw(qconv_packed_weight_bytes(*k, base)), pw16(qconv_packed_weight_bytes(*k, s));
      qconv_pack_weight(*k, base, c.w.data(), pw.data());
      qconv_pack_weight(*k, s, c.w.data(), pw16.data());  // blocks of 16 channels
      for_every_epilogue(*k, base, c, pw, 9, [&](uint8_t flip, const std::string& what, const QEpilogue&,
                                                 const QEpilogue& es, const std::vector<uint8_t>& want,
                                                 const std::vector<uint8_t>& want_t) {
        for (int threads : {1, 2}) {
          std::vector<uint8_t> ws2(qconv_workspace_bytes(*k, s, threads)), y(want.size(), 0xAB);
          qconv2d(*k, s, c.x_t.data(), flip, 9, pw16.data(), es, y.data(), ws2.data(), threads);
          ASSERT_EQ(0, std::memcmp(y.data(), want_t.data(), y.size()))
              << what << " dil " << s.dil_h << " threads " << threads;
        }
        ++tested;
      });
    }
  if (qkernels_for(QIsa::Avx512Vnni)) {
    EXPECT_GT(tested, 0);
  }
}

}  // namespace
}  // namespace kiln::kernels::int8

// kernels::expand_depthwise (src/kernels/conv_expand_depthwise.cpp): an expanding 1x1 and the
// depthwise convolution after it, band by band, against the two convolutions one after the other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/depthwise_parts.h"
#include "kernels/depthwise_wide.h"
#include "kernels/expand_kept_rows.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels {
namespace {

using test::random_vec;

struct Pair {
  Conv2dShape e, d;
};

// x [N, C, H, W] (blocked as `x_block` says, 0: planar) -> 1x1 -> E channels -> R x R depthwise at `stride`.
Pair pair(int64_t N, int64_t C, int64_t H, int64_t W, int64_t E, int64_t R, int64_t stride, int64_t x_block) {
  Pair p;
  p.e.N = N, p.e.C = C, p.e.H = H, p.e.W = W, p.e.K = E;
  p.e.x_blocked = x_block > 0, p.e.x_block = x_block > 0 ? x_block : kConvBlock;
  p.e.y_blocked = true;
  p.d.N = N, p.d.C = p.d.K = p.d.group = E, p.d.H = H, p.d.W = W, p.d.R = p.d.S = R;
  p.d.stride_h = p.d.stride_w = stride;
  p.d.pad_top = p.d.pad_left = p.d.pad_bottom = p.d.pad_right = R / 2;
  p.d.x_blocked = p.d.y_blocked = true;
  return p;
}

// Both ways from the same inputs: the fused call's output must be the two calls' exactly.
// (Bands or the two calls over the workspace as expand_bands_pay says: the caller pins it.)
// means: the depthwise output averaged too (a folded squeeze-excitation mean), which keeps the
// even bands; without, one image runs on the threads' shares, skewed: the pool first learns a
// worker three times slower on this pair (test::skew_shares), so the cut is far from even.
void check(const Pair& p, int threads, bool workspace, bool means = true) {
  SCOPED_TRACE(std::to_string(p.e.C) + " -> " + std::to_string(p.e.K) + " at " + std::to_string(p.e.H) + "x" +
               std::to_string(p.e.W) + ", " + std::to_string(p.d.R) + "x" + std::to_string(p.d.R) + "/" +
               std::to_string(p.d.stride_h) + ", N " + std::to_string(p.e.N) + ", threads " + std::to_string(threads) +
               (workspace ? ", workspace" : "") + (means ? "" : ", skewed shares"));
  ASSERT_EQ(expand_depthwise_unsupported(p.e, p.d), "");
  const std::vector<float> x = random_vec(p.e.N * p.e.C * p.e.H * p.e.W, 31);
  const std::vector<float> w1 = random_vec(p.e.K * p.e.C, 32, -0.5f, 0.5f), b1 = random_vec(p.e.K, 33);
  const std::vector<float> w2 = random_vec(p.d.K * p.d.R * p.d.S, 34, -0.5f, 0.5f), b2 = random_vec(p.d.K, 35);
  std::vector<float> pw1(conv_packed_weight_floats(ConvTactic::Direct, p.e));
  std::vector<float> pw2(conv_packed_weight_floats(ConvTactic::Depthwise, p.d));
  conv_pack_weight(ConvTactic::Direct, p.e, w1.data(), pw1.data());
  conv_pack_weight(ConvTactic::Depthwise, p.d, w2.data(), pw2.data());
  if (!means) test::skew_shares(pw1.data());
  Epilogue e1, e2;
  e1.bias = b1.data(), e1.bias_per_row = true, e1.act = Act::Clip, e1.act_alpha = 0.f, e1.act_beta = 6.f;
  e2.bias = b2.data(), e2.bias_per_row = true, e2.act = Act::Relu;
  const size_t out = static_cast<size_t>(p.d.N * p.d.K * p.d.out_h() * p.d.out_w());
  // The depthwise output averaged too (a folded squeeze-excitation mean): as the kernel sums it.
  std::vector<float> means_apart(p.d.N * p.d.K), means_together(p.d.N * p.d.K, -1.f);
  // Apart.
  std::vector<float> mid(p.e.N * p.e.K * p.e.H * p.e.W), apart(out);
  std::vector<float> ws(std::max(conv_workspace_floats(ConvTactic::Direct, p.e, threads),
                                 conv_workspace_floats(ConvTactic::Depthwise, p.d, threads)) + 16);
  conv2d(ConvTactic::Direct, p.e, x.data(), pw1.data(), mid.data(), e1, ws.data(), threads);
  Epilogue m2 = e2;
  if (means) m2.channel_means = means_apart.data();
  conv2d(ConvTactic::Depthwise, p.d, mid.data(), pw2.data(), apart.data(), m2, ws.data(), threads);
  // Together, over an output holding garbage.
  std::vector<float> together(out, -123.f);
  std::vector<float> fused_ws(workspace ? expand_depthwise_workspace_floats(p.e, p.d, threads) : 0);
  if (means) m2.channel_means = means_together.data();
  expand_depthwise(p.e, p.d, x.data(), pw1.data(), e1, pw2.data(), m2, together.data(),
                   workspace ? fused_ws.data() : nullptr, threads);
  size_t differ = 0;
  for (size_t i = 0; i < out; ++i) differ += std::memcmp(&apart[i], &together[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "of " << out << " outputs";
  // Not a vacuous match: the activations leave most outputs nonzero.
  size_t nonzero = 0;
  for (float v : together) nonzero += v != 0.f;
  EXPECT_GT(nonzero, out / 4);
  // The averages: the same rows' float sums added in double in another order (bands, not the
  // depthwise call's parts).
  for (size_t i = 0; means && i < means_apart.size(); ++i)
    EXPECT_NEAR(means_together[i], means_apart[i], 1e-6 * (1 + std::abs(means_apart[i]))) << "channel " << i;
}

TEST(ExpandDepthwise, MatchesTheTwoConvolutionsBitForBit) {
  const std::vector<Pair> pairs = {
      pair(1, 16, 112, 112, 96, 3, 2, kConvBlock),  // mobilenet_v2's features.2
      pair(2, 24, 56, 55, 144, 3, 2, kConvBlock),   // three input blocks, two images of 6 bands, odd width
      pair(1, 32, 28, 28, 192, 3, 2, kConvBlockWide),  // 16-channel input blocks
      pair(1, 16, 30, 30, 64, 3, 1, kConvBlock),    // stride 1: bands overlap by two rows
      pair(1, 16, 28, 28, 48, 5, 2, kConvBlock),    // efficientnet_b0's 5x5
      pair(1, 8, 18, 18, 32, 3, 2, 0),              // planar input
  };
  const bool wide_was = detail::expand_wide_mid_enabled;
  for (const Pair& p : pairs) {
    if (!expand_depthwise_unsupported(p.e, p.d).empty()) {
      // Only a table without the blocked depthwise kernel or without 16-channel blocks declines.
      EXPECT_TRUE(p.e.x_block == kConvBlockWide || kernel_table().simd_width < 8)
          << expand_depthwise_unsupported(p.e, p.d);
      continue;
    }
    // The expanded rows in 8-channel blocks, then (AVX-512, channels in 16s, no channel means:
    // the checks with `means` false) in 16-channel blocks read in place.
    for (const bool wide : {false, true}) {
      SCOPED_TRACE(wide ? "16-channel expanded blocks" : "8-channel expanded blocks");
      detail::expand_wide_mid_enabled = wide;
      set_expand_bands(ExpandBands::On);  // bands, with or without a workspace
      check(p, 2, true);
      check(p, 1, true);
      check(p, 1, true, false);
      check(p, 2, true, false);  // one image: on skewed shares
      check(p, 2, false, false);
      // Every band expanding all its rows (the rows shared with the band before are kept by
      // default; one thread keeps them in every band but the first).
      detail::expand_keeps_rows = false;
      check(p, 2, true);
      check(p, 1, true, false);
      detail::expand_keeps_rows = true;
      set_expand_bands(ExpandBands::Off);  // the two calls over the workspace
      check(p, 2, true);
      check(p, 1, true);
      check(p, 2, true, false);
      check(p, 1, true, false);
      set_claim_output(ClaimOutput::On);  // each piece claiming its output rows first
      check(p, 2, true, false);
      set_expand_bands(ExpandBands::On);
      check(p, 2, true, false);
      set_expand_bands(ExpandBands::Off);
      set_claim_output(ClaimOutput::Auto);
      set_expand_bands(ExpandBands::Auto);  // bands wherever there is no workspace
      check(p, 2, false);
      check(p, 1, false, false);
    }
  }
  detail::expand_wide_mid_enabled = wide_was;
}

// The depthwise kernel on 16-channel blocks read in place (depthwise_wide_in_place_avx512, what
// the expand + depthwise pairs run on AVX-512) against the 8-channel kernels on the same values,
// bit for bit: the whole plane and bands of it (the geometry expand_depthwise gives a band), odd
// widths (rows ending in checked groups), rows narrower than a group, 3x3 and 5x5, strides 1 and 2.
TEST(DepthwiseWideInPlace, GivesTheEightChannelKernelsFloats) {
  if (kernel_table().isa != Isa::Avx512) GTEST_SKIP() << "the 16-channel kernel is AVX-512's";
  struct Case {
    int64_t C, H, W, R, stride;
  };
  for (const Case c : {Case{32, 13, 55, 3, 2}, Case{16, 9, 56, 3, 2}, Case{32, 11, 30, 5, 2}, Case{16, 10, 23, 3, 1},
                       Case{32, 8, 17, 5, 1}, Case{16, 5, 4, 3, 2}, Case{16, 6, 9, 5, 2}}) {
    Conv2dShape d;
    d.C = d.K = d.group = c.C, d.H = c.H, d.W = c.W, d.R = d.S = c.R, d.stride_h = d.stride_w = c.stride;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = c.R / 2;
    d.x_blocked = d.y_blocked = true;
    SCOPED_TRACE(std::to_string(c.C) + " x " + std::to_string(c.H) + "x" + std::to_string(c.W) + ", " +
                 std::to_string(c.R) + "x" + std::to_string(c.R) + "/" + std::to_string(c.stride));
    const int64_t HW = d.H * d.W, RS = d.R * d.S, OH = d.out_h(), OW = d.out_w(), OHW = OH * OW;
    const std::vector<float> v = random_vec(d.C * HW, 41);
    std::vector<float> x8(v.size()), x16(v.size());
    for (int64_t ch = 0; ch < d.C; ++ch)
      for (int64_t p = 0; p < HW; ++p) {
        x8[(ch / 8) * HW * 8 + p * 8 + ch % 8] = v[ch * HW + p];
        x16[(ch / 16) * HW * 16 + p * 16 + ch % 16] = v[ch * HW + p];
      }
    const std::vector<float> w = random_vec(d.K * RS, 42, -0.5f, 0.5f), b = random_vec(d.K, 43);
    std::vector<float> pw(conv_packed_weight_floats(ConvTactic::Depthwise, d));
    conv_pack_weight(ConvTactic::Depthwise, d, w.data(), pw.data());
    Epilogue e;
    e.alpha = 0.75f, e.bias = b.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 1.f;
    std::vector<float> eight(d.K * OHW), ws(conv_workspace_floats(ConvTactic::Depthwise, d, 1) + 16);
    conv2d(ConvTactic::Depthwise, d, x8.data(), pw.data(), eight.data(), e, ws.data(), 1);
    const DepthwisePlane whole = detail::depthwise_geometry(d);
    ASSERT_TRUE(detail::depthwise_wide_in_place_supports(whole));
    // The kernel over `bands` bands of rows into `out`: the two 8-channel halves of each block
    // (out16 false) or 16-channel blocks (y_hi null: what depthwise_wide and the pairs on
    // 16-channel blocks take); one band's output lines fetched for writing.
    auto run = [&](int64_t bands, bool out16, std::vector<float>& out) {
      for (int64_t band = 0; band < std::min(bands, OH); ++band) {
        const detail::DepthwiseBand bd = detail::depthwise_band(whole, OH * band / bands, OH * (band + 1) / bands);
        for (int64_t c0 = 0; c0 < d.C; c0 += 16) {
          detail::DepthwiseWideOut o;
          o.alpha = e.alpha, o.bias = b.data() + c0, o.act = e.act, o.act_alpha = e.act_alpha, o.act_beta = e.act_beta;
          float* y = out.data() + c0 * OHW + bd.out_offset * (out16 ? 16 : 8);
          detail::depthwise_wide_in_place_avx512(bd.g, x16.data() + c0 * HW + bd.x_offset * 16,
                                                 pw.data() + d.K * RS + c0 / 8 * RS * 16, y,
                                                 out16 ? nullptr : y + 8 * OHW, o, band == 1);
        }
      }
    };
    for (const int64_t bands : {int64_t{1}, int64_t{3}}) {
      std::vector<float> wide(eight.size(), -7.f), wide16(eight.size(), -7.f);
      run(bands, false, wide);
      run(bands, true, wide16);
      size_t differ = 0, differ16 = 0, nonzero = 0;
      for (int64_t ch = 0; ch < d.K; ++ch)
        for (int64_t q = 0; q < OHW; ++q) {
          const float* ref = &eight[(ch / 8) * OHW * 8 + q * 8 + ch % 8];
          differ += std::memcmp(ref, &wide[(ch / 8) * OHW * 8 + q * 8 + ch % 8], sizeof(float)) != 0;
          differ16 += std::memcmp(ref, &wide16[(ch / 16) * OHW * 16 + q * 16 + ch % 16], sizeof(float)) != 0;
          nonzero += *ref != 0.f;
        }
      EXPECT_EQ(differ, 0u) << "of " << eight.size() << " outputs, in " << bands << " bands";
      EXPECT_EQ(differ16, 0u) << "16-channel output blocks, of " << eight.size() << " outputs, in " << bands
                              << " bands";
      EXPECT_GT(nonzero, eight.size() / 4);
    }
  }
}

// The modes: Off never bands, On always; Auto only on more than one thread (and far cores).
TEST(ExpandDepthwise, BandsAsTheModeSays) {
  set_expand_bands(ExpandBands::Off);
  EXPECT_FALSE(expand_bands_pay(2));
  set_expand_bands(ExpandBands::On);
  EXPECT_TRUE(expand_bands_pay(1));
  EXPECT_TRUE(expand_bands_pay(2));
  set_expand_bands(ExpandBands::Auto);
  EXPECT_FALSE(expand_bands_pay(1));
  // The pair's own switch: an expanded tensor beyond the threads' L2s bands on two threads
  // whether the cores are close or far (smaller ones follow the placement, which a test cannot
  // pin); never on one thread in Auto, nor with the bands off.
  const int64_t big = 2 * kCloseExpandBytesPerThread + 4;
  EXPECT_TRUE(expand_depthwise_bands_pay(big, 2));
  EXPECT_FALSE(expand_depthwise_bands_pay(big, 1));
  set_expand_bands(ExpandBands::Off);
  EXPECT_FALSE(expand_depthwise_bands_pay(big, 2));
  set_expand_bands(ExpandBands::On);
  EXPECT_TRUE(expand_depthwise_bands_pay(64, 1));
  set_expand_bands(ExpandBands::Auto);
}

TEST(ExpandDepthwise, SaysWhyAPairCannotRun) {
  Pair p = pair(1, 16, 28, 28, 96, 3, 2, kConvBlock);
  Pair three = p;
  three.e.R = three.e.S = 3, three.e.pad_top = three.e.pad_left = three.e.pad_bottom = three.e.pad_right = 1;
  EXPECT_NE(expand_depthwise_unsupported(three.e, three.d).find("not a 1x1"), std::string::npos);
  Pair planar_out = p;
  planar_out.d.y_blocked = false;
  EXPECT_NE(expand_depthwise_unsupported(planar_out.e, planar_out.d), "");
  Pair other = p;
  other.d.C = other.d.K = other.d.group = 64;
  EXPECT_NE(expand_depthwise_unsupported(other.e, other.d).find("does not read the expand's output"),
            std::string::npos);
  Epilogue with_z;
  std::vector<float> z(96 * 14 * 14), w1(conv_packed_weight_floats(ConvTactic::Direct, p.e)),
      w2(conv_packed_weight_floats(ConvTactic::Depthwise, p.d)), x(16 * 28 * 28), y(z.size());
  with_z.residual = z.data();
  EXPECT_THROW(expand_depthwise(p.e, p.d, x.data(), w1.data(), Epilogue{}, w2.data(), with_z, y.data(), nullptr, 2),
               std::exception);
}

}  // namespace
}  // namespace kiln::kernels

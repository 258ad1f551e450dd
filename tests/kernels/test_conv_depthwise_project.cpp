// kernels::depthwise_project (src/kernels/conv_depthwise_project.cpp): a depthwise convolution
// and the 1x1 projection after it, band by band, against the two convolutions one after the
// other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/depthwise_project.h"
#include "kiln/kernels/dispatch.h"
#include "kernels/depthwise_project_band.h"
#include "kernels/depthwise_wide.h"

namespace kiln::kernels {
namespace {

using test::random_vec;

struct Pair {
  Conv2dShape d, p;
};

// x [N, C, H, W] in blocks of `block` -> R x R depthwise at `stride` (output in the same blocks)
// -> 1x1 -> K channels in blocks of `y_block`.
Pair pair(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t stride, int64_t K, int64_t y_block,
          int64_t block = kConvBlock) {
  Pair q;
  q.d.N = N, q.d.C = q.d.K = q.d.group = C, q.d.H = H, q.d.W = W, q.d.R = q.d.S = R;
  q.d.stride_h = q.d.stride_w = stride;
  q.d.pad_top = q.d.pad_left = q.d.pad_bottom = q.d.pad_right = R / 2;
  q.d.x_blocked = q.d.y_blocked = true, q.d.x_block = q.d.y_block = block;
  q.p.N = N, q.p.C = C, q.p.H = q.d.out_h(), q.p.W = q.d.out_w(), q.p.K = K;
  q.p.x_blocked = q.p.y_blocked = true, q.p.x_block = block, q.p.y_block = y_block;
  return q;
}

std::string name(const Pair& q) {
  return std::to_string(q.d.C) + " at " + std::to_string(q.d.H) + "x" + std::to_string(q.d.W) + ", " +
         std::to_string(q.d.R) + "x" + std::to_string(q.d.R) + "/" + std::to_string(q.d.stride_h) + " -> " +
         std::to_string(q.p.K) + " in blocks of " + std::to_string(q.p.y_block) + " (depthwise in " +
         std::to_string(q.d.x_block) + "), N " + std::to_string(q.d.N);
}

// Both ways from the same inputs. The band's 1x1 runs the direct tactic's kernels on the same
// channels in the same order, and takes the schedule the whole layer takes (the 1x1 schedule's
// 128-channel batches on a 14x14 band of 7 rows too: Conv2dShape::whole_out_h), so the outputs
// are the two calls' bit for bit: the runtime bands or not by the cores' distance, and its
// outputs must not change with it.
// skewed: the pool first learns a worker three times slower on this pair (test::skew_shares),
// so that a banded image's cut is far from even.
void check(const Pair& q, bool residual, int threads, bool workspace, bool skewed = false) {
  SCOPED_TRACE(name(q) + (residual ? ", residual" : "") + ", threads " + std::to_string(threads) +
               (workspace ? ", workspace" : "") + (skewed ? ", skewed shares" : ""));
  ASSERT_EQ(depthwise_project_unsupported(q.d, q.p), "");
  const std::vector<float> x = random_vec(q.d.N * q.d.C * q.d.H * q.d.W, 41);
  const std::vector<float> wd = random_vec(q.d.K * q.d.R * q.d.S, 42, -0.5f, 0.5f), bd = random_vec(q.d.K, 43);
  const std::vector<float> wp = random_vec(q.p.K * q.p.C, 44, -0.5f, 0.5f), bp = random_vec(q.p.K, 45);
  const size_t out = static_cast<size_t>(q.p.N * q.p.K * q.p.H * q.p.W);
  const std::vector<float> z = random_vec(out, 46);
  std::vector<float> pd(conv_packed_weight_floats(ConvTactic::Depthwise, q.d));
  std::vector<float> pp(conv_packed_weight_floats(ConvTactic::Direct, q.p));
  conv_pack_weight(ConvTactic::Depthwise, q.d, wd.data(), pd.data());
  conv_pack_weight(ConvTactic::Direct, q.p, wp.data(), pp.data());
  if (skewed) test::skew_shares(pd.data());
  Epilogue e1, e2;
  e1.bias = bd.data(), e1.bias_per_row = true, e1.act = Act::Clip, e1.act_alpha = 0.f, e1.act_beta = 6.f;
  e2.bias = bp.data(), e2.bias_per_row = true;
  if (residual) e2.residual = z.data();
  else e2.act = Act::Relu;
  // Apart.
  std::vector<float> mid(q.d.N * q.d.K * q.d.out_h() * q.d.out_w()), apart(out);
  std::vector<float> ws(std::max(conv_workspace_floats(ConvTactic::Depthwise, q.d, threads),
                                 conv_workspace_floats(ConvTactic::Direct, q.p, threads)) + 16);
  conv2d(ConvTactic::Depthwise, q.d, x.data(), pd.data(), mid.data(), e1, ws.data(), threads);
  conv2d(ConvTactic::Direct, q.p, mid.data(), pp.data(), apart.data(), e2, ws.data(), threads);
  // Together, over an output holding garbage.
  std::vector<float> together(out, -123.f);
  std::vector<float> fused_ws(workspace ? depthwise_project_workspace_floats(q.d, q.p, threads) : 0);
  depthwise_project(q.d, q.p, x.data(), pd.data(), e1, pp.data(), e2, together.data(),
                    workspace ? fused_ws.data() : nullptr, threads);
  size_t differ = 0;
  for (size_t i = 0; i < out; ++i) differ += std::memcmp(&apart[i], &together[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "of " << out << " outputs";
  // Not a vacuous match: most outputs are nonzero.
  size_t nonzero = 0;
  for (float v : together) nonzero += v != 0.f;
  EXPECT_GT(nonzero, out / 4);
}

TEST(DepthwiseProject, MatchesTheTwoConvolutions) {
  struct Case {
    Pair q;
    bool residual;
  };
  const std::vector<Case> cases = {
      {pair(1, 32, 112, 112, 3, 1, 16, kConvBlockWide), false},  // mobilenet_v2's features.1
      {pair(1, 144, 56, 56, 3, 1, 24, kConvBlock), true},        // features.3, with its residual
      {pair(2, 48, 20, 19, 3, 1, 32, kConvBlock), true},         // two images, odd width
      {pair(1, 384, 14, 14, 3, 1, 64, kConvBlock), true},        // 64 columns, three 128-channel batches
      {pair(1, 96, 14, 14, 5, 1, 40, kConvBlock), false},        // efficientnet_b0's 5x5
      {pair(1, 64, 28, 28, 3, 2, 32, kConvBlock), false},        // stride 2: bands read 2 rows each
      // 16-channel blocks through the small planes (depthwise_wide.h): features.8's and .15's
      {pair(1, 384, 14, 14, 3, 1, 64, kConvBlockWide, kConvBlockWide), true},
      {pair(1, 960, 7, 7, 3, 1, 160, kConvBlock, kConvBlockWide), true},  // halves at 2+ threads
      {pair(1, 960, 7, 7, 3, 1, 320, kConvBlock, kConvBlockWide), false},  // features.17, Relu here
      {pair(1, 1152, 7, 7, 5, 1, 192, kConvBlockWide, kConvBlockWide), true},  // 5x5, 16-channel out
      {pair(1, 960, 7, 7, 3, 1, 160, kConvBlock), true},                   // 8-channel depthwise blocks
      {pair(2, 144, 14, 13, 5, 2, 48, kConvBlockWide, kConvBlockWide), false},  // 5x5/2, odd width
  };
  for (const Case& c : cases) {
    if (!depthwise_project_unsupported(c.q.d, c.q.p).empty()) {
      // Only a table without the blocked depthwise kernel or without 16-channel blocks declines.
      EXPECT_TRUE(c.q.p.y_block == kConvBlockWide || c.q.d.x_block == kConvBlockWide || kernel_table().simd_width < 8)
          << depthwise_project_unsupported(c.q.d, c.q.p);
      continue;
    }
    // On: bands with or without a workspace; Off: the two calls over the workspace (bands
    // without one); Auto: bands on more than one thread while the cores measure far apart.
    for (ExpandBands mode : {ExpandBands::On, ExpandBands::Off, ExpandBands::Auto}) {
      set_expand_bands(mode);
      for (int threads : {1, 2, 3})
        for (bool workspace : {false, true}) check(c.q, c.residual, threads, workspace);
      // 16-channel depthwise blocks through the zero-bordered copy instead of in place.
      if (c.q.d.x_block == kConvBlockWide) {
        detail::depthwise_wide_in_place_enabled = false;
        for (int threads : {1, 2}) check(c.q, c.residual, threads, true);
        detail::depthwise_wide_in_place_enabled = true;
      }
    }
    set_expand_bands(ExpandBands::On);
    check(c.q, c.residual, 2, true, true);
    set_expand_bands(ExpandBands::Auto);
  }
}

// The 7x7 pairs whose projection sums in two K blocks run as two halves of their channels at
// two threads or more where the bands pay (MatchesTheTwoConvolutions checks their floats in
// mode On); the rest do not.
TEST(DepthwiseProject, HalvesTheChannelsOfShortPlanesOfTwoKBlocks) {
  if (kernel_table().simd_width < 8) GTEST_SKIP() << "no channel-blocked depthwise kernel on this table";
  Epilogue e;
  e.bias_per_row = true;
  const Pair q = pair(1, 960, 7, 7, 3, 1, 160, kConvBlock, kConvBlockWide);
  if (!depthwise_project_unsupported(q.d, q.p).empty()) GTEST_SKIP() << depthwise_project_unsupported(q.d, q.p);
  // Only where the bands pay: with the cores close the two calls run apart.
  set_expand_bands(ExpandBands::Off);
  EXPECT_EQ(depthwise_project_k_split(q.d, q.p, e, 2), 0);
  set_expand_bands(ExpandBands::On);
  EXPECT_EQ(depthwise_project_k_split(q.d, q.p, e, 2), 480);
  EXPECT_EQ(depthwise_project_k_split(q.d, q.p, e, 3), 480);
  EXPECT_EQ(depthwise_project_k_split(q.d, q.p, e, 1), 0);  // one thread: the blocks in turn
  // One K block (576 channels): halves would sum in another order.
  const Pair one_block = pair(1, 576, 7, 7, 3, 1, 160, kConvBlock, kConvBlockWide);
  EXPECT_EQ(depthwise_project_k_split(one_block.d, one_block.p, e, 2), 0);
  // 14 rows: a band of 7 rows a thread.
  const Pair tall = pair(1, 960, 14, 14, 3, 1, 160, kConvBlock, kConvBlockWide);
  EXPECT_EQ(depthwise_project_k_split(tall.d, tall.p, e, 2), 0);
  // Two images: bands.
  const Pair two = pair(2, 960, 7, 7, 3, 1, 160, kConvBlock, kConvBlockWide);
  EXPECT_EQ(depthwise_project_k_split(two.d, two.p, e, 2), 0);
  detail::depthwise_project_k_split_enabled = false;
  EXPECT_EQ(depthwise_project_k_split(q.d, q.p, e, 2), 0);
  detail::depthwise_project_k_split_enabled = true;
  set_expand_bands(ExpandBands::Auto);
}

// A slice of a packed weight's rows (Conv2dShape::w_panel_rows): the slice's partial sums, the
// floats of the same rows packed on their own.
TEST(DepthwiseProject, DirectReadsASliceOfAPackedWeight) {
  Conv2dShape whole;
  whole.C = 96, whole.H = whole.W = 7, whole.K = 64;
  whole.x_blocked = whole.y_blocked = true;
  const std::vector<float> w = random_vec(whole.K * whole.C, 51, -0.5f, 0.5f);
  std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, whole));
  conv_pack_weight(ConvTactic::Direct, whole, w.data(), packed.data());
  const int64_t c0 = 32, nc = 48, HW = whole.H * whole.W;
  Conv2dShape slice = whole;
  slice.C = nc;
  std::vector<float> ws(static_cast<size_t>(whole.K * nc));  // rows [c0, c0 + nc) of w, [K][nc]
  for (int64_t k = 0; k < whole.K; ++k)
    for (int64_t c = 0; c < nc; ++c) ws[k * nc + c] = w[k * whole.C + c0 + c];
  std::vector<float> own(conv_packed_weight_floats(ConvTactic::Direct, slice));
  conv_pack_weight(ConvTactic::Direct, slice, ws.data(), own.data());
  const std::vector<float> x = random_vec(nc * HW, 52);
  std::vector<float> want(whole.K * HW), got(whole.K * HW, -5.f);
  conv2d(ConvTactic::Direct, slice, x.data(), own.data(), want.data(), Epilogue{}, nullptr, 1);
  Conv2dShape sliced = slice;
  sliced.w_panel_rows = whole.C;
  ASSERT_EQ(conv_tactic_unsupported(ConvTactic::Direct, sliced), "");
  const int64_t nr = kernel_table().conv_shape.nr;
  conv2d(ConvTactic::Direct, sliced, x.data(), packed.data() + c0 * nr, got.data(), Epilogue{}, nullptr, 1);
  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += std::memcmp(&want[i], &got[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "of " << want.size();
  // Fewer panel rows than the slice has: refused.
  sliced.w_panel_rows = nc - 8;
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, sliced), "");
}

// The modes as expand_bands_pay's; in Auto with the cores close (the only reading before any
// run measured them far), only one band per thread of kCloseBandMinRows rows or more.
TEST(DepthwiseProject, BandsAsTheModeAndTheSplitSay) {
  set_expand_bands(ExpandBands::Off);
  EXPECT_FALSE(depthwise_project_bands_pay(2, 14, 2));
  set_expand_bands(ExpandBands::On);
  EXPECT_TRUE(depthwise_project_bands_pay(1, 7, 1));
  EXPECT_TRUE(depthwise_project_bands_pay(4, 56, 2));
  set_expand_bands(ExpandBands::Auto);
  EXPECT_FALSE(depthwise_project_bands_pay(1, 14, 1));
  if (!expand_bands_pay(2)) {  // close cores
    EXPECT_TRUE(depthwise_project_bands_pay(2, 14, 2));
    EXPECT_TRUE(depthwise_project_bands_pay(2, 28, 2));
    EXPECT_TRUE(depthwise_project_bands_pay(2, 2 * kCloseBandMinRows, 2));
    EXPECT_FALSE(depthwise_project_bands_pay(2, 2 * kCloseBandMinRows - 1, 2));  // 7x7: 3 and 4 rows
    EXPECT_FALSE(depthwise_project_bands_pay(4, 56, 2));  // two bands a thread
    EXPECT_TRUE(depthwise_project_bands_pay(3, 21, 3));
  } else {
    EXPECT_TRUE(depthwise_project_bands_pay(4, 56, 2));
  }
}

TEST(DepthwiseProject, SaysWhyAPairCannotRun) {
  const Pair q = pair(1, 32, 28, 28, 3, 1, 16, kConvBlock);
  Pair three = q;
  three.p.R = three.p.S = 3, three.p.pad_top = three.p.pad_left = three.p.pad_bottom = three.p.pad_right = 1;
  EXPECT_NE(depthwise_project_unsupported(three.d, three.p).find("not a 1x1"), std::string::npos);
  Pair planar = q;
  planar.d.y_blocked = planar.p.x_blocked = false;
  EXPECT_NE(depthwise_project_unsupported(planar.d, planar.p).find("channel blocks of one size"), std::string::npos);
  Pair other = q;
  other.p.H = 14, other.p.W = 14;
  EXPECT_NE(depthwise_project_unsupported(other.d, other.p).find("does not read the depthwise output"),
            std::string::npos);
  Pair grouped = q;
  grouped.d.group = 4;
  EXPECT_NE(depthwise_project_unsupported(grouped.d, grouped.p), "");
  // A residual on the depthwise convolution: refused with a message, not run.
  Epilogue with_z;
  std::vector<float> z(32 * 28 * 28), wd(conv_packed_weight_floats(ConvTactic::Depthwise, q.d)),
      wp(conv_packed_weight_floats(ConvTactic::Direct, q.p)), x(32 * 28 * 28), y(16 * 28 * 28);
  with_z.residual = z.data();
  EXPECT_THROW(depthwise_project(q.d, q.p, x.data(), wd.data(), with_z, wp.data(), Epilogue{}, y.data(), nullptr, 2),
               std::exception);
}

// Conv2dShape::y_plane_rows: a 1x1 over a band of rows writes into the whole output's planes
// (and reads the residual's there), leaving the other rows alone.
TEST(DepthwiseProject, DirectWritesABandIntoTallerPlanes) {
  Conv2dShape s;
  s.C = 16, s.H = 10, s.W = 12, s.K = 24;
  s.x_blocked = s.y_blocked = true;
  const int64_t OH = 30, row0 = 7;
  const std::vector<float> x = random_vec(s.C * s.H * s.W, 51), w = random_vec(s.K * s.C, 52), b = random_vec(s.K, 53);
  const std::vector<float> z = random_vec(s.K * OH * s.W, 54);
  std::vector<float> pw(conv_packed_weight_floats(ConvTactic::Direct, s));
  conv_pack_weight(ConvTactic::Direct, s, w.data(), pw.data());
  // The band alone, compact.
  Epilogue e;
  e.bias = b.data(), e.bias_per_row = true;
  std::vector<float> zb(s.K * s.H * s.W), compact(zb.size());
  for (int64_t k = 0; k < s.K / kConvBlock; ++k)
    std::memcpy(&zb[k * kConvBlock * s.H * s.W], &z[(k * OH + row0) * s.W * kConvBlock],
                sizeof(float) * kConvBlock * s.H * s.W);
  e.residual = zb.data();
  conv2d(ConvTactic::Direct, s, x.data(), pw.data(), compact.data(), e, nullptr, 2);
  // The band at rows [7, 17) of 30-row planes.
  Conv2dShape tall = s;
  tall.y_plane_rows = OH;
  ASSERT_EQ(conv_tactic_unsupported(ConvTactic::Direct, tall), "");
  std::vector<float> y(s.K * OH * s.W, -7.f);
  const int64_t at = row0 * s.W * kConvBlock;
  e.residual = z.data() + at;
  conv2d(ConvTactic::Direct, tall, x.data(), pw.data(), y.data() + at, e, nullptr, 2);
  for (int64_t k = 0; k < s.K / kConvBlock; ++k)
    for (int64_t r = 0; r < OH; ++r)
      for (int64_t i = 0; i < s.W * kConvBlock; ++i) {
        const float got = y[(k * OH + r) * s.W * kConvBlock + i];
        if (r < row0 || r >= row0 + s.H) ASSERT_EQ(got, -7.f) << "block " << k << " row " << r;
        else ASSERT_EQ(got, compact[(k * s.H + r - row0) * s.W * kConvBlock + i]) << "block " << k << " row " << r;
      }
  Conv2dShape short_planes = tall;
  short_planes.y_plane_rows = 5;
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, short_planes), "");
  Conv2dShape depthwise = tall;
  depthwise.C = depthwise.K = depthwise.group = 16;
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Depthwise, depthwise), "");
}

}  // namespace
}  // namespace kiln::kernels

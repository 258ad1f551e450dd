// kernels::stem_depthwise_project (src/kernels/conv_stem_depthwise_project.cpp): an RGB stem, the
// depthwise convolution and the 1x1 projection after it, band by band, against the three
// convolutions one after the other.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/conv_stem.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/stem_depthwise_project.h"

namespace kiln::kernels {
namespace {

using test::random_vec;

struct Triple {
  Conv2dShape s, d, p;
};

// x [N, C, H, W] planar -> 3x3/2 stem (pad 1) into E channels in 8-channel blocks -> 3x3
// depthwise (stride 1, pad 1) -> 1x1 into K channels in blocks of `y_block`.
Triple triple(int64_t N, int64_t C, int64_t H, int64_t W, int64_t E, int64_t K, int64_t y_block) {
  Triple t;
  t.s.N = N, t.s.C = C, t.s.H = H, t.s.W = W, t.s.K = E, t.s.R = t.s.S = 3, t.s.stride_h = t.s.stride_w = 2;
  t.s.pad_top = t.s.pad_left = t.s.pad_bottom = t.s.pad_right = 1;
  t.s.y_blocked = true;
  t.d.N = N, t.d.C = t.d.K = t.d.group = E, t.d.H = t.s.out_h(), t.d.W = t.s.out_w(), t.d.R = t.d.S = 3;
  t.d.pad_top = t.d.pad_left = t.d.pad_bottom = t.d.pad_right = 1;
  t.d.x_blocked = t.d.y_blocked = true;
  t.p.N = N, t.p.C = E, t.p.H = t.d.out_h(), t.p.W = t.d.out_w(), t.p.K = K;
  t.p.x_blocked = t.p.y_blocked = true, t.p.y_block = y_block;
  return t;
}

std::string name(const Triple& t) {
  return std::to_string(t.s.C) + " x " + std::to_string(t.s.H) + "x" + std::to_string(t.s.W) + " -> " +
         std::to_string(t.s.K) + " -> " + std::to_string(t.p.K) + " in blocks of " + std::to_string(t.p.y_block) +
         ", N " + std::to_string(t.s.N);
}

// Both ways from the same inputs. Every kernel is the one the calls apart run, on the same rows
// (a kept stem row is the bits the same stem wrote for the band before), so the outputs are the
// three calls' bit for bit: the runtime bands or not by the thread count, and its outputs must
// not change with it.
void check(const Triple& t, bool residual, int threads, bool workspace) {
  SCOPED_TRACE(name(t) + (residual ? ", residual" : "") + ", threads " + std::to_string(threads) +
               (workspace ? ", workspace" : ""));
  const std::vector<float> x = random_vec(t.s.N * t.s.C * t.s.H * t.s.W, 51);
  const std::vector<float> ws = random_vec(t.s.K * t.s.C * 9, 52, -0.5f, 0.5f), bs = random_vec(t.s.K, 53);
  const std::vector<float> wd = random_vec(t.d.K * 9, 54, -0.5f, 0.5f), bd = random_vec(t.d.K, 55);
  const std::vector<float> wp = random_vec(t.p.K * t.p.C, 56, -0.5f, 0.5f), bp = random_vec(t.p.K, 57);
  const size_t out = static_cast<size_t>(t.p.N * t.p.K * t.p.H * t.p.W);
  const std::vector<float> z = random_vec(out, 58);
  std::vector<float> ps(conv_packed_weight_floats(ConvTactic::Direct, t.s));
  std::vector<float> pd(conv_packed_weight_floats(ConvTactic::Depthwise, t.d));
  std::vector<float> pp(conv_packed_weight_floats(ConvTactic::Direct, t.p));
  conv_pack_weight(ConvTactic::Direct, t.s, ws.data(), ps.data());
  conv_pack_weight(ConvTactic::Depthwise, t.d, wd.data(), pd.data());
  conv_pack_weight(ConvTactic::Direct, t.p, wp.data(), pp.data());
  Epilogue es, ed, ep;
  es.bias = bs.data(), es.bias_per_row = true, es.act = Act::Clip, es.act_alpha = 0.f, es.act_beta = 6.f;
  ed = es, ed.bias = bd.data(), ed.act_beta = 4.f;
  ep.bias = bp.data(), ep.bias_per_row = true;
  if (residual) ep.residual = z.data();
  else ep.act = Act::Relu;
  // Apart.
  std::vector<float> stem(t.s.N * t.s.K * t.d.H * t.d.W), mid(t.d.N * t.d.K * t.d.H * t.d.W), apart(out);
  std::vector<float> scratch(std::max({conv_workspace_floats(ConvTactic::Direct, t.s, threads),
                                       conv_workspace_floats(ConvTactic::Depthwise, t.d, threads),
                                       conv_workspace_floats(ConvTactic::Direct, t.p, threads)}) +
                             16);
  conv2d(ConvTactic::Direct, t.s, x.data(), ps.data(), stem.data(), es, scratch.data(), threads);
  conv2d(ConvTactic::Depthwise, t.d, stem.data(), pd.data(), mid.data(), ed, scratch.data(), threads);
  conv2d(ConvTactic::Direct, t.p, mid.data(), pp.data(), apart.data(), ep, scratch.data(), threads);
  // Together, over an output holding garbage.
  std::vector<float> together(out, -123.f);
  std::vector<float> fused_ws(workspace ? stem_depthwise_project_workspace_floats(t.s, t.d, t.p, threads) : 0);
  stem_depthwise_project(t.s, t.d, t.p, x.data(), ps.data(), es, pd.data(), ed, pp.data(), ep, together.data(),
                         workspace ? fused_ws.data() : nullptr, threads);
  size_t differ = 0;
  for (size_t i = 0; i < out; ++i) differ += std::memcmp(&apart[i], &together[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "of " << out << " outputs";
  // Not a vacuous match: most outputs are nonzero.
  size_t nonzero = 0;
  for (float v : together) nonzero += v != 0.f;
  EXPECT_GT(nonzero, out / 4);
}

TEST(StemDepthwiseProject, MatchesTheThreeConvolutionsBitForBit) {
  struct Case {
    Triple t;
    bool residual;
  };
  const std::vector<Case> cases = {
      {triple(1, 3, 224, 224, 32, 16, kConvBlockWide), false},  // mobilenet_v2's features.0 and .1
      {triple(1, 3, 224, 224, 32, 16, kConvBlock), false},
      {triple(2, 4, 70, 64, 16, 24, kConvBlock), true},  // two images, 35 rows: uneven bands
      {triple(1, 1, 30, 32, 8, 8, kConvBlock), true},    // one input channel, 15 rows
  };
  const bool was = detail::stem_bands_enabled;
  set_expand_bands(ExpandBands::On);  // bands whatever the cores' distance
  for (const Case& c : cases) {
    const std::string why = stem_depthwise_project_unsupported(c.t.s, Act::Clip, c.t.d, c.t.p);
    if (!why.empty()) {
      // Only a table without the AVX-512 stem kernel declines these.
      EXPECT_NE(kernel_table().isa, Isa::Avx512) << why;
      continue;
    }
    // Bands on more than one thread (kept stem rows from the second band a thread runs on:
    // threads x 4 bands), with or without a workspace; off: the stem and then the pair.
    for (bool bands : {true, false}) {
      detail::stem_bands_enabled = bands;
      for (int threads : {1, 2, 3})
        for (bool workspace : {false, true}) check(c.t, c.residual, threads, workspace);
    }
  }
  detail::stem_bands_enabled = was;
  set_expand_bands(ExpandBands::Auto);
}

// On more than one thread, with the switch on, where expand_bands_pay says so.
TEST(StemDepthwiseProject, BandsAsTheSwitchAndTheModeSay) {
  const bool was = detail::stem_bands_enabled;
  detail::stem_bands_enabled = true;
  set_expand_bands(ExpandBands::On);
  EXPECT_FALSE(stem_depthwise_project_bands(1));
  EXPECT_TRUE(stem_depthwise_project_bands(2));
  set_expand_bands(ExpandBands::Off);
  EXPECT_FALSE(stem_depthwise_project_bands(2));
  set_expand_bands(ExpandBands::Auto);
  EXPECT_EQ(stem_depthwise_project_bands(2), expand_bands_pay(2));  // far cores only
  detail::stem_bands_enabled = false;
  set_expand_bands(ExpandBands::On);
  EXPECT_FALSE(stem_depthwise_project_bands(2));
  set_expand_bands(ExpandBands::Auto);
  detail::stem_bands_enabled = was;
}

TEST(StemDepthwiseProject, SaysWhyATripleCannotRun) {
  const Triple t = triple(1, 3, 64, 64, 16, 8, kConvBlock);
  if (kernel_table().isa != Isa::Avx512) {
    EXPECT_NE(stem_depthwise_project_unsupported(t.s, Act::Clip, t.d, t.p).find("AVX-512"), std::string::npos);
    return;
  }
  EXPECT_EQ(stem_depthwise_project_unsupported(t.s, Act::Clip, t.d, t.p), "");
  Triple wide = t;  // 5 input channels: more than the stem kernel takes
  wide.s.C = 5;
  EXPECT_NE(stem_depthwise_project_unsupported(wide.s, Act::Clip, wide.d, wide.p).find("not a stem"),
            std::string::npos);
  EXPECT_NE(stem_depthwise_project_unsupported(t.s, Act::Sigmoid, t.d, t.p).find("not a stem"), std::string::npos);
  Triple other = t;  // the depthwise layer reads another tensor
  other.d.H = other.d.W = 16, other.p.H = other.p.W = 16;
  EXPECT_NE(stem_depthwise_project_unsupported(other.s, Act::Clip, other.d, other.p).find("does not read the stem"),
            std::string::npos);
  Triple three = t;  // the projection is 3x3
  three.p.R = three.p.S = 3, three.p.pad_top = three.p.pad_left = three.p.pad_bottom = three.p.pad_right = 1;
  EXPECT_NE(stem_depthwise_project_unsupported(three.s, Act::Clip, three.d, three.p).find("not a 1x1"),
            std::string::npos);
  // A residual on the stem: refused with a message, not run.
  std::vector<float> x(3 * 64 * 64), z(16 * 32 * 32), y(8 * 32 * 32);
  std::vector<float> ps(conv_packed_weight_floats(ConvTactic::Direct, t.s)),
      pd(conv_packed_weight_floats(ConvTactic::Depthwise, t.d)), pp(conv_packed_weight_floats(ConvTactic::Direct, t.p));
  Epilogue with_z;
  with_z.residual = z.data();
  EXPECT_THROW(stem_depthwise_project(t.s, t.d, t.p, x.data(), ps.data(), with_z, pd.data(), Epilogue{}, pp.data(),
                                      Epilogue{}, y.data(), nullptr, 2),
               std::exception);
}

}  // namespace
}  // namespace kiln::kernels

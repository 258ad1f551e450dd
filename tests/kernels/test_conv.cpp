// conv2d, every tactic on every ISA table, against a naive direct convolution in double:
// strides, pads (asymmetric), dilations, groups, depthwise, batch > 1, epilogues, 1 and 2
// threads, with and without a caller workspace. Tolerance: 1e-5·(sum of |x·w| over the window)
// + the activation's 2e-6 relative error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "kernel_test_util.h"
#include "kiln/ir/error.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_direct_1x1.h"
#include "kernels/conv_stem.h"
#include "kernels/conv_winograd.h"
#include "kernels/depthwise_halves.h"
#include "kernels/depthwise_parts.h"
#include "kernels/depthwise_wide.h"
#include "kernels/pair_tail.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

using test::random_vec;

struct ConvCase {
  Conv2dShape s;
  Act act = Act::None;
  bool bias = true, residual = false;
};

Conv2dShape shape(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t stride,
                  int64_t pad, int64_t dil = 1, int64_t group = 1) {
  Conv2dShape s;
  s.N = N, s.C = C, s.H = H, s.W = W, s.K = K, s.R = R, s.S = S;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = pad;
  s.pad_bottom = s.pad_right = pad;
  s.dil_h = s.dil_w = dil;
  s.group = group;
  return s;
}

// [N][C][H*W] -> [N][C/B][H*W][B] (Conv2dShape::x_blocked, y_blocked; B = x_block / y_block), or
// back (`back`).
std::vector<float> blocked(const std::vector<float>& v, int64_t N, int64_t C, int64_t HW, bool back = false,
                           int64_t B = kConvBlock) {
  std::vector<float> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < HW; ++i) {
        const int64_t plain = (n * C + c) * HW + i;
        const int64_t blk = ((n * C + c / B * B) * HW + i * B) + c % B;
        if (back) out[plain] = v[blk];
        else out[blk] = v[plain];
      }
  return out;
}

// x_lines: the input starts on a 64-byte line (as in the runtime's arena), else one float past
// one, so the pointwise tactic's two ways of reading B (in place on line-aligned rows, packed
// otherwise: gemm_driver.cpp) are each chosen on purpose.
void check(const KernelTable& t, ConvTactic tactic, const ConvCase& cc, int threads, bool own_workspace,
           bool x_lines = false) {
  const Conv2dShape& s = cc.s;
  ASSERT_EQ(conv_tactic_unsupported(tactic, s), "");
  const int64_t OH = s.out_h(), OW = s.out_w(), Cg = s.C / s.group, Kg = s.K / s.group;
  const auto xv = random_vec(s.N * s.C * s.H * s.W, 11 + s.C);
  std::vector<float> x_store(xv.size() + 32);
  const uintptr_t line = (reinterpret_cast<uintptr_t>(x_store.data()) + 63) / 64 * 64;
  float* const x = reinterpret_cast<float*>(line) + (x_lines ? 0 : 1);
  if (s.x_blocked) {  // the kernel reads the blocked copy; the reference below the plain one
    const auto xb = blocked(xv, s.N, s.C, s.H * s.W, false, s.x_block);
    std::copy(xb.begin(), xb.end(), x);
  } else {
    std::copy(xv.begin(), xv.end(), x);
  }
  auto w = random_vec(s.K * Cg * s.R * s.S, 12 + s.K);
  auto bias = random_vec(s.K, 13);
  auto res = random_vec(s.N * s.K * OH * OW, 14);
  Epilogue e;
  e.act = cc.act;
  test::act_params(cc.act, e.act_alpha, e.act_beta);
  if (cc.bias) e.bias = bias.data(), e.bias_per_row = true;
  const auto res_blocked = s.y_blocked ? blocked(res, s.N, s.K, OH * OW, false, s.y_block) : std::vector<float>{};
  if (cc.residual) e.residual = s.y_blocked ? res_blocked.data() : res.data(), e.ldr = OH * OW;
  std::vector<float> packed(conv_packed_weight_floats_on(t, tactic, s));
  conv_pack_weight_on(t, tactic, s, w.data(), packed.data());
  // The direct tactic must not read workspace it did not write (it keeps the padding of the
  // first image's planes for the next images): NaN there would show in the outputs.
  std::vector<float> ws(own_workspace ? conv_workspace_floats_on(t, tactic, s, threads) : 0,
                        tactic == ConvTactic::Direct ? NAN : 0.f);
  std::vector<float> y(s.N * s.K * OH * OW, 777.f);
  conv2d_on(t, tactic, s, x, packed.data(), y.data(), e, own_workspace ? ws.data() : nullptr, threads);
  if (s.y_blocked) y = blocked(y, s.N, s.K, OH * OW, /*back=*/true, s.y_block);
  std::copy(xv.begin(), xv.end(), x);  // the reference reads NCHW
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k) {
      const int64_t g = k / Kg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0, mag = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < s.R; ++r)
              for (int64_t q = 0; q < s.S; ++q) {
                int64_t ih = oh * s.stride_h - s.pad_top + r * s.dil_h, iw = ow * s.stride_w - s.pad_left + q * s.dil_w;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                double p = double(x[((n * s.C + g * Cg + c) * s.H + ih) * s.W + iw]) * w[((k * Cg + c) * s.R + r) * s.S + q];
                acc += p, mag += std::fabs(p);
              }
          const int64_t plane = n * s.K + k;
          Epilogue el = e;
          if (el.residual) el.residual = res.data() + plane * OH * OW, el.ldr = OW;
          // bias per output channel: index the reference by k through a row of length 1.
          double v = acc * e.alpha + (e.bias ? bias[k] : 0.0) + (el.residual ? el.residual[oh * OW + ow] : 0.0);
          double want = test::ref_act(e.act, v, e.act_alpha, e.act_beta);
          double got = y[(plane * OH + oh) * OW + ow];
          ASSERT_NEAR(got, want, 1e-5 * (mag + 1) + 2e-6 * std::fabs(want))
              << isa_name(t.isa) << " " << conv_tactic_name(tactic) << " N=" << s.N << " C=" << s.C << " H=" << s.H
              << " W=" << s.W << " K=" << s.K << " R=" << s.R << " S=" << s.S << " stride=" << s.stride_h
              << "/" << s.stride_w << " pad=" << s.pad_top << " dil=" << s.dil_h << " group=" << s.group
              << " blocked x/y=" << s.x_blocked << "/" << s.y_blocked << " blocks " << s.x_block << "/" << s.y_block
              << " threads=" << threads << " at n=" << n << " k=" << k << " oh=" << oh << " ow=" << ow;
        }
    }
}

TEST(Conv, GemmTacticStridesPadsDilationsGroups) {
  std::vector<ConvCase> cases = {
      {shape(1, 3, 17, 19, 8, 3, 3, 1, 1)},
      {shape(2, 5, 12, 13, 7, 3, 3, 2, 1), Act::Relu, true, true},
      {shape(1, 4, 15, 11, 6, 5, 5, 1, 2), Act::Silu},
      {shape(1, 3, 23, 23, 16, 7, 7, 2, 3), Act::None, false},  // resnet stem-like
      {shape(1, 6, 10, 9, 9, 3, 3, 1, 2, 2), Act::Clip},        // dilation 2
      {shape(1, 8, 9, 9, 12, 3, 3, 1, 1, 1, 4), Act::Gelu},     // grouped (not depthwise)
      {shape(1, 6, 7, 8, 6, 3, 3, 3, 0, 1, 3)},                 // stride 3, groups 3
      {shape(1, 16, 14, 14, 40, 1, 1, 2, 0), Act::None, true, true},
  };
  Conv2dShape asym = shape(1, 3, 9, 10, 5, 3, 2, 1, 0);
  asym.pad_top = 2, asym.pad_left = 0, asym.pad_bottom = 0, asym.pad_right = 1, asym.stride_w = 2;
  cases.push_back({asym, Act::LeakyRelu});
  for (const KernelTable* t : test::all_tables())
    for (const ConvCase& c : cases)
      for (int threads : {1, 2}) check(*t, ConvTactic::Gemm, c, threads, threads == 2);
}

TEST(Conv, PointwiseTactic) {
  std::vector<ConvCase> cases = {
      {shape(1, 16, 7, 7, 33, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(2, 3, 5, 11, 4, 1, 1, 1, 0), Act::HardSwish},
      {shape(1, 64, 28, 28, 30, 1, 1, 1, 0), Act::None, false, false},
      // Big enough for two threads: the parts cut output pixels (GemmProblem::Split::Cols).
      {shape(1, 64, 28, 27, 96, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 256, 7, 7, 512, 1, 1, 1, 0), Act::Clip, true, true},  // weight-heavy: output channels
      // K > 64 on rows that are not line-aligned (196 and 756 floats): B's rows packed into
      // panels, the last one ragged; on 28x27 two threads cut the columns (a block from column
      // 378 on).
      {shape(1, 96, 14, 14, 64, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 96, 28, 27, 96, 1, 1, 1, 0), Act::Relu, true, true},
      // Line-aligned rows (64 and 576 floats) read in place over K = 96 and K = 64 (576 pixels:
      // more than one column block, so not strips): whole row tiles down each panel in one call
      // (tile_rows_col_strip), then the 3 rows past them.
      {shape(1, 96, 8, 8, 33, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 64, 8, 72, 45, 1, 1, 1, 0), Act::Clip, true, true},
  };
  for (const KernelTable* t : test::all_tables())
    for (const ConvCase& c : cases)
      for (int threads : {1, 2})
        for (bool lines : {false, true}) check(*t, ConvTactic::Pointwise, c, threads, threads == 1, lines);
}

TEST(Conv, DepthwiseTactic) {
  std::vector<ConvCase> cases = {
      {shape(1, 8, 14, 14, 8, 3, 3, 1, 1, 1, 8), Act::Relu},
      {shape(1, 5, 15, 37, 5, 3, 3, 2, 1, 1, 5), Act::Clip, true, true},
      {shape(2, 4, 19, 21, 4, 5, 5, 1, 2, 1, 4), Act::Silu},
      {shape(1, 3, 20, 40, 3, 5, 5, 2, 2, 1, 3), Act::HardSwish},
      {shape(1, 3, 9, 9, 3, 3, 3, 1, 2, 2, 3)},                         // dilated
      {shape(1, 2, 13, 70, 2, 3, 3, 3, 1, 1, 2), Act::None, false, true},  // stride 3: scalar path
      {shape(1, 6, 1, 1, 6, 3, 3, 1, 1, 1, 6)},                         // 1x1 input
      {shape(1, 4, 9, 70, 4, 3, 3, 1, 1, 1, 4), Act::Relu, true, true},  // rows of several vectors
      {shape(1, 3, 7, 7, 3, 7, 7, 1, 3, 1, 3)},                         // window wider than the row
      // Big enough for two threads: bands of output rows (depthwise_split), halo rows clipped
      // at the top and bottom of the plane.
      {shape(1, 32, 56, 56, 32, 3, 3, 1, 1, 1, 32), Act::Clip, true, true},
      {shape(1, 32, 70, 40, 32, 5, 5, 2, 2, 1, 32), Act::Relu, true, true},
      {shape(2, 24, 40, 30, 24, 3, 3, 1, 2, 2, 24)},                    // dilated bands
      // 112 rows: 7 bands of 16, cut to 6 at two threads (whole bands per thread).
      {shape(1, 16, 112, 18, 16, 3, 3, 1, 1, 1, 16), Act::Relu, true, true},
      // 56 input rows to 28 (and 57 to 29 under a 5x5): too short for two bands of 16 output
      // rows, still one band a thread (kMinBandInputRows), the halo row shared.
      {shape(1, 24, 56, 30, 24, 3, 3, 2, 1, 1, 24), Act::Clip, true, true},
      {shape(1, 16, 57, 20, 16, 5, 5, 2, 2, 1, 16), Act::Silu, true, true},
      {shape(1, 640, 7, 7, 640, 3, 3, 1, 1, 1, 640), Act::Relu},       // too short for bands: groups
      // Channel blocks: a partial last block (20 = 16 + 4 = 8 + 8 + 4), 7-pixel groups on a
      // 7-wide output with a residual; 23-wide rows (8 + 8 + a group of 7) under a 5x5 window.
      {shape(1, 20, 14, 14, 20, 3, 3, 2, 1, 1, 20), Act::Clip, true, true},
      {shape(1, 17, 11, 23, 17, 5, 5, 1, 2, 1, 17), Act::Silu, true, true},
      // The blocked kernel's output stage (kDepthwiseStagePixels): rows wider than the stage (a
      // chunk of one row, its last tile short) and chunks of 7 rows of 33 (no whole tiles).
      {shape(1, 18, 6, 300, 18, 3, 3, 1, 1, 1, 18), Act::Relu, true, true},
      {shape(1, 16, 40, 33, 16, 3, 3, 1, 1, 1, 16), Act::HardSwish, true, true},
      // One input channel into several outputs (digits_cnn's 1 -> 16 on 8x8 images); a stride
      // of 3 takes the phase planes on narrow tables.
      {shape(3, 1, 8, 8, 16, 3, 3, 1, 1, 1, 1), Act::Relu, true, true},
      {shape(1, 1, 13, 14, 5, 3, 3, 3, 1, 1, 1)},
  };
  Conv2dShape same = shape(1, 5, 30, 33, 5, 3, 3, 2, 0, 1, 5);  // TF-style SAME: pad bottom/right only
  same.pad_bottom = same.pad_right = 1;
  cases.push_back({same, Act::Silu, true, false});
  for (const KernelTable* t : test::all_tables()) {
    // Tables of 8 or more lanes run the channel-blocked kernel; without it, the plane kernel
    // (the phase planes past stride 2), which narrower tables run.
    KernelTable planes = *t;
    planes.depthwise_block = nullptr;
    for (const KernelTable* table : {t, static_cast<const KernelTable*>(&planes)})
      for (const ConvCase& c : cases)
        for (int threads : {1, 2}) check(*table, ConvTactic::Depthwise, c, threads, threads == 2);
  }
}

// How depthwise_split cuts planes at two threads: bands of at least 16 output rows, whole bands
// per thread; a plane too short for two such bands is still cut into one band a thread from 56
// input rows on (mobilenet_v2's 56 -> 28), not below (28 -> 28, 28 -> 14 keep whole planes and
// share out channel groups); never at one thread. depthwise_never_bands agrees at 2 to 8 threads.
TEST(Conv, DepthwiseSplitBandsByInputRows) {
  struct Case {
    Conv2dShape s;
    int64_t bands_at_two;
  };
  const std::vector<Case> cases = {
      {shape(1, 96, 112, 112, 96, 3, 3, 2, 1, 1, 96), 2},   // 56 output rows: 3 bands, cut to 2
      {shape(1, 32, 112, 112, 32, 3, 3, 1, 1, 1, 32), 6},   // 112: 7 bands, cut to 6
      {shape(1, 144, 56, 56, 144, 3, 3, 2, 1, 1, 144), 2},  // 28 output rows from 56 input rows
      {shape(1, 144, 55, 55, 144, 3, 3, 2, 1, 1, 144), 1},  // from 55: whole planes
      {shape(1, 192, 28, 28, 192, 3, 3, 1, 1, 1, 192), 1},
      {shape(1, 192, 28, 28, 192, 3, 3, 2, 1, 1, 192), 1},
      {shape(1, 960, 7, 7, 960, 3, 3, 1, 1, 1, 960), 1},
  };
  for (const Case& c : cases) {
    const int64_t units = c.s.K / 16;
    EXPECT_EQ(detail::depthwise_split(c.s, 1, units).parts(), 1);
    const detail::DepthwiseSplit two = detail::depthwise_split(c.s, 2, units);
    EXPECT_EQ(two.bands, c.bands_at_two) << c.s.H << " rows, stride " << c.s.stride_h;
    EXPECT_GE(two.parts(), std::min<int64_t>(units, 2)) << c.s.H << " rows";
    if (!detail::depthwise_never_bands(c.s)) continue;
    for (int threads = 2; threads <= 8; ++threads) EXPECT_EQ(detail::depthwise_split(c.s, threads, units).bands, 1);
  }
}

TEST(Conv, PixelGemmTactic) {
  std::vector<ConvCase> cases = {
      {shape(1, 16, 7, 7, 40, 1, 1, 1, 0), Act::Relu, true, true},     // resnet layer4 1x1: runs of 7
      {shape(1, 24, 7, 7, 33, 3, 3, 1, 1), Act::Relu},                 // 3x3 on the phase grid
      {shape(2, 12, 14, 14, 20, 3, 3, 2, 1), Act::None, true, true},   // stride 2, batch 2
      {shape(1, 32, 14, 14, 64, 1, 1, 2, 0), Act::Silu, false, false}, // downsample 1x1 s2
      {shape(1, 5, 9, 23, 17, 3, 2, 1, 0, 2), Act::Clip},              // dilated, rows longer than a panel
      {shape(1, 3, 1, 1, 5, 3, 3, 1, 1), Act::Gelu},                   // 1x1 image, one pixel
      // One pixel read in place (squeeze-excite's 1x1s, a GEMV): partial panels, a residual,
      // a batch, and one big enough for two threads.
      {shape(1, 96, 1, 1, 37, 1, 1, 1, 0), Act::Silu, true, true},
      {shape(3, 40, 1, 1, 70, 1, 1, 1, 0), Act::Sigmoid, true, true},
      {shape(1, 1152, 1, 1, 2048, 1, 1, 1, 0), Act::None, false, false},
      // Big enough for two threads: parts of output pixels (or of output channels when the
      // weight is the bigger operand), each transposed into NCHW by its thread.
      {shape(1, 64, 14, 14, 96, 3, 3, 1, 1), Act::Relu, true, true},
      {shape(1, 960, 7, 7, 160, 1, 1, 1, 0), Act::None, true, true},  // weight-heavy: output channels
      {shape(1, 32, 28, 28, 48, 3, 3, 1, 1), Act::Relu, true, true},    // pixel-heavy: pixels
  };
  Conv2dShape asym = shape(1, 6, 9, 10, 18, 3, 2, 1, 0);
  asym.pad_top = 2, asym.pad_right = 1, asym.stride_w = 2;
  cases.push_back({asym, Act::LeakyRelu, true, true});
  for (const KernelTable* t : test::all_tables())
    for (const ConvCase& c : cases)
      for (int threads : {1, 2}) check(*t, ConvTactic::PixelGemm, c, threads, threads == 2);
}

TEST(Conv, DirectTactic) {
  std::vector<ConvCase> cases = {
      {shape(1, 16, 7, 7, 40, 1, 1, 1, 0), Act::Relu, true, true},     // flat 1x1: 49 pixels, wide tiles
      {shape(1, 24, 7, 7, 33, 3, 3, 1, 1), Act::Relu},                 // padded copy, wide, odd channels
      {shape(2, 12, 14, 14, 20, 3, 3, 2, 1), Act::None, true, true},   // stride 2, batch 2
      {shape(1, 32, 14, 14, 64, 1, 1, 2, 0), Act::Silu, false, false}, // downsample 1x1 s2, unpadded
      {shape(1, 5, 9, 23, 17, 3, 2, 1, 0, 2), Act::Clip},              // dilated, rows longer than a tile
      {shape(1, 3, 1, 1, 5, 3, 3, 1, 1), Act::Gelu},                   // 1x1 image, one pixel
      {shape(1, 3, 23, 23, 16, 7, 7, 2, 3), Act::Relu},                // resnet stem-like: taps inner (7-step segments)
      {shape(1, 2, 11, 21, 12, 3, 5, 1, 2, 2), Act::Relu, true, true}, // taps inner, dilated 2, rows clipped by padding
      {shape(1, 1, 6, 40, 8, 1, 9, 2, 4), Act::None},                  // one channel, a 1x9 window at stride 2
      {shape(1, 200, 9, 30, 70, 3, 3, 1, 1), Act::None, true, true},   // K = 1800: three K blocks, 3 units
      {shape(1, 900, 6, 6, 36, 1, 1, 1, 0), Act::HardSwish},           // flat, two K blocks, wide
      {shape(1, 64, 40, 40, 16, 3, 3, 1, 1), Act::Relu},               // input over 256 KiB: two chunks
      // Tiles wrapping to the next output row (mr 6 on AVX2/scalar, 14 on AVX-512):
      {shape(1, 40, 7, 7, 40, 3, 3, 1, 1), Act::Relu, true, true},     // 7-wide: 6+1 / pairs of rows
      {shape(1, 24, 14, 14, 36, 1, 1, 2, 0), Act::None},               // 1x1 s2 to 7x7, stride 2
      {shape(1, 16, 5, 3, 20, 3, 3, 1, 1), Act::Silu, false, true},    // 5x3 output: pairs of 3-wide rows
      {shape(1, 48, 14, 14, 40, 3, 3, 1, 1), Act::Relu, true, true},   // 14-wide: every split 1..5 on mr 6
      {shape(1, 8, 4, 4, 16, 3, 3, 1, 1), Act::None},                  // 4-wide rows, narrower than mr
      {shape(1, 16, 3, 8, 20, 3, 3, 1, 1), Act::Relu, true, true},     // 8x3: last short tile on two rows (mr 14)
      {shape(2, 64, 28, 28, 24, 3, 3, 2, 1), Act::Relu},               // 14x14 stride 2, batch 2, two chunks
      {shape(1, 128, 48, 40, 24, 3, 3, 1, 1), Act::Relu, true, true},  // padded copy cut by rows on 2 threads
      // The channel-blocked copy (channels a multiple of 8, padded): dilated, stride 2 on odd
      // sizes with wrap tiles, K blocks that end on whole channel blocks.
      {shape(1, 16, 9, 23, 17, 3, 2, 1, 1, 2), Act::Clip, true, true},  // dilated 2, 3x2 window
      {shape(2, 24, 15, 13, 20, 3, 3, 2, 1), Act::Relu, true, true},    // stride 2, 8x7 output
      {shape(1, 96, 10, 10, 40, 3, 3, 1, 1), Act::None},                // KK = 864: 2 K blocks of 432
      {shape(1, 88, 6, 6, 16, 3, 3, 1, 1), Act::Relu},                  // KK = 792: kc 396 rounded up to 400
      // Weight-heavy 7x7 (one chunk) whose wide units the threads cannot share evenly: on 2
      // threads a whole unit each and half the tiles of the one left over (3 units; 64 + 64 +
      // 32 channels, the last narrow; 5 units of a 3x3 window over two K blocks).
      {shape(1, 1152, 7, 7, 192, 1, 1, 1, 0), Act::Silu, true, true},
      {shape(1, 480, 7, 7, 160, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 96, 7, 7, 320, 3, 3, 1, 1), Act::None, true, false},
      // At most NR / 2 output channels: the half-panel tile for whole mr-pixel tiles.
      {shape(1, 32, 28, 28, 16, 1, 1, 1, 0), Act::Relu, true, true},   // flat 1x1, K = 16
      {shape(1, 5, 30, 30, 12, 3, 3, 2, 1), Act::Silu, true, true},    // stride 2, 15-wide rows, K = 12
      // 17..24 of a panel's columns: AVX-512's tile with a half-width last vector.
      {shape(1, 32, 28, 28, 24, 1, 1, 1, 0), Act::Silu, true, true},   // flat 1x1, K = 24
      {shape(1, 16, 14, 14, 56, 3, 3, 1, 1), Act::Relu, true, true},   // K = 56: 32 + 24
      {shape(1, 8, 14, 28, 20, 3, 3, 2, 1), Act::None, true, false},   // stride 2, K = 20
      // Padding as deep as the window: output rows whose window lies wholly in the padding
      // (all of K, on zeros) next to rows of one and two window rows.
      {shape(1, 16, 4, 6, 24, 3, 3, 1, 3), Act::Relu, true, true},
  };
  Conv2dShape asym = shape(1, 6, 9, 10, 18, 3, 2, 1, 0);
  asym.pad_top = 2, asym.pad_right = 1, asym.stride_w = 2;
  cases.push_back({asym, Act::LeakyRelu, true, true});
  asym.C = 16;  // the same, channel-blocked
  cases.push_back({asym, Act::Relu});
  for (const KernelTable* t : test::all_tables())
    for (const ConvCase& c : cases)
      for (int threads : {1, 2}) check(*t, ConvTactic::Direct, c, threads, threads == 2);
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, shape(1, 8, 9, 9, 8, 3, 3, 3, 1)),
            "stride_w above 2 (the micro-kernel's pixel strides are 1 and 2)");
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, shape(1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 2)), "grouped");
  EXPECT_STREQ(conv_tactic_name(ConvTactic::Direct), "direct");
}

// The 6 x 64 tile (Conv2dShape::p64, KernelTable::conv_tile_p64: AVX-512) against the reference
// on every table that has it, then bit for bit against the 14 x 32 tile (weights packed again),
// over every pixel stride: planar 1 (5 channels) and 2 (a stem-like 7x7/2), blocked 8 and 16
// (8-channel blocks at stride 2, and a copy in 16-channel blocks from 8-channel ones); rows that
// wrap after every split (28 = 4 x 6 + 4, 31, 25) and rows of whole tiles (30), two K blocks,
// two column units, batch 2, a residual, blocked output (the epilogue in the tile's stores),
// weights streamed into L2; then when lowering takes it, and the shapes it refuses.
TEST(Conv, SixBySixtyFourTile) {
  const std::vector<ConvCase> cases = {
      {shape(1, 16, 28, 28, 64, 3, 3, 1, 1), Act::Relu, true, true},
      {shape(1, 3, 61, 61, 64, 7, 7, 2, 3), Act::Relu, true, false},
      {shape(1, 5, 26, 30, 128, 3, 3, 1, 1), Act::Silu, true, true},
      {shape(2, 128, 30, 30, 64, 3, 3, 1, 1), Act::None, false, true},
      {shape(1, 64, 50, 50, 64, 3, 3, 2, 1), Act::Clip, true, true},
  };
  const KernelTable& host = kernel_table();
  for (const ConvCase& c : cases)
    EXPECT_EQ(conv_direct_takes_p64(c.s), host.conv_shape_p64.nr > 0) << c.s.C << " -> " << c.s.K;
  if (host.conv_shape_p64.nr == 0) {
    Conv2dShape s = cases[0].s;
    s.p64 = true;
    EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, s), "the 6 x 64 tile (p64) needs AVX-512");
    GTEST_SKIP() << "no 6 x 64 tile on " << isa_name(host.isa);
  }
  for (const KernelTable* t : test::all_tables()) {
    if (t->conv_shape_p64.nr == 0) continue;
    for (ConvCase c : cases)
      for (int blk = 0; blk < 2; ++blk) {
        c.s.p64 = true;
        c.s.x_blocked = c.s.y_blocked = blk == 1 && c.s.C % kConvBlock == 0;
        if (blk == 1 && !c.s.x_blocked) continue;
        for (int threads : {1, 2}) check(*t, ConvTactic::Direct, c, threads, threads == 2);
      }
  }
  std::vector<Conv2dShape> same;
  for (const ConvCase& c : cases) same.push_back(c.s);
  same.push_back(shape(1, 256, 24, 24, 256, 3, 3, 1, 1));  // 2.25 MiB of weights: streamed
  for (Conv2dShape s : same)
    for (auto [xb, b] : {std::pair<int64_t, int64_t>{0, 0}, {kConvBlock, kConvBlock}, {kConvBlock, kConvBlockWide},
                         {kConvBlockWide, kConvBlockWide}}) {
      if (b != 0 && (s.C % b != 0 || (xb == kConvBlockWide && s.stride_w != 1))) continue;
      s.x_blocked = s.y_blocked = b != 0;
      s.x_block = xb != 0 ? xb : kConvBlock, s.y_block = b != 0 ? b : kConvBlock;
      const int64_t OHW = s.out_h() * s.out_w();
      const auto x0 = random_vec(s.N * s.C * s.H * s.W, 51), w = random_vec(s.K * s.C * s.R * s.S, 52);
      const auto x = s.x_blocked ? blocked(x0, s.N, s.C, s.H * s.W, false, s.x_block) : x0;
      const auto bias = random_vec(s.K, 53);
      const auto res0 = random_vec(s.N * s.K * OHW, 54);
      const auto res = s.y_blocked ? blocked(res0, s.N, s.K, OHW, false, s.y_block) : res0;
      Epilogue e;
      e.act = Act::Relu, e.bias = bias.data(), e.bias_per_row = true, e.residual = res.data(), e.ldr = OHW;
      std::vector<float> outs[2];
      for (int on = 0; on < 2; ++on) {
        s.p64 = on == 1;
        std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
        conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
        outs[on].resize(res.size());
        conv2d(ConvTactic::Direct, s, x.data(), packed.data(), outs[on].data(), e, nullptr, 2);
      }
      for (size_t i = 0; i < outs[0].size(); ++i)
        ASSERT_EQ(outs[0][i], outs[1][i]) << "C=" << s.C << " K=" << s.K << " " << s.out_h() << "x" << s.out_w()
                                          << " blocks " << xb << "/" << b << " at " << i;
    }
  // Not taken: channels not a multiple of 64, rows under 24, a 1x1, a grouped window, or off.
  EXPECT_TRUE(conv_direct_takes_p64(shape(1, 64, 24, 24, 64, 3, 3, 1, 1)));
  EXPECT_FALSE(conv_direct_takes_p64(shape(1, 16, 28, 28, 96, 3, 3, 1, 1)));
  EXPECT_FALSE(conv_direct_takes_p64(shape(1, 64, 14, 14, 64, 3, 3, 1, 1)));
  EXPECT_FALSE(conv_direct_takes_p64(shape(1, 512, 7, 7, 512, 3, 3, 1, 1)));
  EXPECT_FALSE(conv_direct_takes_p64(shape(1, 64, 28, 28, 64, 1, 1, 1, 0)));
  EXPECT_FALSE(conv_direct_takes_p64(shape(1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 2)));
  detail::direct_p64 = false;
  EXPECT_FALSE(conv_direct_takes_p64(cases[0].s));
  detail::direct_p64 = true;
  Conv2dShape bad = shape(1, 16, 28, 28, 96, 3, 3, 1, 1);
  bad.p64 = true;
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, bad),
            "the 6 x 64 tile (p64) needs output channels a multiple of 64");
  bad = shape(1, 64, 28, 28, 64, 1, 1, 1, 0);
  bad.p64 = true;
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, bad), "the 6 x 64 tile (p64) is for windows, not 1x1");
}

// Batches of images too small for a parallel region each (8x8, 73K multiply-adds) but not
// together: on 2 threads each thread takes a share of the images (conv2d_on's batch split),
// with the residual and the workspace slots offset per share; 9 images give unequal shares.
// Channel-blocked activations in and out (Conv2dShape::x_blocked, y_blocked): the padded copy
// from blocked rows, in-place reads when unpadded (1x1 stride 2, flat 1x1, a 3x3 without
// padding), the blocked output with its blocked residual, K blocks, wide and wrap tiles, batch 2.
TEST(Conv, DirectTacticOnBlockedActivations) {
  const std::vector<ConvCase> cases = {
      {shape(1, 16, 14, 14, 24, 3, 3, 1, 1), Act::Relu, true, true},   // padded, 14-wide rows
      {shape(2, 24, 15, 13, 32, 3, 3, 2, 1), Act::Relu, true, true},   // stride 2 on odd sizes, batch 2
      {shape(1, 32, 14, 14, 64, 1, 1, 2, 0), Act::None, true, true},   // downsample 1x1 s2, in place
      {shape(1, 16, 7, 7, 40, 1, 1, 1, 0), Act::Relu, true, true},     // flat 1x1, wide tiles
      {shape(1, 16, 9, 11, 8, 3, 3, 1, 0), Act::Silu, false, false},   // unpadded 3x3, in place
      {shape(1, 200, 9, 30, 72, 3, 3, 1, 1), Act::Relu, true, true},   // three K blocks
      {shape(1, 320, 7, 7, 160, 1, 1, 1, 0), Act::Relu, true, true},   // one chunk, 5 panels in 4 groups
      {shape(1, 144, 28, 28, 24, 1, 1, 1, 0), Act::None, true, true},  // K = 24: a half-width last vector
      {shape(1, 144, 14, 14, 56, 1, 1, 1, 0), Act::Silu, true, true},  // K = 56: 32 + 24
      {shape(1, 32, 28, 28, 16, 1, 1, 1, 0), Act::Clip, true, true},   // K = 16: half-panel tiles
      {shape(1, 24, 30, 30, 8, 3, 3, 2, 1), Act::Relu, true, true},    // padded, stride 2, K = 8
      {shape(1, 64, 40, 40, 16, 3, 3, 1, 1), Act::Relu, true, true},   // two chunks
      {shape(1, 40, 7, 7, 40, 3, 3, 1, 1), Act::Relu, true, true},     // wrap tiles on 7-wide rows
      {shape(1, 16, 4, 6, 24, 3, 3, 1, 3), Act::Relu, true, true},     // rows wholly in the padding
      {shape(1, 96, 10, 10, 40, 3, 3, 1, 1), Act::Relu, true, true},   // rows skipping part of a K block
      // A bias and the activation alone: the fused store's flag-free epilogue (16 -> 96 1x1 as
      // mobilenet_v2's first expand, a 3x3 with padding).
      {shape(1, 16, 28, 28, 96, 1, 1, 1, 0), Act::Clip, true, false},
      {shape(1, 24, 14, 14, 40, 3, 3, 1, 1), Act::Relu, true, false},
  };
  for (const KernelTable* t : test::all_tables())
    for (ConvCase c : cases)
      for (auto [xb, yb] : {std::pair{true, true}, {true, false}, {false, true}}) {
        c.s.x_blocked = xb, c.s.y_blocked = yb;
        for (int threads : {1, 2}) check(*t, ConvTactic::Direct, c, threads, threads == 2);
      }
  Conv2dShape odd = shape(1, 12, 8, 8, 16, 3, 3, 1, 1);
  odd.x_blocked = true;
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, odd), "channel-blocked input with channels not a multiple of 8");
  odd = shape(1, 16, 8, 8, 20, 3, 3, 1, 1);
  odd.y_blocked = true;
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, odd), "channel-blocked output with channels not a multiple of 8");
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Gemm, odd).rfind("channel-blocked activations run only on the direct tactic", 0), 0u);
}

// The direct tactic's 1x1 schedule over channel batches (conv_direct_1x1.cpp), where the host
// table has its tile (AVX-512): tiles of 7 pixels and a short one at each row's end (10-, 9- and
// 15-wide rows), one batch, two (200 channels: 128 + 72) and five (520), batch 2, the
// threads splitting pixels (192 channels on 28x28; mobilenet_v2's expands, whose weights
// outweigh their input but are small) or, the weight larger than the input and over 512 KiB,
// 64-channel groups (512 -> 512 on 14x14; 3 and 9 groups: whole groups and shares of the
// last's tiles), bias, residual and the fused activations, 1 and 2 threads, against the
// reference; stride 2 on odd widths. With one batch the floats are the general
// schedule's; the output written over its residual (as the planner lays out resnet50's last 1x1
// of a block) holds the very floats of a separate one.
TEST(Conv, Direct1x1ScheduleOnBlockedActivations) {
  const std::vector<ConvCase> cases = {
      {shape(1, 16, 10, 10, 64, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(2, 200, 9, 9, 128, 1, 1, 1, 0), Act::Clip, true, true},
      {shape(1, 64, 28, 28, 192, 1, 1, 1, 0), Act::None, true, false},
      {shape(1, 256, 14, 14, 512, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 512, 14, 14, 512, 1, 1, 1, 0), Act::Relu, true, true},
      // Groups the threads cannot share evenly: a whole group each and half the tiles of the
      // last (3 groups), four each and half of the ninth.
      {shape(1, 768, 12, 12, 192, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 256, 14, 14, 576, 1, 1, 1, 0), Act::Clip, true, false},
      // mobilenet_v2's 96 -> 576 and 64 -> 192 on 12x12: pixels.
      {shape(1, 64, 12, 12, 192, 1, 1, 1, 0), Act::Relu, true, true},
      {shape(1, 96, 14, 14, 576, 1, 1, 1, 0), Act::Clip, true, false},
      {shape(1, 520, 15, 15, 64, 1, 1, 1, 0), Act::LeakyRelu, false, true},
      // Stride 2 (the downsample 1x1s): odd input widths, two batches.
      {shape(1, 64, 28, 27, 128, 1, 1, 2, 0), Act::Relu, true, true},
      {shape(2, 200, 30, 29, 64, 1, 1, 2, 0), Act::None, true, true},
  };
  const KernelTable& host = kernel_table();
  const bool host_runs = host.conv_1x1_blk[0][0] != nullptr;
  for (ConvCase c : cases) {
    c.s.x_blocked = c.s.y_blocked = true;
    Epilogue e;
    e.act = c.act;
    if (host_runs) {
      EXPECT_TRUE(detail::direct_1x1_applies(host, c.s, e)) << c.s.C << " -> " << c.s.K;
    }
    for (const KernelTable* t : test::all_tables())
      for (int threads : {1, 2}) check(*t, ConvTactic::Direct, c, threads, threads == 2);
  }
  // Which split the threads take: groups for the weights over 512 KiB that outweigh the input.
  auto splits_groups = [](int64_t C, int64_t H, int64_t K) {
    return detail::conv_1x1_splits_groups(shape(1, C, H, H, K, 1, 1, 1, 0));
  };
  EXPECT_FALSE(splits_groups(96, 14, 576));   // 216 KiB
  EXPECT_FALSE(splits_groups(256, 14, 512));  // 512 KiB: not over
  EXPECT_TRUE(splits_groups(256, 14, 576));
  EXPECT_TRUE(splits_groups(512, 14, 512));
  EXPECT_TRUE(splits_groups(768, 12, 192));
  EXPECT_FALSE(splits_groups(512, 28, 512));  // 1 MiB, but 784 pixels of input outweigh it
  // Not for alpha != 1 (the first batch adds the bias), K not a multiple of 64, or 7x7 outputs
  // (7 tiles).
  Conv2dShape s = shape(1, 64, 14, 14, 64, 1, 1, 1, 0);
  s.x_blocked = s.y_blocked = true;
  Epilogue scaled;
  scaled.alpha = 0.5f;
  EXPECT_FALSE(detail::direct_1x1_applies(host, s, scaled));
  s.K = 96;
  EXPECT_FALSE(detail::direct_1x1_applies(host, s, Epilogue{}));
  s.K = 64, s.H = s.W = 7;
  EXPECT_FALSE(detail::direct_1x1_applies(host, s, Epilogue{}));
  // One batch against the general schedule, and in place over the residual with two batches.
  for (int64_t C : {128, 200}) {
    s = shape(1, C, 14, 14, 128, 1, 1, 1, 0);
    s.x_blocked = s.y_blocked = true;
    const int64_t OHW = s.out_h() * s.out_w();
    const auto x = blocked(random_vec(s.C * OHW, 21), 1, s.C, OHW);
    const auto w = random_vec(s.K * s.C, 22), bias = random_vec(s.K, 23), res = random_vec(s.K * OHW, 24);
    std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
    conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
    Epilogue er;
    er.act = Act::Relu, er.bias = bias.data(), er.bias_per_row = true, er.residual = res.data(), er.ldr = OHW;
    std::vector<float> apart(res.size()), over = res;
    conv2d(ConvTactic::Direct, s, x.data(), packed.data(), apart.data(), er, nullptr, 2);
    if (C == 128 && host_runs) {
      std::vector<float> general(res.size());
      detail::direct_1x1_enabled = false;
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), general.data(), er, nullptr, 2);
      detail::direct_1x1_enabled = true;
      for (size_t i = 0; i < general.size(); ++i) ASSERT_EQ(apart[i], general[i]) << "one batch, at " << i;
      continue;
    }
    er.residual = over.data();
    conv2d(ConvTactic::Direct, s, x.data(), packed.data(), over.data(), er, nullptr, 2);
    for (size_t i = 0; i < over.size(); ++i) ASSERT_EQ(over[i], apart[i]) << "in place, at " << i;
  }
}

// Tile i's share of n tiles' lines computed from i with divisions, as the tile loops did before
// L2Shares stepped through them.
ConvL2Lines divided_share(const float* base, int64_t panel_lines, int64_t panels, int64_t panel_stride, int64_t i,
                          int64_t n) {
  ConvL2Lines l2;
  const int64_t lines = panel_lines * panels;
  if (!base || lines <= 0 || n <= 0) return l2;
  const int64_t share = (lines + n - 1) / n;
  const int64_t l0 = std::min(lines, i * share), l1 = std::min(lines, l0 + share);
  if (l1 <= l0) return l2;
  auto line = [&](int64_t l) { return base + (l / panel_lines) * panel_stride + (l % panel_lines) * kLineFloats; };
  const int64_t split = std::clamp((l0 / panel_lines + 1) * panel_lines, l0, l1);  // the next panel's start
  l2.lines = line(l0), l2.count = split - l0;
  if (l1 > split) l2.lines2 = line(split), l2.count2 = std::min(l1 - split, panel_lines);
  return l2;
}

// L2Shares steps through the tiles' shares without dividing: the same ranges as the divisions
// tile by tile, for shares shorter and longer than a panel, one to three panels, a null base.
TEST(Conv, WeightStreamSharesStepLikeTheDivisions) {
  std::vector<float> buf(4096);
  for (const float* base : {static_cast<const float*>(buf.data()), static_cast<const float*>(nullptr)})
    for (int64_t panel_lines : {1, 7, 10, 48})
      for (int64_t panels : {1, 2, 3})
        for (int64_t n : {1, 2, 3, 7, 19, 20, 25, 200}) {
          detail::L2Shares shares(base, panel_lines, panels, 1000, n);
          for (int64_t i = 0; i < n; ++i) {
            const ConvL2Lines want = divided_share(base, panel_lines, panels, 1000, i, n), got = shares.next();
            EXPECT_EQ(got.lines, want.lines) << panel_lines << " " << panels << " " << n << " " << i;
            EXPECT_EQ(got.count, want.count) << panel_lines << " " << panels << " " << n << " " << i;
            EXPECT_EQ(got.lines2, want.lines2) << panel_lines << " " << panels << " " << n << " " << i;
            EXPECT_EQ(got.count2, want.count2) << panel_lines << " " << panels << " " << n << " " << i;
          }
        }
}

// The shares of a weight block's lines that the tiles over the block before it fetch into L2
// (detail::L2Shares, ConvL2Lines): every line of both panels exactly once whatever the number of
// tiles, in order, a share crossing into the second panel split in two ranges. The outputs with
// and without the fetches are the same floats (the fetches only move lines between caches):
// weights of 4 MiB and 2.4 MiB, the general and the 1x1 schedule.
TEST(Conv, WeightStreamSharesCoverTheNextBlockOnce) {
  std::vector<float> buf(2048);
  const float* base = buf.data();
  constexpr int64_t kPanelLines = 10, kStride = 1000;
  for (int64_t n : {1, 2, 3, 7, 19, 20, 25}) {
    std::vector<int> hits(2 * kPanelLines, 0);
    int64_t next = 0;  // the line the next share must start at (shares in order)
    auto mark = [&](const float* at, int64_t count) {
      for (int64_t k = 0; k < count; ++k) {
        const int64_t off = (at - base) + k * 16, panel = off / kStride, line = (off % kStride) / 16;
        ASSERT_TRUE(panel < 2 && off % kStride % 16 == 0 && line < kPanelLines) << "n=" << n << " offset " << off;
        ASSERT_EQ(panel * kPanelLines + line, next) << "n=" << n;
        ++hits[panel * kPanelLines + line], ++next;
      }
    };
    detail::L2Shares shares(base, kPanelLines, 2, kStride, n);
    for (int64_t i = 0; i < n; ++i) {
      const ConvL2Lines l2 = shares.next();
      mark(l2.lines, l2.count);
      mark(l2.lines2, l2.count2);
    }
    for (int h : hits) EXPECT_EQ(h, 1) << "n=" << n;
  }
  detail::L2Shares thirds(base, kPanelLines, 2, kStride, 3);
  thirds.next();
  const ConvL2Lines mid = thirds.next();  // tile 1 of 3: lines 7..13
  EXPECT_EQ(mid.lines, base + 7 * 16);
  EXPECT_EQ(mid.count, 3);
  EXPECT_EQ(mid.lines2, base + kStride);
  EXPECT_EQ(mid.count2, 4);
  EXPECT_EQ(detail::L2Shares(nullptr, kPanelLines, 2, kStride, 3).next().count, 0);
  // Same floats with and without the fetches.
  // (mobilenet_v2's 160 -> 960 and 96 -> 576: 0.6 and 0.2 MiB, fetched from L3 inside the model.)
  for (Conv2dShape s : {shape(1, 2048, 7, 7, 512, 1, 1, 1, 0), shape(1, 256, 14, 14, 256, 3, 3, 1, 1),
                        shape(1, 1024, 14, 14, 256, 1, 1, 1, 0), shape(1, 160, 7, 7, 960, 1, 1, 1, 0),
                        shape(1, 96, 14, 14, 576, 1, 1, 1, 0)}) {
    s.x_blocked = s.y_blocked = true;
    ASSERT_GE(4.0 * s.C * s.R * s.S * s.K, detail::kStreamWeightBytes);
    const int64_t OHW = s.out_h() * s.out_w();
    const auto x = random_vec(s.C * s.H * s.W, 41), w = random_vec(s.K * s.C * s.R * s.S, 42), bias = random_vec(s.K, 43);
    std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
    conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
    Epilogue e;
    e.act = Act::Relu, e.bias = bias.data(), e.bias_per_row = true;
    std::vector<float> on(s.K * OHW), off(s.K * OHW);
    for (int threads : {1, 2}) {
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), on.data(), e, nullptr, threads);
      detail::direct_stream_weights = false;
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), off.data(), e, nullptr, threads);
      detail::direct_stream_weights = true;
      for (size_t i = 0; i < on.size(); ++i) ASSERT_EQ(on[i], off[i]) << "C=" << s.C << " at " << i;
    }
  }
}

// Tapered parts (tapered_start: each thread's share of tiles, items or channel blocks cut into
// parts that shrink toward its end) move work between the pieces, never change it: the floats
// are the even cut's, bit for bit, on 2 and 3 threads. The layers: the 1x1 schedule cutting
// tiles (mobilenet_v2's 32 -> 192 at 28x28) and groups (a weight-heavy 1x1 at 14x14), the general
// schedule with more items than pieces (a 3x3 whose 3.2 MB input makes 13 chunks), and the
// blocked depthwise kernel cutting channel blocks.
TEST(Conv, TaperedPartsAreTheEvenCutsFloats) {
  ASSERT_TRUE(tapered_parts_on());
  struct Layer {
    Conv2dShape s;
    ConvTactic tactic;
  };
  Conv2dShape depthwise = shape(1, 144, 28, 28, 144, 3, 3, 1, 1, 1, 144);
  const std::vector<Layer> layers = {
      {shape(1, 32, 28, 28, 192, 1, 1, 1, 0), ConvTactic::Direct},
      {shape(1, 512, 14, 14, 1024, 1, 1, 1, 0), ConvTactic::Direct},
      {shape(1, 64, 112, 112, 64, 3, 3, 1, 1), ConvTactic::Direct},
      {depthwise, ConvTactic::Depthwise},
  };
  for (Layer c : layers) {
    Conv2dShape& s = c.s;
    s.x_blocked = s.y_blocked = true;
    ASSERT_EQ(conv_tactic_unsupported(c.tactic, s), "") << s.C << " -> " << s.K;
    const int64_t out = s.K * s.out_h() * s.out_w();
    const auto x = random_vec(s.C * s.H * s.W, 61), w = random_vec(s.K * (s.C / s.group) * s.R * s.S, 62, -0.5f, 0.5f);
    const auto bias = random_vec(s.K, 63);
    std::vector<float> packed(conv_packed_weight_floats(c.tactic, s));
    conv_pack_weight(c.tactic, s, w.data(), packed.data());
    Epilogue e;
    e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f, e.bias = bias.data(), e.bias_per_row = true;
    for (int threads : {2, 3}) {
      std::vector<float> tapered(out, -1.f), even(out, -2.f);
      conv2d(c.tactic, s, x.data(), packed.data(), tapered.data(), e, nullptr, threads);
      set_tapered_parts(false);
      conv2d(c.tactic, s, x.data(), packed.data(), even.data(), e, nullptr, threads);
      set_tapered_parts(true);
      size_t differ = 0, nonzero = 0;
      for (int64_t i = 0; i < out; ++i) {
        differ += std::memcmp(&tapered[i], &even[i], sizeof(float)) != 0;
        nonzero += tapered[i] != 0.f;
      }
      EXPECT_EQ(differ, 0u) << conv_tactic_name(c.tactic) << " " << s.C << " -> " << s.K << " at " << s.H << "x"
                            << s.W << ", " << threads << " threads";
      EXPECT_GT(nonzero, static_cast<size_t>(out / 4));
    }
  }
}

// Epilogue::warm: the general direct schedule's tiles prefetch a later kernel's weights as
// they compute, which moves no float. mobilenet_v2's last 1x1 (320 -> 1280 at 7x7: 7 tiles, the
// general schedule) fetches ahead; its 32 -> 192 at 28x28 runs the 1x1 schedule and a GEMM
// tactic none, so conv_fetches_ahead says no and they ignore it. Warm ranges of a classifier's
// 4.9 MiB (about 1.8 lines a K step), of a few lines, and of 16 MiB (more lines than four a
// step reach).
TEST(Conv, FetchingAheadLeavesTheFloats) {
  Conv2dShape last = shape(1, 320, 7, 7, 1280, 1, 1, 1, 0), expand = shape(1, 32, 28, 28, 192, 1, 1, 1, 0);
  last.x_blocked = last.y_blocked = expand.x_blocked = expand.y_blocked = true;
  Epilogue e;
  e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
  for (int threads : {1, 2}) {
    EXPECT_TRUE(conv_fetches_ahead(ConvTactic::Direct, last, e, threads));
    EXPECT_FALSE(conv_fetches_ahead(ConvTactic::Direct, expand, e, threads));
    EXPECT_FALSE(conv_fetches_ahead(ConvTactic::Gemm, shape(1, 320, 7, 7, 1280, 1, 1, 1, 0), e, threads));
  }
  const std::vector<float> weights_later = random_vec(size_t{4} << 20, 70);
  for (const Conv2dShape& s : {last, expand}) {
    const int64_t out = s.K * s.out_h() * s.out_w();
    const auto x = random_vec(s.C * s.H * s.W, 71), w = random_vec(s.K * s.C, 72, -0.5f, 0.5f);
    const auto bias = random_vec(s.K, 73);
    std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
    conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
    e.bias = bias.data(), e.bias_per_row = true;
    for (int threads : {1, 2}) {
      std::vector<float> plain(out, -1.f);
      Epilogue none = e;
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), plain.data(), none, nullptr, threads);
      for (int64_t floats : {int64_t{1280 * 1024}, int64_t{40}, int64_t{4} << 20}) {
        std::vector<float> fetched(out, -2.f);
        Epilogue warm = e;
        warm.warm = weights_later.data(), warm.warm_floats = floats;
        conv2d(ConvTactic::Direct, s, x.data(), packed.data(), fetched.data(), warm, nullptr, threads);
        EXPECT_EQ(std::memcmp(plain.data(), fetched.data(), out * sizeof(float)), 0)
            << s.C << " -> " << s.K << " at " << s.H << "x" << s.W << ", " << threads << " threads, " << floats;
      }
      size_t nonzero = 0;
      for (float v : plain) nonzero += v != 0.f;
      EXPECT_GT(nonzero, static_cast<size_t>(out / 4));
    }
  }
}

// The three-quarter tiles' pixel pairs (pair_tail.h: two pixels' last 8 columns in one 512-bit
// accumulator) are the half-width FMAs' floats, bit for bit, and both match the reference: 24
// output channels (and 56: a 32-column unit, then 24) from 8- and 16-channel blocks, from planar
// input at stride 1 and 2 (the tile's pixel strides 1, 2, 8, 16), a residual, 1 and 2 threads.
TEST(Conv, ThreeQuarterPairsAreTheHalfWidthTilesFloats) {
  const KernelTable* t = kernel_table_for(Isa::Avx512);
  if (!t) GTEST_SKIP() << "no AVX-512 table on this CPU";
  struct Pair {
    Conv2dShape s;
    int64_t block;  // 0: planar input, blocked output
    Act act;
    bool residual;
  };
  const std::vector<Pair> cases = {
      {shape(1, 96, 28, 28, 24, 1, 1, 1, 0), kConvBlock, Act::None, true},  // mobilenet_v2's 96 -> 24
      {shape(1, 144, 14, 14, 24, 1, 1, 1, 0), kConvBlockWide, Act::Clip, false},
      {shape(2, 16, 14, 14, 56, 3, 3, 1, 1), kConvBlock, Act::Relu, false},
      {shape(1, 3, 28, 28, 24, 3, 3, 2, 1), 0, Act::Clip, false},
      {shape(1, 4, 14, 14, 24, 3, 3, 1, 1), 0, Act::None, true},
  };
  const bool was = detail::three_quarter_pairs_enabled;
  for (const Pair& c : cases) {
    Conv2dShape s = c.s;
    s.y_blocked = true;
    if (c.block) s.x_blocked = true, s.x_block = c.block;
    ASSERT_EQ(conv_tactic_unsupported(ConvTactic::Direct, s), "") << s.C << " -> " << s.K;
    const int64_t OHW = s.out_h() * s.out_w(), out = s.N * s.K * OHW;
    const auto x = random_vec(s.N * s.C * s.H * s.W, 61), w = random_vec(s.K * s.C * s.R * s.S, 62, -0.5f, 0.5f);
    const auto bias = random_vec(s.K, 63), z = random_vec(out, 64);
    const auto xb = c.block ? blocked(x, s.N, s.C, s.H * s.W, false, c.block) : x;
    const auto zb = blocked(z, s.N, s.K, OHW);
    std::vector<float> packed(conv_packed_weight_floats_on(*t, ConvTactic::Direct, s));
    conv_pack_weight_on(*t, ConvTactic::Direct, s, w.data(), packed.data());
    Epilogue e;
    e.act = c.act, e.act_alpha = 0.f, e.act_beta = 6.f, e.bias = bias.data(), e.bias_per_row = true;
    if (c.residual) e.residual = zb.data(), e.ldr = OHW;
    // The reference, in double, on the plain layouts.
    std::vector<double> ref(out);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t k = 0; k < s.K; ++k)
        for (int64_t oh = 0; oh < s.out_h(); ++oh)
          for (int64_t ow = 0; ow < s.out_w(); ++ow) {
            double acc = 0;
            for (int64_t ch = 0; ch < s.C; ++ch)
              for (int64_t r = 0; r < s.R; ++r)
                for (int64_t q = 0; q < s.S; ++q) {
                  const int64_t ih = oh * s.stride_h - s.pad_top + r, iw = ow * s.stride_w - s.pad_left + q;
                  if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                  acc += double(x[((n * s.C + ch) * s.H + ih) * s.W + iw]) * w[((k * s.C + ch) * s.R + r) * s.S + q];
                }
            const int64_t i = (n * s.K + k) * OHW + oh * s.out_w() + ow;
            acc += bias[k];
            if (c.residual) acc += z[i];
            if (c.act == Act::Relu) acc = std::max(acc, 0.0);
            if (c.act == Act::Clip) acc = std::min(std::max(acc, 0.0), 6.0);
            ref[i] = acc;
          }
    for (int threads : {1, 2}) {
      std::vector<float> pairs(out, -1.f), halves(out, -2.f);
      detail::three_quarter_pairs_enabled = true;
      conv2d_on(*t, ConvTactic::Direct, s, xb.data(), packed.data(), pairs.data(), e, nullptr, threads);
      detail::three_quarter_pairs_enabled = false;
      conv2d_on(*t, ConvTactic::Direct, s, xb.data(), packed.data(), halves.data(), e, nullptr, threads);
      detail::three_quarter_pairs_enabled = was;
      const auto plain = blocked(pairs, s.N, s.K, OHW, /*back=*/true);
      size_t differ = 0;
      double worst = 0;
      for (int64_t i = 0; i < out; ++i) {
        differ += std::memcmp(&pairs[i], &halves[i], sizeof(float)) != 0;
        worst = std::max(worst, std::abs(plain[i] - ref[i]));
      }
      EXPECT_EQ(differ, 0u) << s.C << " -> " << s.K << " threads " << threads;
      EXPECT_LT(worst, 1e-4) << s.C << " -> " << s.K << " threads " << threads;
    }
  }
}

// The general schedule's flat runs (a 1x1's tiles in a loop of bare calls, direct_flat_runs)
// are the per-tile path's calls with the same arguments: the same floats, bit for bit, on every
// table, with a residual, a short last tile (13x13 pixels), half- and three-quarter-width units
// (K = 144: 4 x 32 + 16; K = 24), wide tiles (K = 40), 8- and 16-channel blocks and 1-3
// threads. (DirectTacticOnBlockedActivations checks the same shapes against the reference.)
TEST(Conv, FlatRunsAreThePerTilePathsFloats) {
  struct Flat {
    Conv2dShape s;
    Act act;
    bool residual;
  };
  const std::vector<Flat> cases = {
      {shape(1, 16, 28, 28, 96, 1, 1, 1, 0), Act::Clip, false},  // mobilenet_v2's first expand
      {shape(1, 24, 13, 13, 144, 1, 1, 1, 0), Act::Clip, false},
      {shape(1, 144, 13, 13, 24, 1, 1, 1, 0), Act::None, true},
      {shape(2, 32, 14, 14, 40, 1, 1, 1, 0), Act::Relu, true},
      {shape(1, 192, 7, 7, 32, 1, 1, 1, 0), Act::None, true},
  };
  for (const KernelTable* t : test::all_tables())
    for (Flat c : cases)
      for (int64_t block : {kConvBlock, kConvBlockWide}) {
        Conv2dShape s = c.s;
        s.x_blocked = s.y_blocked = true, s.x_block = s.y_block = block;
        // 16-channel blocks: 16-lane tables, channels a multiple of 16.
        if (block == kConvBlockWide && (t->simd_width != kConvBlockWide || s.C % block || s.K % block)) continue;
        const int64_t out = s.N * s.K * s.out_h() * s.out_w();
        const auto x = random_vec(s.N * s.C * s.H * s.W, 51), w = random_vec(s.K * s.C, 52, -0.5f, 0.5f);
        const auto bias = random_vec(s.K, 53), z = random_vec(out, 54);
        std::vector<float> packed(conv_packed_weight_floats_on(*t, ConvTactic::Direct, s));
        conv_pack_weight_on(*t, ConvTactic::Direct, s, w.data(), packed.data());
        Epilogue e;
        e.act = c.act, e.act_alpha = 0.f, e.act_beta = 6.f, e.bias = bias.data(), e.bias_per_row = true;
        if (c.residual) e.residual = z.data(), e.ldr = s.out_h() * s.out_w();
        for (int threads : {1, 2, 3}) {
          std::vector<float> runs(out, -1.f), tiles(out, -2.f);
          conv2d_on(*t, ConvTactic::Direct, s, x.data(), packed.data(), runs.data(), e, nullptr, threads);
          detail::direct_flat_runs = false;
          conv2d_on(*t, ConvTactic::Direct, s, x.data(), packed.data(), tiles.data(), e, nullptr, threads);
          detail::direct_flat_runs = true;
          size_t differ = 0, nonzero = 0;
          for (int64_t i = 0; i < out; ++i) {
            differ += std::memcmp(&runs[i], &tiles[i], sizeof(float)) != 0;
            nonzero += runs[i] != 0.f;
          }
          EXPECT_EQ(differ, 0u) << isa_name(t->isa) << " C=" << s.C << " K=" << s.K << " " << s.H << "x" << s.W
                                << " block " << block << " threads " << threads;
          EXPECT_GT(nonzero, static_cast<size_t>(out / 4));
        }
      }
}

// 16-channel blocks (Conv2dShape::x_block / y_block, AVX-512 only) against the double
// reference, in either direction and both: the general schedule (3x3 with one and three K
// blocks, a bottom row whose last K block has no step, wrap and wide tiles, Silu through C), the
// 1x1 schedule (stride 1 and 2, short row tiles, several batches), and a 1x1 downsample it does
// not take (7x7 outputs: the gathered stride-1 path); then bit for bit against 8-channel blocks,
// whose sums run in the same order.
TEST(Conv, WideBlocksOnTheDirectTactic) {
  const KernelTable& host = kernel_table();
  Conv2dShape probe = shape(1, 16, 8, 8, 16, 3, 3, 1, 1);
  probe.x_blocked = probe.y_blocked = true, probe.x_block = probe.y_block = kConvBlockWide;
  if (host.simd_width != kConvBlockWide) {
    EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, probe), "");
    GTEST_SKIP() << "16-channel blocks need a 16-lane table (AVX-512)";
  }
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, probe), "");
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Gemm, probe), "");
  probe.stride_h = probe.stride_w = 2;  // no tiles of pixel stride 32
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, probe), "");
  probe = shape(1, 24, 8, 8, 16, 1, 1, 1, 0);
  probe.x_blocked = true, probe.x_block = kConvBlockWide;  // 24 channels are no whole 16-blocks
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, probe), "");
  const std::vector<ConvCase> cases = {
      {shape(1, 32, 14, 14, 48, 3, 3, 1, 1), Act::Relu, true, true},
      {shape(2, 256, 9, 11, 64, 3, 3, 1, 1), Act::Clip, true, true},   // three K blocks
      {shape(1, 48, 7, 7, 80, 3, 3, 1, 1), Act::Silu, true, true},     // wrap tiles, C and the epilogue
      {shape(1, 64, 7, 7, 32, 1, 1, 1, 0), Act::LeakyRelu, true, false},  // flat 1x1, wide tiles
      {shape(1, 64, 28, 28, 128, 1, 1, 1, 0), Act::Relu, true, true},  // the 1x1 schedule
      {shape(1, 272, 15, 13, 64, 1, 1, 1, 0), Act::None, true, true},  // 3 batches, short tiles
      {shape(1, 64, 28, 27, 128, 1, 1, 2, 0), Act::Relu, true, true},  // 1x1/2 on the schedule
      {shape(2, 64, 14, 13, 128, 1, 1, 2, 0), Act::Relu, true, true},  // 7x7 outputs: gathered
      {shape(1, 32, 13, 13, 16, 1, 1, 2, 0), Act::Silu, true, true},   // gathered, general tiles
      {shape(1, 16, 28, 28, 96, 1, 1, 1, 0), Act::Clip, true, false},  // bias and activation alone
  };
  for (ConvCase c : cases)
    for (int sides = 1; sides <= 3; ++sides) {
      c.s.x_blocked = c.s.y_blocked = true;
      c.s.x_block = sides & 1 ? kConvBlockWide : kConvBlock;
      c.s.y_block = sides & 2 ? kConvBlockWide : kConvBlock;
      if (c.s.stride_w == 2 && c.s.x_block == kConvBlock) continue;
      for (int threads : {1, 2}) check(host, ConvTactic::Direct, c, threads, threads == 2);
      // The same floats as 8-channel blocks.
      Conv2dShape narrow = c.s;
      narrow.x_block = narrow.y_block = kConvBlock;
      const int64_t OHW = c.s.out_h() * c.s.out_w();
      const auto xv = random_vec(c.s.N * c.s.C * c.s.H * c.s.W, 31);
      const auto w = random_vec(c.s.K * c.s.C * c.s.R * c.s.S, 32), bias = random_vec(c.s.K, 33);
      const auto res = random_vec(c.s.N * c.s.K * OHW, 34);
      std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, c.s));
      conv_pack_weight(ConvTactic::Direct, c.s, w.data(), packed.data());
      std::vector<float> outs[2];
      for (int v = 0; v < 2; ++v) {
        const Conv2dShape& s = v ? narrow : c.s;
        const auto x = blocked(xv, s.N, s.C, s.H * s.W, false, s.x_block);
        const auto r = blocked(res, s.N, s.K, OHW, false, s.y_block);
        Epilogue e;
        e.act = c.act, e.bias = bias.data(), e.bias_per_row = true, e.residual = r.data(), e.ldr = OHW;
        test::act_params(c.act, e.act_alpha, e.act_beta);
        std::vector<float> y(res.size());
        conv2d(ConvTactic::Direct, s, x.data(), packed.data(), y.data(), e, nullptr, 2);
        outs[v] = blocked(y, s.N, s.K, OHW, /*back=*/true, s.y_block);
      }
      for (size_t i = 0; i < outs[0].size(); ++i)
        ASSERT_EQ(outs[0][i], outs[1][i]) << "16 against 8-channel blocks, C=" << c.s.C << " K=" << c.s.K
                                          << " sides " << sides << " at " << i;
    }
}

// The direct tactic as F(2x2, 3x3) Winograd tiles (Conv2dShape::winograd): against the double
// reference (check: within 1e-5 of the summed magnitudes), 8- and 16-channel blocks on either
// side, odd sizes (a last tile half outside the image), batch 2, one and two threads, every
// epilogue kind; padded planes in and out equal to the unpadded run bit for bit, with zeros
// around; and the shapes it refuses, with their reasons.
TEST(Conv, WinogradTilesOnBlockedActivations) {
  const KernelTable& host = kernel_table();
  Conv2dShape probe = shape(1, 16, 14, 14, 16, 3, 3, 1, 1);
  probe.x_blocked = probe.y_blocked = true, probe.x_block = probe.y_block = kConvBlockWide, probe.winograd = true;
  for (const KernelTable* t : test::all_tables()) {
    if (t->isa == Isa::Avx512) continue;
    EXPECT_NE(detail::winograd_unsupported(*t, probe).find("AVX-512"), std::string::npos);
  }
  if (host.isa != Isa::Avx512) GTEST_SKIP() << "Winograd tiles need AVX-512";
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Direct, probe), "");
  auto refused = [&](Conv2dShape s, const char* why) {
    EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, s).find(why), std::string::npos)
        << conv_tactic_unsupported(ConvTactic::Direct, s);
  };
  Conv2dShape bad = probe;
  bad.H = bad.W = 7;
  refused(bad, "output under 14x14");
  bad = probe, bad.stride_h = bad.stride_w = 2;
  refused(bad, "strided");
  bad = probe, bad.x_blocked = false;
  refused(bad, "not channel-blocked");
  bad = probe, bad.C = 24, bad.x_block = kConvBlock;
  refused(bad, "multiple of 16");
  bad = probe, bad.R = bad.S = 5, bad.pad_top = bad.pad_left = bad.pad_bottom = bad.pad_right = 2;
  refused(bad, "not a 3x3 window");
  const std::vector<ConvCase> cases = {
      {shape(1, 16, 14, 14, 16, 3, 3, 1, 1), Act::Relu, true, true},
      {shape(2, 32, 15, 17, 48, 3, 3, 1, 1), Act::Clip, true, true},     // odd sizes, batch 2
      {shape(1, 64, 28, 28, 64, 3, 3, 1, 1), Act::Silu, true, false},   // 196 tiles: blocks of rows
      {shape(1, 48, 16, 14, 32, 3, 3, 1, 1), Act::LeakyRelu, false, true},
      {shape(1, 16, 14, 15, 16, 3, 3, 1, 1), Act::None, false, false},   // no epilogue at all
      {shape(1, 32, 14, 14, 160, 3, 3, 1, 1), Act::Relu, true, true},    // panels of 64, 64 and 32 columns
      // Two threads cut 7 x 8 tiles at tile 30, inside a row: Silu runs over each block's pixels.
      {shape(1, 16, 14, 15, 32, 3, 3, 1, 1), Act::Silu, true, false},
  };
  for (ConvCase c : cases)
    for (int sides = 0; sides < 4; ++sides) {
      c.s.x_blocked = c.s.y_blocked = true, c.s.winograd = true;
      c.s.x_block = sides & 1 ? kConvBlockWide : kConvBlock;
      c.s.y_block = sides & 2 ? kConvBlockWide : kConvBlock;
      for (int threads : {1, 2}) check(host, ConvTactic::Direct, c, threads, threads == 2);
    }
  // Padded planes: the input read from its planes, the output written into the next ones (one
  // image of 7 x 7 tiles: two threads cut it at tile 24, inside a row, so each row's border
  // belongs to the block with its first tile).
  for (int threads : {1, 2})
    for (const Conv2dShape& s0 : {shape(2, 32, 15, 14, 32, 3, 3, 1, 1), shape(1, 32, 14, 14, 32, 3, 3, 1, 1)}) {
      Conv2dShape s = s0;
      s.x_blocked = s.y_blocked = true, s.x_block = kConvBlock, s.y_block = kConvBlockWide, s.winograd = true;
      const int64_t B = s.x_block, H = s.H, W = s.W, OHW = s.out_h() * s.out_w();
      const auto x = blocked(random_vec(s.N * s.C * H * W, 41), s.N, s.C, H * W, false, B);
      const auto w = random_vec(s.K * s.C * 9, 42), bias = random_vec(s.K, 43);
      std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
      conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
      Epilogue e;
      e.act = Act::Relu, e.bias = bias.data(), e.bias_per_row = true;
      std::vector<float> want(s.N * s.K * OHW);
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), want.data(), e, nullptr, threads);
      Conv2dShape p = s;
      p.x_padded = true, p.y_pad_top = 1, p.y_pad_left = 2, p.y_pad_bottom = 0, p.y_pad_right = 1;
      std::vector<float> xp(p.N * p.x_image_floats(), 0.f);
      for (int64_t i = 0; i < p.N * p.C / B; ++i)
        for (int64_t h = 0; h < H; ++h)
          std::copy_n(x.data() + (i * H + h) * W * B, W * B, xp.data() + ((i * (H + 2) + h + 1) * (W + 2) + 1) * B);
      std::vector<float> planes(p.N * p.y_image_floats(), std::nanf(""));
      conv2d(ConvTactic::Direct, p, xp.data(), packed.data(), planes.data(), e, nullptr, threads);
      const int64_t OH = s.out_h(), OW = s.out_w(), YB = s.y_block, row = OW + 3, rows = OH + 1;
      for (int64_t i = 0; i < p.N * p.K / YB; ++i)
        for (int64_t h = 0; h < rows; ++h)
          for (int64_t c = 0; c < row; ++c)
            for (int64_t j = 0; j < YB; ++j) {
              const int64_t oh = h - 1, ow = c - 2;
              const bool inside = oh >= 0 && oh < OH && ow >= 0 && ow < OW;
              const float expect = inside ? want[((i * OH + oh) * OW + ow) * YB + j] : 0.f;
              ASSERT_EQ(planes[((i * rows + h) * row + c) * YB + j], expect)
                  << "threads " << threads << " N " << s.N << " plane " << i << " at " << h << "," << c;
            }
    }
}

// Blocked output holds the very floats of the planar one: its tiles apply the epilogue as they
// store (ConvTileOut: None, Relu, LeakyRelu, Clip) where the planar output goes through C and
// transpose_epilogue, and the other activations (Silu) keep C and epilogue_blocks. Bias and a
// residual (alpha stays 1: the compiler may contract x * alpha + bias into an FMA in one inlined
// copy and not another, 1 ulp apart; DirectTacticOnBlockedActivations checks alpha against the
// reference); one and three K blocks, wrap tiles, an odd last tile, stride 2, wide
// tiles, channels not a multiple of 16.
TEST(Conv, BlockedOutputEqualsPlanarBitForBit) {
  const std::vector<Conv2dShape> shapes = {
      shape(1, 16, 14, 14, 24, 3, 3, 1, 1),  // 24 channels: a half block pair
      shape(2, 24, 15, 13, 32, 3, 3, 2, 1),  // stride 2, odd sizes, batch 2
      shape(1, 200, 9, 30, 72, 3, 3, 1, 1),  // three K blocks
      shape(1, 40, 7, 7, 40, 3, 3, 1, 1),    // wrap tiles on 7-wide rows
      shape(1, 16, 7, 7, 40, 1, 1, 1, 0),    // flat 1x1, wide tiles
      shape(1, 16, 5, 5, 16, 3, 3, 1, 1),    // 25 pixels: an odd last tile
  };
  for (const KernelTable* t : test::all_tables())
    for (Conv2dShape s : shapes)
      for (Act act : {Act::None, Act::Relu, Act::LeakyRelu, Act::Clip, Act::Silu})
        for (int threads : {1, 2}) {
          s.x_blocked = true;
          const int64_t OHW = s.out_h() * s.out_w();
          const auto x = blocked(random_vec(s.N * s.C * s.H * s.W, 3), s.N, s.C, s.H * s.W);
          const auto w = random_vec(s.K * s.C * s.R * s.S, 4);
          const auto bias = random_vec(s.K, 5), res = random_vec(s.N * s.K * OHW, 6);
          const auto res_blocked = blocked(res, s.N, s.K, OHW);
          std::vector<float> packed(conv_packed_weight_floats_on(*t, ConvTactic::Direct, s));
          conv_pack_weight_on(*t, ConvTactic::Direct, s, w.data(), packed.data());
          Epilogue e;
          e.act = act, e.bias = bias.data(), e.bias_per_row = true, e.ldr = OHW;
          test::act_params(act, e.act_alpha, e.act_beta);
          std::vector<float> planar(res.size()), out(res.size());
          s.y_blocked = false, e.residual = res.data();
          conv2d_on(*t, ConvTactic::Direct, s, x.data(), packed.data(), planar.data(), e, nullptr, threads);
          s.y_blocked = true, e.residual = res_blocked.data();
          conv2d_on(*t, ConvTactic::Direct, s, x.data(), packed.data(), out.data(), e, nullptr, threads);
          out = blocked(out, s.N, s.K, OHW, /*back=*/true);
          for (size_t i = 0; i < out.size(); ++i)
            ASSERT_EQ(out[i], planar[i]) << isa_name(t->isa) << " K=" << s.K << " act " << static_cast<int>(act)
                                         << " threads " << threads << " at " << i;
        }
}

// Padded planes between two direct convolutions (Conv2dShape::y_pad_*, x_padded): the producer
// writes its output into the interior of planes with the reader's border, zeroing the border
// over whatever the buffer held (NaN here), and the reader takes them in place with no padded
// copy. The reader's output holds the very floats it computes from an unpadded blocked input
// (the same tiles over the same zeros). Flat 1x1 producers (whole and wide tiles), a 3x3
// producer, a stride-2 reader, asymmetric padding, batch 2, 1 and 2 threads; every table whose
// tiles stay on one output row for the shape (the others refuse with an error), AVX-512's at
// least. With 16-channel blocks on 16 lanes (a vector one pixel's block) tiles that wrap to the
// next output row write padded planes too, their second row past the border: the 6 x 64 tile on
// 56- and 28-wide rows (splits of 2 and 4 pixels), 8-channel blocks on 8 lanes likewise. The
// reader needs no copy workspace.
TEST(Conv, PaddedPlanesEqualThePaddedCopyBitForBit) {
  struct Pair {
    Conv2dShape producer, reader;
    int64_t block = kConvBlock;  // channels per block between them
  };
  auto reader_of = [](const Conv2dShape& p, int64_t K, int64_t stride, int64_t top, int64_t left, int64_t bottom,
                      int64_t right) {
    Conv2dShape r = shape(p.N, p.K, p.out_h(), p.out_w(), K, 3, 3, stride, 0);
    r.pad_top = top, r.pad_left = left, r.pad_bottom = bottom, r.pad_right = right;
    return r;
  };
  std::vector<Pair> pairs;
  const Conv2dShape flat14 = shape(1, 16, 14, 14, 16, 1, 1, 1, 0), flat7 = shape(1, 24, 7, 7, 16, 1, 1, 1, 0);
  const Conv2dShape three28 = shape(1, 16, 28, 28, 16, 3, 3, 1, 1), batch = shape(2, 8, 14, 14, 24, 1, 1, 1, 0);
  pairs.push_back({flat14, reader_of(flat14, 24, 1, 1, 1, 1, 1)});
  pairs.push_back({flat7, reader_of(flat7, 16, 1, 1, 1, 1, 1)});
  pairs.push_back({three28, reader_of(three28, 16, 2, 1, 1, 1, 1)});
  pairs.push_back({batch, reader_of(batch, 16, 1, 1, 2, 0, 1)});
  // 64 channels from 200: on AVX-512 the 1x1 schedule's tiles, two batches.
  const Conv2dShape flat64 = shape(2, 200, 14, 14, 64, 1, 1, 1, 0);
  pairs.push_back({flat64, reader_of(flat64, 16, 1, 1, 1, 1, 1)});
  // 64 channels on 28-wide rows: on AVX-512 the 6 x 64 tile, its rows ending in 4-pixel tiles.
  const Conv2dShape three64 = shape(1, 16, 28, 28, 64, 3, 3, 1, 1);
  pairs.push_back({three64, reader_of(three64, 16, 1, 1, 1, 1, 1)});
  // 16-channel blocks: the 6 x 64 tile's wrap tiles into the planes (56 = 9 x 6 + 2 and 28 =
  // 4 x 6 + 4), a 64-channel reader on the 6 x 64 tile as well, batch 2 with an asymmetric border.
  const Conv2dShape wide56 = shape(1, 16, 56, 56, 64, 3, 3, 1, 1), wide28 = shape(2, 32, 28, 28, 64, 3, 3, 1, 1);
  pairs.push_back({wide56, reader_of(wide56, 64, 1, 1, 1, 1, 1), kConvBlockWide});
  pairs.push_back({wide28, reader_of(wide28, 16, 1, 2, 1, 1, 2), kConvBlockWide});
  pairs.push_back({three28, reader_of(three28, 16, 1, 1, 1, 1, 1), kConvBlockWide});
  int host_runs = 0, host_pairs = 0;
  for (const KernelTable* t : test::all_tables())
    for (const Pair& pr : pairs)
      for (int threads : {1, 2}) {
        const int64_t B = pr.block;
        if (B != kConvBlock && t->simd_width != B) continue;  // 16-channel blocks: 16 lanes only
        host_pairs += t == &kernel_table() && threads == 1;
        Conv2dShape p = pr.producer, r = pr.reader;
        p.x_blocked = p.y_blocked = r.x_blocked = r.y_blocked = true;
        p.x_block = p.y_block = r.x_block = r.y_block = B;
        if (B != kConvBlock) p.x_blocked = false;  // a planar input to the producer
        p.p64 = detail::direct_takes_p64(*t, p), r.p64 = detail::direct_takes_p64(*t, r);
        const int64_t OHW = p.out_h() * p.out_w();
        auto x = random_vec(p.N * p.C * p.H * p.W, 7);
        if (p.x_blocked) x = blocked(x, p.N, p.C, p.H * p.W);
        const auto wp = random_vec(p.K * p.C * p.R * p.S, 8), wr = random_vec(r.K * r.C * r.R * r.S, 9);
        const auto bp = random_vec(p.K, 10), br = random_vec(r.K, 11);
        std::vector<float> packed_p(conv_packed_weight_floats_on(*t, ConvTactic::Direct, p));
        std::vector<float> packed_r(conv_packed_weight_floats_on(*t, ConvTactic::Direct, r));
        conv_pack_weight_on(*t, ConvTactic::Direct, p, wp.data(), packed_p.data());
        conv_pack_weight_on(*t, ConvTactic::Direct, r, wr.data(), packed_r.data());
        Epilogue ep, er;
        ep.act = er.act = Act::Relu, ep.bias = bp.data(), er.bias = br.data(), ep.bias_per_row = er.bias_per_row = true;
        // Unpadded: the blocked output, then the reader's padded copy of it.
        std::vector<float> mid(p.N * p.K * OHW), want(r.N * r.K * r.out_h() * r.out_w());
        conv2d_on(*t, ConvTactic::Direct, p, x.data(), packed_p.data(), mid.data(), ep, nullptr, threads);
        conv2d_on(*t, ConvTactic::Direct, r, mid.data(), packed_r.data(), want.data(), er, nullptr, threads);
        // Padded: the producer writes the reader's planes, over NaN.
        p.y_pad_top = r.pad_top, p.y_pad_left = r.pad_left, p.y_pad_bottom = r.pad_bottom, p.y_pad_right = r.pad_right;
        r.x_padded = true;
        std::vector<float> planes(p.N * p.y_image_floats(), std::nanf("")), got(want.size());
        try {
          conv2d_on(*t, ConvTactic::Direct, p, x.data(), packed_p.data(), planes.data(), ep, nullptr, threads);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("cross output rows"), std::string::npos) << e.what();
          EXPECT_NE(t, &kernel_table()) << "this CPU's table refused " << p.out_h() << "x" << p.out_w();
          continue;
        }
        host_runs += t == &kernel_table();
        conv2d_on(*t, ConvTactic::Direct, r, planes.data(), packed_r.data(), got.data(), er, nullptr, threads);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << isa_name(t->isa) << " reader " << r.H << "x" << r.W << " stride " << r.stride_h
                                     << " threads " << threads << " at " << i;
        // The planes: the output inside, zeros around it.
        const int64_t OW = p.out_w(), row = OW + r.pad_left + r.pad_right, rows = p.out_h() + r.pad_top + r.pad_bottom;
        for (int64_t n = 0; n < p.N; ++n)
          for (int64_t b = 0; b < p.K / B; ++b)
            for (int64_t h = 0; h < rows; ++h)
              for (int64_t w = 0; w < row; ++w)
                for (int64_t j = 0; j < B; ++j) {
                  const float v = planes[(((n * p.K / B + b) * rows + h) * row + w) * B + j];
                  const int64_t ih = h - r.pad_top, iw = w - r.pad_left;
                  const bool inside = ih >= 0 && ih < p.out_h() && iw >= 0 && iw < OW;
                  const float expect = inside ? mid[((n * p.K / B + b) * OHW + ih * OW + iw) * B + j] : 0.f;
                  ASSERT_EQ(v, expect) << isa_name(t->isa) << " block " << b << " at " << h << "," << w;
                }
      }
  EXPECT_EQ(host_runs, 2 * host_pairs);
  if (kernel_table().simd_width != kConvBlockWide)
    GTEST_LOG_(INFO) << "no 16-lane table on this CPU: the 16-channel pairs were skipped";
  // No padded copy: the reader's workspace shrinks by its planes.
  Conv2dShape r = pairs[0].reader;
  r.x_blocked = r.y_blocked = true;
  const size_t copy = conv_workspace_floats(ConvTactic::Direct, r, 1);
  r.x_padded = true;
  EXPECT_EQ(copy - conv_workspace_floats(ConvTactic::Direct, r, 1), static_cast<size_t>(r.C * 16 * 16));
  // And the shapes the direct tactic refuses, with their reasons.
  Conv2dShape unpadded = shape(1, 16, 14, 14, 16, 1, 1, 1, 0);
  unpadded.x_blocked = unpadded.x_padded = true;
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, unpadded).find("padded convolution"), std::string::npos);
  Conv2dShape planar = flat14;
  planar.y_pad_top = 1;
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Direct, planar).find("channel-blocked output"), std::string::npos);
  EXPECT_NE(conv_tactic_unsupported(ConvTactic::Gemm, planar).find("direct tactic"), std::string::npos);
}

// Where conv_depthwise_in_place says so, the depthwise tactic writing its output over its input
// (the same buffer as x and y, as the memory planner then lays them) gives the floats it gives
// into a buffer of its own: 3x3 and 5x5, a partial 16-lane block, batch 2, 1 and 2 threads. And
// it does not say so for a stride, planes tall enough for bands of rows, NCHW activations, or
// (on AVX-512) rows of 16 or more, or of 14, that the aligned-pair kernel takes out of place.
TEST(Conv, DepthwiseInPlaceEqualsOutOfPlaceBitForBit) {
  const KernelTable& t = kernel_table();
  const std::vector<Conv2dShape> shapes = {
      shape(1, 16, 12, 12, 16, 3, 3, 1, 1, 1, 16), shape(2, 24, 7, 7, 24, 3, 3, 1, 1, 1, 24),
      shape(1, 32, 12, 12, 32, 5, 5, 1, 2, 1, 32), shape(1, 384, 12, 12, 384, 3, 3, 1, 1, 1, 384),
      shape(1, 16, 15, 15, 16, 3, 3, 1, 1, 1, 16)};
  for (Conv2dShape s : shapes) {
    s.x_blocked = s.y_blocked = true;
    if (!t.depthwise_block || t.simd_width < 8) {  // the plane kernel: never in place
      EXPECT_FALSE(conv_depthwise_in_place(s));
      continue;
    }
    ASSERT_TRUE(conv_depthwise_in_place(s)) << "C=" << s.C << " H=" << s.H;
    const int64_t HW = s.H * s.W;
    const auto x = blocked(random_vec(s.N * s.C * HW, 21), s.N, s.C, HW), w = random_vec(s.K * s.R * s.S, 22);
    const auto bias = random_vec(s.K, 23);
    std::vector<float> packed(conv_packed_weight_floats_on(t, ConvTactic::Depthwise, s));
    conv_pack_weight_on(t, ConvTactic::Depthwise, s, w.data(), packed.data());
    Epilogue e;
    e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f, e.bias = bias.data(), e.bias_per_row = true;
    for (int threads : {1, 2}) {
      std::vector<float> apart(x.size()), same = x;
      conv2d_on(t, ConvTactic::Depthwise, s, x.data(), packed.data(), apart.data(), e, nullptr, threads);
      conv2d_on(t, ConvTactic::Depthwise, s, same.data(), packed.data(), same.data(), e, nullptr, threads);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(same[i], apart[i]) << "C=" << s.C << " H=" << s.H << " threads " << threads << " at " << i;
    }
  }
  Conv2dShape strided = shape(1, 16, 14, 14, 16, 3, 3, 2, 1, 1, 16), tall = shape(1, 16, 40, 33, 16, 3, 3, 1, 1, 1, 16),
              planar = shapes[0];
  strided.x_blocked = strided.y_blocked = tall.x_blocked = tall.y_blocked = true;
  EXPECT_FALSE(conv_depthwise_in_place(strided));
  EXPECT_FALSE(conv_depthwise_in_place(tall));
  EXPECT_FALSE(conv_depthwise_in_place(planar));
  Conv2dShape wide = shape(1, 32, 28, 28, 32, 5, 5, 1, 2, 1, 32), fourteen = shape(1, 32, 14, 14, 32, 3, 3, 1, 1, 1, 32);
  wide.x_blocked = wide.y_blocked = fourteen.x_blocked = fourteen.y_blocked = true;
  EXPECT_EQ(conv_depthwise_in_place(wide), t.simd_width != 16);
  EXPECT_EQ(conv_depthwise_in_place(fourteen), t.simd_width != 16);
}

// A depthwise weight packs as [K][R*S] followed, when K is a multiple of 8, by the pair kernels'
// copy (TileEpilogue::pair_weights): per 8-channel block, per tap, the block's 8 weights twice.
// Without it (K not a multiple of 8) the packing is the weight alone.
TEST(Conv, DepthwisePackingAddsThePairKernelsCopy) {
  const KernelTable& t = kernel_table();
  const Conv2dShape s = shape(1, 16, 9, 9, 16, 3, 3, 1, 1, 1, 16), odd = shape(1, 12, 9, 9, 12, 3, 3, 1, 1, 1, 12);
  const int64_t RS = 9;
  ASSERT_EQ(conv_packed_weight_floats_on(t, ConvTactic::Depthwise, s), static_cast<size_t>(3 * 16 * RS));
  ASSERT_EQ(conv_packed_weight_floats_on(t, ConvTactic::Depthwise, odd), static_cast<size_t>(12 * RS));
  std::vector<float> w(16 * RS);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);  // channel c, tap k: 9 c + k
  std::vector<float> packed(3 * 16 * RS, -1.f);
  conv_pack_weight_on(t, ConvTactic::Depthwise, s, w.data(), packed.data());
  for (int64_t i = 0; i < 16 * RS; ++i) ASSERT_EQ(packed[i], w[i]) << i;
  const float* pairs = packed.data() + 16 * RS;
  for (int64_t blk = 0; blk < 2; ++blk)
    for (int64_t k = 0; k < RS; ++k)
      for (int64_t lane = 0; lane < 16; ++lane)
        ASSERT_EQ(pairs[(blk * RS + k) * 16 + lane], static_cast<float>(9 * (8 * blk + lane % 8) + k))
            << "block " << blk << " tap " << k << " lane " << lane;
}

// The blocked depthwise kernel reads and writes channel-blocked activations ([N][C/8][H][W][8])
// with the very floats of the planar path: the same sums and epilogue, without the transposes.
// Input blocked, output blocked, or both; a bias, a residual (in the output's layout) and five
// activations; a partial 16-lane block (24 channels on AVX-512), stride 2, a 5x5 window, 7-wide
// rows (7-pixel groups), several staged chunks, batch 2, one and two threads; one input channel
// into 16 writes blocks (its input is one plane). Blocked in and out, AVX-512 runs the pair
// kernels (depthwise_pairs and depthwise_pairs_s2 or depthwise_halves_s2 at stride 2,
// depthwise_pairs_s1 at stride 1): the same floats too, with the halves' switch on and off.
TEST(Conv, BlockedDepthwiseEqualsPlanarBitForBit) {
  const std::vector<Conv2dShape> shapes = {
      shape(1, 16, 14, 14, 16, 3, 3, 1, 1, 1, 16),  shape(2, 24, 15, 13, 24, 3, 3, 2, 1, 1, 24),
      shape(1, 32, 11, 23, 32, 5, 5, 1, 2, 1, 32),  shape(1, 144, 7, 7, 144, 3, 3, 1, 1, 1, 144),
      shape(1, 16, 40, 33, 16, 3, 3, 1, 1, 1, 16),
      // Blocked in and out on 16 lanes (the pair kernel): stride 2 on rows of 4-pair groups,
      // dilation 2 with padding 2, an odd width with no padding.
      shape(1, 16, 33, 41, 16, 3, 3, 2, 1, 1, 16), shape(1, 16, 20, 21, 16, 3, 3, 1, 2, 2, 16),
      shape(1, 8, 9, 19, 8, 3, 3, 2, 0, 1, 8),
      // Stride 1 on even rows of 16 and more (depthwise_pairs_s1): 3x3 with edge and 4-pair
      // groups, 5x5 with a partial 16-lane unit (24 channels), a batch of 2 in bands of 16 rows.
      shape(1, 16, 18, 32, 16, 3, 3, 1, 1, 1, 16), shape(1, 24, 9, 20, 24, 5, 5, 1, 2, 1, 24),
      shape(2, 16, 40, 16, 16, 3, 3, 1, 1, 1, 16),
      // Rows of a multiple of 7 pairs (depthwise_pairs_s1's groups of 7): the whole 14-wide row
      // (also shapes[0]) as a 5x5 with a partial unit; 28-wide rows, a first and a last group;
      // 42-wide rows, a middle one too, 5x5 in a batch of 2.
      shape(1, 24, 14, 14, 24, 5, 5, 1, 2, 1, 24), shape(1, 24, 10, 28, 24, 3, 3, 1, 1, 1, 24),
      shape(2, 16, 6, 42, 16, 5, 5, 1, 2, 1, 16),
      // Stride 2 with 'same' padding on even rows (depthwise_pairs_s2, or depthwise_halves_s2):
      // 3x3 to 14 outputs, 5x5 with a partial unit and a batch of 2; for the halves' groups of 8
      // pixels, 23 outputs (two groups and 7 left over) and a 5x5 to 15 (the last pixel's taps
      // past the row's end).
      shape(1, 16, 28, 28, 16, 3, 3, 2, 1, 1, 16), shape(2, 24, 20, 36, 24, 5, 5, 2, 2, 1, 24),
      shape(1, 16, 6, 46, 16, 3, 3, 2, 1, 1, 16), shape(1, 16, 9, 30, 16, 5, 5, 2, 2, 1, 16),
      // Stride 1 on the halves (3x3, rows of 28 and more; also shapes[8] and [12]): 46 wide, five
      // groups of 8 and 6 left over, in a batch of 2.
      shape(2, 16, 7, 46, 16, 3, 3, 1, 1, 1, 16),
      shape(3, 1, 8, 8, 16, 3, 3, 1, 1, 1, 1),  // one input channel into 16 (digits_cnn): output blocked only
      // One input channel (depthwise_single_channel): 24 outputs (a partial 16-lane unit) at
      // stride 2 on odd sizes (rows of a 4-pixel group and singles); 5x5 on 21-wide rows, in
      // bands of 60 input rows at two threads; 8 outputs (half a 16-lane unit), dilation 2; 7x7
      // at stride 2 into 32 (49 taps, two units).
      shape(2, 1, 13, 11, 24, 3, 3, 2, 1, 1, 1), shape(1, 1, 60, 21, 16, 5, 5, 1, 2, 1, 1),
      shape(1, 1, 12, 12, 8, 3, 3, 1, 2, 2, 1), shape(1, 1, 15, 15, 32, 7, 7, 2, 3, 1, 1),
  };
  int ran = 0;
  const bool halves_was = detail::depthwise_halves_enabled, halves_s1_was = detail::depthwise_halves_s1_enabled;
  for (const KernelTable* t : test::all_tables()) {
    if (!t->depthwise_block || t->simd_width < 8) continue;  // the plane kernel: NCHW only
    for (bool halves : {true, false}) {
      detail::depthwise_halves_enabled = detail::depthwise_halves_s1_enabled = halves;
      for (Conv2dShape s : shapes)
        for (Act act : {Act::None, Act::Relu, Act::Clip, Act::Silu, Act::HardSwish})
          for (int mode : {1, 2, 3})  // 1: input blocked, 2: output blocked, 3: both
            for (int threads : {1, 2}) {
              if (s.C == 1 && mode != 2) continue;
              const int64_t HW = s.H * s.W, OHW = s.out_h() * s.out_w();
              const auto x = random_vec(s.N * s.C * HW, 7), w = random_vec(s.K * s.R * s.S, 8);
              const auto bias = random_vec(s.K, 9), res = random_vec(s.N * s.K * OHW, 10);
              // (one input channel is never read blocked: no blocked copy of x, which needs C % 8 == 0)
              const auto xb = s.C % kConvBlock == 0 ? blocked(x, s.N, s.C, HW) : x;
              const auto resb = blocked(res, s.N, s.K, OHW);
              std::vector<float> packed(conv_packed_weight_floats_on(*t, ConvTactic::Depthwise, s));
              conv_pack_weight_on(*t, ConvTactic::Depthwise, s, w.data(), packed.data());
              Epilogue e;
              e.act = act, e.bias = bias.data(), e.bias_per_row = true, e.ldr = OHW, e.residual = res.data();
              test::act_params(act, e.act_alpha, e.act_beta);
              std::vector<float> planar(res.size()), out(res.size());
              s.x_blocked = s.y_blocked = false;
              conv2d_on(*t, ConvTactic::Depthwise, s, x.data(), packed.data(), planar.data(), e, nullptr, threads);
              s.x_blocked = mode & 1, s.y_blocked = (mode & 2) != 0;
              if (s.y_blocked) e.residual = resb.data();
              conv2d_on(*t, ConvTactic::Depthwise, s, s.x_blocked ? xb.data() : x.data(), packed.data(), out.data(), e,
                        nullptr, threads);
              if (s.y_blocked) out = blocked(out, s.N, s.K, OHW, /*back=*/true);
              for (size_t i = 0; i < out.size(); ++i)
                ASSERT_EQ(out[i], planar[i]) << isa_name(t->isa) << " C=" << s.C << " W=" << s.W << " R=" << s.R
                                             << " mode " << mode << " act " << static_cast<int>(act) << " threads "
                                             << threads << " halves " << halves << " at " << i;
              ++ran;
            }
    }
  }
  detail::depthwise_halves_enabled = halves_was, detail::depthwise_halves_s1_enabled = halves_s1_was;
  EXPECT_GT(ran, 0);
}

// cpu_amd_family and cpu_fma512_double_pumped decode CPUID themselves; /proc/cpuinfo says the same
// in words (vendor_id AuthenticAMD, cpu family 25: Zen 4, whose 512-bit FMAs are two 256-bit halves). And the stride-1
// halves start on exactly there, unless KILN_DW_HALVES_S1 set them (a wrong family, vendor or the
// default left on for every AVX-512 CPU fails here on the Zen 5 host or on a Zen 4 one).
TEST(Conv, StrideOneHalvesOnlyWhereWideFmasAreDoublePumped) {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string vendor;
  int family = -1;
  char line[512];
  while (std::fgets(line, sizeof line, f) && (vendor.empty() || family < 0)) {
    char v[64];
    int fam = 0;
    if (vendor.empty() && std::sscanf(line, "vendor_id : %63s", v) == 1) vendor = v;
    if (family < 0 && std::sscanf(line, "cpu family : %d", &fam) == 1) family = fam;
  }
  std::fclose(f);
  if (vendor.empty() || family < 0) GTEST_SKIP() << "/proc/cpuinfo names no x86 vendor and family";
  const bool amd = vendor == "AuthenticAMD", zen4 = amd && family == 25;
  EXPECT_EQ(cpu_amd_family(), amd ? family : 0) << vendor;
  EXPECT_EQ(cpu_fma512_double_pumped(), zen4) << vendor << " family " << family;
  if (!std::getenv("KILN_DW_HALVES_S1")) {
    EXPECT_EQ(detail::depthwise_halves_s1_enabled, zen4);
  }
}

// The depthwise tactic on 16-channel blocks in and out (AVX-512: src/kernels/depthwise_wide.h)
// against the planar kernel, bit for bit (both sum the taps from zero, row by row, as FMAs, then
// fma(sum, alpha, bias), the residual, the activation): 'same' padding at stride 1 and 2 on 7-,
// 14- and odd-sized planes, 5x5 windows, dilation 2, no padding, a batch of 2, one block cut
// into bands of rows at two threads, every activation the models use, with and without the
// residual and the bias. A tap read from the wrong pixel, channel or block, a border tap not
// skipped, or a band's rows missed would show.
TEST(Conv, WideDepthwiseEqualsPlanarBitForBit) {
  const KernelTable* t = kernel_table_for(Isa::Avx512);
  if (!t || kernel_table().isa != Isa::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  const std::vector<Conv2dShape> shapes = {
      shape(1, 32, 14, 14, 32, 3, 3, 1, 1, 1, 32),  shape(1, 48, 7, 7, 48, 3, 3, 1, 1, 1, 48),
      shape(1, 32, 14, 14, 32, 3, 3, 2, 1, 1, 32),  shape(2, 16, 15, 13, 16, 3, 3, 2, 1, 1, 16),
      shape(1, 32, 11, 16, 32, 5, 5, 1, 2, 1, 32),  shape(1, 16, 16, 16, 16, 5, 5, 2, 2, 1, 16),
      shape(1, 16, 20, 15, 16, 3, 3, 1, 2, 2, 16),  shape(1, 16, 9, 13, 16, 3, 3, 2, 0, 1, 16),
      shape(1, 16, 40, 16, 16, 3, 3, 1, 1, 1, 16),  shape(1, 16, 2, 3, 16, 5, 5, 1, 2, 1, 16),
  };
  int ran = 0;
  const bool in_place_was = detail::depthwise_wide_in_place_enabled;
  // In place where the window allows it (depthwise_wide_in_place_supports: 'same' 3x3 and 5x5
  // windows without a residual), else through the zero-bordered copy; then the copy everywhere.
  for (bool in_place : {true, false})
  for (Conv2dShape s : shapes)
    for (Act act : {Act::None, Act::Relu, Act::Clip, Act::Silu, Act::HardSwish})
      for (int extras : {0, 1})  // 1: bias and residual
        for (int threads : {1, 2}) {
          detail::depthwise_wide_in_place_enabled = in_place;
          const int64_t HW = s.H * s.W, OHW = s.out_h() * s.out_w();
          const auto x = random_vec(s.N * s.C * HW, 7), w = random_vec(s.K * s.R * s.S, 8);
          const auto bias = random_vec(s.K, 9), res = random_vec(s.N * s.K * OHW, 10);
          const auto xb = blocked(x, s.N, s.C, HW, false, kConvBlockWide);
          const auto resb = blocked(res, s.N, s.K, OHW, false, kConvBlockWide);
          std::vector<float> packed(conv_packed_weight_floats_on(*t, ConvTactic::Depthwise, s));
          conv_pack_weight_on(*t, ConvTactic::Depthwise, s, w.data(), packed.data());
          Epilogue e;
          e.act = act, e.ldr = OHW;
          if (extras) e.bias = bias.data(), e.bias_per_row = true, e.residual = res.data();
          test::act_params(act, e.act_alpha, e.act_beta);
          std::vector<float> planar(res.size()), out(res.size(), 777.f);
          s.x_blocked = s.y_blocked = false, s.x_block = s.y_block = kConvBlock;
          conv2d_on(*t, ConvTactic::Depthwise, s, x.data(), packed.data(), planar.data(), e, nullptr, threads);
          s.x_blocked = s.y_blocked = true, s.x_block = s.y_block = kConvBlockWide;
          ASSERT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, s), "");
          EXPECT_FALSE(conv_depthwise_in_place(s));  // windows read their input rows in place
          if (extras) e.residual = resb.data();
          conv2d_on(*t, ConvTactic::Depthwise, s, xb.data(), packed.data(), out.data(), e, nullptr, threads);
          out = blocked(out, s.N, s.K, OHW, /*back=*/true, kConvBlockWide);
          for (size_t i = 0; i < out.size(); ++i)
            ASSERT_EQ(out[i], planar[i]) << "C=" << s.C << " " << s.H << "x" << s.W << " R=" << s.R << " stride "
                                         << s.stride_h << " act " << static_cast<int>(act) << " extras " << extras
                                         << " threads " << threads << " in place " << in_place << " at " << i;
          ++ran;
        }
  detail::depthwise_wide_in_place_enabled = in_place_was;
  EXPECT_EQ(ran, 400);
}

// Where 16-channel depthwise blocks do not apply, the tactic says why, and a table without
// AVX-512 refuses them when asked anyway.
TEST(Conv, WideDepthwiseSaysWhyItDoesNotApply) {
  Conv2dShape s = shape(1, 32, 14, 14, 32, 3, 3, 1, 1, 1, 32);
  s.x_blocked = s.y_blocked = true, s.x_block = kConvBlockWide;  // 16 in, 8 out
  if (kernel_table().isa == Isa::Avx512) {
    EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, s), "16-channel depthwise blocks take 16-channel blocks in and out");
    Conv2dShape odd = shape(1, 24, 14, 14, 24, 3, 3, 1, 1, 1, 24);
    odd.x_blocked = odd.y_blocked = true, odd.x_block = odd.y_block = kConvBlockWide;
    EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, odd),
              "16-channel depthwise blocks need group == C == K, a multiple of 16");
    Conv2dShape wide_rows = shape(1, 16, 28, 28, 16, 3, 3, 2, 1, 1, 16);
    wide_rows.x_blocked = wide_rows.y_blocked = true, wide_rows.x_block = wide_rows.y_block = kConvBlockWide;
    EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, wide_rows),
              "16-channel depthwise blocks take input rows of up to 16 pixels (wider ones run faster on 8-channel "
              "blocks)");
    wide_rows.W = 16;
    EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, wide_rows), "");
  }
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Pointwise, s), "channel-blocked activations run only on the direct tactic and (on tables of 8 or more lanes, C == K a multiple of 8) the depthwise one");
  s.y_block = kConvBlockWide;
  if (const KernelTable* avx2 = kernel_table_for(Isa::Avx2); avx2 && kernel_table().isa == Isa::Avx512) {
    std::vector<float> w(32 * 9 * 3), x(32 * 196), y(32 * 196);
    EXPECT_THROW(conv2d_on(*avx2, ConvTactic::Depthwise, s, x.data(), w.data(), y.data(), Epilogue{}, nullptr, 1),
                 kiln::Error);
  }
}

// Epilogue::channel_means: the blocked depthwise kernel sums each part of its output as it
// writes it (bands of rows at 2 threads on the 64-row plane, channel groups on the 14x14 one, in
// place over its input, a partial 16-lane unit, a batch of 2, NCHW or blocked output); the other
// tactics and the plane kernel sum the output after it. Against each output plane's mean in
// double, within float rounding; a missing band, part or channel would be off by far more.
TEST(Conv, ChannelMeansAreTheOutputPlanesMeans) {
  struct Case {
    Conv2dShape s;
    ConvTactic tactic;
    bool in_place;
  };
  const std::vector<Case> cases = {
      {shape(1, 16, 64, 64, 16, 3, 3, 1, 1, 1, 16), ConvTactic::Depthwise, false},
      {shape(1, 48, 14, 14, 48, 3, 3, 1, 1, 1, 48), ConvTactic::Depthwise, true},
      {shape(2, 24, 36, 20, 24, 5, 5, 2, 2, 1, 24), ConvTactic::Depthwise, false},
      {shape(1, 24, 56, 28, 24, 5, 5, 2, 2, 1, 24), ConvTactic::Depthwise, false},  // bands from 56 input rows
      {shape(1, 16, 9, 9, 32, 3, 3, 1, 1, 1, 1), ConvTactic::Direct, false},
      {shape(2, 1, 9, 21, 24, 3, 3, 1, 1, 1, 1), ConvTactic::Depthwise, false},  // one input channel
  };
  int ran = 0;
  for (const KernelTable* t : test::all_tables())
    for (const Case& c : cases)
      for (bool blocked_io : {false, true})
        for (int threads : {1, 2}) {
          Conv2dShape s = c.s;
          const bool blockable = t->simd_width >= 8 && (c.tactic == ConvTactic::Direct || t->depthwise_block);
          if (blocked_io && !blockable) continue;
          if (c.in_place && !blocked_io) continue;
          // (one input channel is never read blocked: only its output is)
          s.x_blocked = blocked_io && s.C % kConvBlock == 0, s.y_blocked = blocked_io;
          if (!conv_tactic_unsupported(c.tactic, s).empty()) continue;
          const int64_t HW = s.H * s.W, OHW = s.out_h() * s.out_w();
          auto x = random_vec(s.N * s.C * HW, 21), w = random_vec(s.K * (s.C / s.group) * s.R * s.S, 22);
          const auto bias = random_vec(s.K, 23);
          if (s.x_blocked) x = blocked(x, s.N, s.C, HW);
          std::vector<float> packed(conv_packed_weight_floats_on(*t, c.tactic, s));
          conv_pack_weight_on(*t, c.tactic, s, w.data(), packed.data());
          std::vector<float> ws(conv_workspace_floats_on(*t, c.tactic, s, threads));
          Epilogue e;
          e.act = Act::Silu, e.bias = bias.data(), e.bias_per_row = true;
          std::vector<float> means(s.N * s.K, -1.f), out(s.N * s.K * OHW);
          e.channel_means = means.data();
          float* y = c.in_place ? x.data() : out.data();
          conv2d_on(*t, c.tactic, s, x.data(), packed.data(), y, e, ws.data(), threads);
          std::vector<float> plain(y, y + s.N * s.K * OHW);
          if (blocked_io) plain = blocked(plain, s.N, s.K, OHW, /*back=*/true);
          for (int64_t p = 0; p < s.N * s.K; ++p) {
            double sum = 0;
            for (int64_t i = 0; i < OHW; ++i) sum += plain[p * OHW + i];
            const double want = sum / static_cast<double>(OHW);
            ASSERT_NEAR(means[p], want, 1e-6 * std::max(1.0, std::fabs(want)))
                << isa_name(t->isa) << " C=" << s.C << " blocked " << blocked_io << " threads " << threads
                << " plane " << p;
          }
          ++ran;
        }
  EXPECT_GT(ran, 12);
}

TEST(Conv, BatchOfSmallImagesSplitsAcrossThreads) {
  const ConvCase three_by_three{shape(8, 8, 8, 8, 16, 3, 3, 1, 1), Act::Relu, true, true};
  const ConvCase one_by_one{shape(9, 32, 8, 8, 24, 1, 1, 1, 0), Act::Silu, true, true};  // 5 + 4
  for (const KernelTable* t : test::all_tables()) {
    for (ConvTactic tactic : {ConvTactic::Gemm, ConvTactic::PixelGemm, ConvTactic::Direct})
      for (bool own : {false, true}) check(*t, tactic, three_by_three, 2, own);
    for (bool own : {false, true}) check(*t, ConvTactic::Pointwise, one_by_one, 2, own);
  }
  // The workspace holds one one-thread slot per share.
  const Conv2dShape s = three_by_three.s;
  Conv2dShape share = s;
  share.N = 4;  // 8 images in two shares
  EXPECT_GE(conv_workspace_floats(ConvTactic::Direct, s, 2), 2 * conv_workspace_floats(ConvTactic::Direct, share, 1));
}

TEST(Conv, TransposeMatchesTheDefinition) {
  for (const KernelTable* t : test::all_tables())
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {49, 40}, {16, 16}, {17, 33}, {5, 100}}) {
      auto src = random_vec(rows * (cols + 3), 5);
      std::vector<float> dst(cols * (rows + 2), -7.f);
      t->transpose(src.data(), cols + 3, rows, cols, dst.data(), rows + 2);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          ASSERT_EQ(dst[j * (rows + 2) + i], src[i * (cols + 3) + j]) << isa_name(t->isa) << " " << i << "," << j;
      for (int64_t j = 0; j < cols; ++j)  // the padding past each destination row is untouched
        ASSERT_EQ(dst[j * (rows + 2) + rows], -7.f);
    }
}

// The fused transpose + epilogue (how the direct and pixel-gemm tactics write NCHW) equals the
// transpose followed by epilogue_tile bit for bit: every activation, every bias mode, alpha and
// a residual, on blocks with ragged rows and columns.
TEST(Conv, TransposeEpilogueEqualsTransposeThenEpilogue) {
  using Bias = TileEpilogue::Bias;
  for (const KernelTable* t : test::all_tables())
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {6, 16}, {6, 32}, {17, 33}, {16, 16}, {5, 100}})
      for (Act a : test::kAllActs)
        for (Bias bias : {Bias::None, Bias::PerRow, Bias::PerCol, Bias::Scalar})
          for (bool residual : {false, true}) {
            const int64_t lds = cols + 3, ldd = rows + 2;
            auto src = random_vec(rows * lds, 61, -4.f, 4.f);
            auto b = random_vec(std::max(rows, cols), 62), res = random_vec(cols * (rows + 5), 63);
            TileEpilogue e;
            e.alpha = bias == Bias::Scalar ? 1.f : 0.75f;
            e.bias = bias == Bias::None ? nullptr : b.data();
            e.bias_mode = bias;
            e.residual = residual ? res.data() : nullptr;
            e.ldr = rows + 5;
            e.act = a;
            test::act_params(a, e.act_alpha, e.act_beta);
            std::vector<float> want(cols * ldd, -7.f), got(cols * ldd, -7.f);
            t->transpose(src.data(), lds, rows, cols, want.data(), ldd);
            t->epilogue_tile(want.data(), ldd, cols, rows, e);
            t->transpose_epilogue(src.data(), lds, rows, cols, got.data(), ldd, e);
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
                  << isa_name(t->isa) << " " << test::act_label(a) << " bias " << int(bias) << " residual " << residual
                  << " " << rows << "x" << cols << " at " << i << ": " << got[i] << " vs " << want[i];
          }
}

TEST(Conv, TacticsSayWhyTheyDoNotApply) {
  Conv2dShape s = shape(1, 8, 8, 8, 8, 3, 3, 1, 1);
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Gemm, s), "");
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Pointwise, s), "kernel is not 1x1");
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, s),
            "not depthwise (needs group == C == K, or one input channel)");
  Conv2dShape bad = s;
  bad.group = 3;
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::Gemm, bad), "channels not divisible by group");
  std::vector<float> w(1000), y(1000), x(1000);
  EXPECT_THROW(conv2d(ConvTactic::Pointwise, s, x.data(), w.data(), y.data(), Epilogue{}, nullptr, 1), kiln::Error);
  EXPECT_STREQ(conv_tactic_name(ConvTactic::Depthwise), "depthwise");
  EXPECT_EQ(conv_tactic_unsupported(ConvTactic::PixelGemm, shape(1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 2)), "grouped");
  EXPECT_STREQ(conv_tactic_name(ConvTactic::PixelGemm), "pixel-gemm");
}

// What the lowering asks for by cost (conv_preferred_tactic) on the shapes this session measured:
// a single input channel with a small window stays depthwise, with a 256-tap one (Silero VAD's
// STFT) it does not; a 1-D convolution's one output row goes direct however few pixels it has
// (Silero's encoder: 129 -> 128, 3 taps, 4 outputs), where channels allow direct on this CPU.
TEST(Conv, PreferredTacticsForOneChannelWindowsAndOneRowOutputs) {
  EXPECT_EQ(conv_preferred_tactic(shape(3, 1, 8, 8, 16, 3, 3, 1, 1, 1, 1)), ConvTactic::Depthwise);
  Conv2dShape stft;
  stft.N = 1, stft.C = 1, stft.H = 1, stft.W = 640, stft.K = 258, stft.R = 1, stft.S = 256, stft.stride_w = 128;
  EXPECT_NE(conv_preferred_tactic(stft), ConvTactic::Depthwise);
  Conv2dShape enc;
  enc.N = 1, enc.C = 129, enc.H = 1, enc.W = 4, enc.K = 128, enc.R = 1, enc.S = 3, enc.pad_left = enc.pad_right = 1;
  ASSERT_EQ(enc.out_h(), 1);
  EXPECT_EQ(conv_preferred_tactic(enc), ConvTactic::Direct);
  // The same window over 2 rows of 1 pixel: the rows rule, not the 1-D one. (Rows of 4 fill
  // AVX2's 6-pixel tiles well enough for direct, AVX-512's 14-pixel ones not; 1 fills neither.)
  Conv2dShape two_rows = enc;
  two_rows.H = 2, two_rows.W = 1;
  ASSERT_EQ(two_rows.out_w(), 1);
  EXPECT_NE(conv_preferred_tactic(two_rows), ConvTactic::Direct);
}


// The output fetches for writing (ConvTileOut / TileEpilogue::fetch_for_write) are hints: the
// 1x1 schedule, the general direct tiles and the depthwise pair kernels (stride 1 and 2) write
// the same floats with them as without, and one thread never fetches.
TEST(Conv, WritePrefetchLeavesOutputsUnchanged) {
  set_write_prefetch(WritePrefetch::On);
  EXPECT_FALSE(write_prefetch_pays(1));
  set_write_prefetch(WritePrefetch::Off);
  EXPECT_FALSE(write_prefetch_pays(2));
  const std::vector<Conv2dShape> shapes = {shape(1, 96, 14, 14, 192, 1, 1, 1, 0), shape(1, 32, 20, 20, 64, 3, 3, 1, 1),
                                           shape(1, 32, 28, 28, 32, 3, 3, 1, 1, 1, 32),
                                           shape(1, 48, 28, 28, 48, 3, 3, 2, 1, 1, 48)};
  for (Conv2dShape s : shapes) {
    s.x_blocked = s.y_blocked = true;
    const ConvTactic tactic = s.group > 1 ? ConvTactic::Depthwise : ConvTactic::Direct;
    const int64_t OHW = s.out_h() * s.out_w();
    const auto x = blocked(random_vec(s.C * s.H * s.W, 31), 1, s.C, s.H * s.W);
    const auto w = random_vec(s.K * (s.C / s.group) * s.R * s.S, 32), bias = random_vec(s.K, 33);
    std::vector<float> packed(conv_packed_weight_floats(tactic, s));
    conv_pack_weight(tactic, s, w.data(), packed.data());
    Epilogue e;
    e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f, e.bias = bias.data(), e.bias_per_row = true;
    std::vector<float> plain(s.K * OHW, 777.f), fetched(s.K * OHW, -777.f);
    set_write_prefetch(WritePrefetch::Off);
    conv2d(tactic, s, x.data(), packed.data(), plain.data(), e, nullptr, 2);
    set_write_prefetch(WritePrefetch::On);
    conv2d(tactic, s, x.data(), packed.data(), fetched.data(), e, nullptr, 2);
    for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(fetched[i], plain[i]) << "C=" << s.C << " R=" << s.R << " at " << i;
  }
  set_write_prefetch(WritePrefetch::Auto);
}

// Claiming is a hint too: a run of kMinClaimBytes or more is zeroed and reported, a shorter
// one left alone; the depthwise kernels write the same floats with claims as without, touch
// nothing outside their output (guards on both sides), and claim nothing they still read (a
// layer planned in place, whose input the claim would have zeroed first).
TEST(Conv, ClaimedOutputsAreTheUnclaimedFloats) {
  std::vector<float> run(kMinClaimBytes / sizeof(float) + 32, 5.f);
  EXPECT_FALSE(claim_for_write(run.data() + 16, kMinClaimBytes - 64));
  EXPECT_EQ(run[16], 5.f);
  EXPECT_TRUE(claim_for_write(run.data() + 16, kMinClaimBytes));
  EXPECT_EQ(run[15], 5.f);
  EXPECT_EQ(run[16], 0.f);
  EXPECT_EQ(run[16 + kMinClaimBytes / sizeof(float) - 1], 0.f);
  EXPECT_EQ(run[16 + kMinClaimBytes / sizeof(float)], 5.f);
  set_claim_output(ClaimOutput::Off);
  EXPECT_FALSE(claim_output_pays(2));
  set_claim_output(ClaimOutput::On);
  EXPECT_TRUE(claim_output_pays(1));

  const KernelTable& t = kernel_table();
  if (!t.depthwise_block || t.simd_width < 8) {
    set_claim_output(ClaimOutput::Auto);
    GTEST_SKIP() << "no blocked depthwise kernel on this CPU";
  }
  const bool wide = t.isa == Isa::Avx512;
  // Two 28-row bands of 8-channel blocks (50 KiB a block's band); whole 28x28 planes (a part's
  // run of blocks); a stride-2 layer in bands; 16-channel blocks in two bands (28 KiB) and in
  // whole 7x7 planes (a piece's run of eight 16-channel blocks: 25 KiB).
  struct Case {
    Conv2dShape s;
    int64_t block;
  };
  std::vector<Case> cases = {{shape(1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 64), kConvBlock},
                             {shape(1, 192, 28, 28, 192, 3, 3, 1, 1, 1, 192), kConvBlock},
                             {shape(1, 144, 56, 56, 144, 3, 3, 2, 1, 1, 144), kConvBlock}};
  if (wide) {
    cases.push_back({shape(1, 32, 56, 16, 32, 3, 3, 1, 1, 1, 32), kConvBlockWide});
    cases.push_back({shape(1, 1024, 7, 7, 1024, 3, 3, 1, 1, 1, 1024), kConvBlockWide});
  }
  constexpr int64_t kGuard = 64;
  for (Case c : cases) {
    Conv2dShape& s = c.s;
    s.x_blocked = s.y_blocked = true, s.x_block = s.y_block = c.block;
    ASSERT_EQ(conv_tactic_unsupported(ConvTactic::Depthwise, s), "") << "C=" << s.C << " H=" << s.H;
    const int64_t HW = s.H * s.W, OHW = s.out_h() * s.out_w();
    const auto x = blocked(random_vec(s.C * HW, 41), 1, s.C, HW, false, c.block);
    const auto w = random_vec(s.K * s.R * s.S, 42), bias = random_vec(s.K, 43);
    std::vector<float> packed(conv_packed_weight_floats_on(t, ConvTactic::Depthwise, s));
    conv_pack_weight_on(t, ConvTactic::Depthwise, s, w.data(), packed.data());
    Epilogue e;
    e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f, e.bias = bias.data(), e.bias_per_row = true;
    for (int threads : {1, 2}) {
      std::vector<float> plain(s.K * OHW + 2 * kGuard, 777.f), claimed(plain.size(), -777.f);
      set_claim_output(ClaimOutput::Off);
      conv2d_on(t, ConvTactic::Depthwise, s, x.data(), packed.data(), plain.data() + kGuard, e, nullptr, threads);
      set_claim_output(ClaimOutput::On);
      conv2d_on(t, ConvTactic::Depthwise, s, x.data(), packed.data(), claimed.data() + kGuard, e, nullptr, threads);
      for (int64_t i = 0; i < kGuard; ++i) {
        ASSERT_EQ(claimed[i], -777.f) << "C=" << s.C << " guard before, at " << i;
        ASSERT_EQ(claimed[claimed.size() - 1 - i], -777.f) << "C=" << s.C << " guard after, at " << i;
      }
      for (size_t i = kGuard; i + kGuard < plain.size(); ++i)
        ASSERT_EQ(claimed[i], plain[i]) << "C=" << s.C << " H=" << s.H << " stride " << s.stride_h << " threads "
                                        << threads << " at " << i - kGuard;
    }
  }
  // The direct tactic's padded copy claims its rows too: a stem's planes (25 KiB runs of rows a
  // piece), two images (the second reuses the first's padding, which the claim zeroes again).
  {
    const Conv2dShape stem = shape(2, 3, 224, 224, 32, 3, 3, 2, 1);
    const int64_t OHW = stem.out_h() * stem.out_w();
    const auto x = random_vec(stem.N * stem.C * stem.H * stem.W, 46), w = random_vec(32 * 27, 47);
    std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, stem));
    conv_pack_weight(ConvTactic::Direct, stem, w.data(), packed.data());
    Epilogue e;
    e.act = Act::Relu;
    std::vector<float> plain(stem.N * stem.K * OHW, 777.f), claimed(plain.size(), -777.f);
    set_claim_output(ClaimOutput::Off);
    conv2d(ConvTactic::Direct, stem, x.data(), packed.data(), plain.data(), e, nullptr, 2);
    set_claim_output(ClaimOutput::On);
    conv2d(ConvTactic::Direct, stem, x.data(), packed.data(), claimed.data(), e, nullptr, 2);
    for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(claimed[i], plain[i]) << "stem, at " << i;
  }
  // In place: the parts' runs are long enough to claim, and claiming them would zero the input.
  Conv2dShape in_place = shape(1, 384, 12, 12, 384, 3, 3, 1, 1, 1, 384);
  in_place.x_blocked = in_place.y_blocked = true;
  ASSERT_TRUE(conv_depthwise_in_place(in_place));
  const int64_t HW = in_place.H * in_place.W;
  const auto x = blocked(random_vec(in_place.C * HW, 44), 1, in_place.C, HW);
  const auto w = random_vec(in_place.K * 9, 45);
  std::vector<float> packed(conv_packed_weight_floats_on(t, ConvTactic::Depthwise, in_place));
  conv_pack_weight_on(t, ConvTactic::Depthwise, in_place, w.data(), packed.data());
  std::vector<float> apart(x.size()), same = x;
  set_claim_output(ClaimOutput::Off);
  conv2d_on(t, ConvTactic::Depthwise, in_place, x.data(), packed.data(), apart.data(), Epilogue{}, nullptr, 2);
  set_claim_output(ClaimOutput::On);
  conv2d_on(t, ConvTactic::Depthwise, in_place, same.data(), packed.data(), same.data(), Epilogue{}, nullptr, 2);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(same[i], apart[i]) << "in place, at " << i;
  set_claim_output(ClaimOutput::Auto);
}

// The RGB stems as pixel vectors (detail::conv_direct_stem, AVX-512) against the direct tile
// (the stem bands, or the padded copy at one thread): the same floats (compared with ==). One to
// four input channels; 8 to 64 output channels (24: a partial weight panel); rows of one, three
// and seven pixel vectors, so that tiles of three vectors cross rows and end in one or two; an
// odd height (the last window row below the image); two images; bias and Clip, Relu without a
// bias, a scale; one to three threads (at two, the output lines fetched for writing). A tap read
// from the wrong column, channel or row, a weight from the wrong panel row, or an output pixel or
// channel transposed to the wrong place would show.
TEST(Conv, RgbStemsAsPixelVectorsMatchTheDirectTile) {
  const KernelTable& t = kernel_table();
  if (t.isa != Isa::Avx512) GTEST_SKIP() << "the pixel-vector stem is AVX-512 only";
  const std::vector<Conv2dShape> shapes = {
      shape(2, 3, 224, 224, 32, 3, 3, 2, 1),  // mobilenet_v2's, two images
      shape(1, 3, 64, 64, 64, 3, 3, 2, 1),    shape(1, 1, 37, 64, 8, 3, 3, 2, 1),
      shape(1, 4, 30, 96, 24, 3, 3, 2, 1),    shape(1, 2, 20, 32, 16, 3, 3, 2, 1),
  };
  int ran = 0;
  for (Conv2dShape s : shapes) {
    s.y_blocked = true;
    const auto x = random_vec(s.N * s.C * s.H * s.W, 71), w = random_vec(s.K * s.C * 9, 72),
               bias = random_vec(s.K, 73);
    std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
    conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
    for (int epi = 0; epi < 3; ++epi) {
      Epilogue e;
      if (epi == 0) e.bias = bias.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
      if (epi == 1) e.act = Act::Relu;
      if (epi == 2) e.alpha = 0.5f, e.bias = bias.data(), e.bias_per_row = true;
      ASSERT_TRUE(detail::direct_stem_applies(t, s, e)) << s.C << " -> " << s.K << " at " << s.H << "x" << s.W;
      const size_t out = static_cast<size_t>(s.N * s.y_image_floats());
      for (int threads : {1, 2, 3}) {
        std::vector<float> tile(out, -7.f), pixels(out, -5.f);
        detail::direct_stem_enabled = false;
        conv2d(ConvTactic::Direct, s, x.data(), packed.data(), tile.data(), e, nullptr, threads);
        detail::direct_stem_enabled = true;
        // Every other run with the output lines fetched for writing (prefetches only).
        set_write_prefetch(threads == 2 ? WritePrefetch::On : WritePrefetch::Off);
        conv2d(ConvTactic::Direct, s, x.data(), packed.data(), pixels.data(), e, nullptr, threads);
        set_write_prefetch(WritePrefetch::Auto);
        size_t nonzero = 0;
        for (float v : tile) nonzero += v != 0.f;
        EXPECT_GT(nonzero, out / 4);
        for (size_t i = 0; i < out; ++i)
          ASSERT_EQ(pixels[i], tile[i]) << s.C << " -> " << s.K << " at " << s.H << "x" << s.W << ", epilogue " << epi
                                        << ", threads " << threads << ", at " << i;
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, 45);
  // Not for: padded output planes, a residual, SiLU, stride 1, five channels, an odd width, rows
  // of a part of a vector, 16-channel output blocks, a blocked input.
  Conv2dShape s = shape(1, 3, 64, 64, 32, 3, 3, 2, 1);
  s.y_blocked = true;
  EXPECT_TRUE(detail::direct_stem_applies(t, s, Epilogue{}));
  std::vector<float> res(32 * 32 * 32);
  Epilogue with_residual;
  with_residual.residual = res.data();
  EXPECT_FALSE(detail::direct_stem_applies(t, s, with_residual));
  Epilogue silu;
  silu.act = Act::Silu;
  EXPECT_FALSE(detail::direct_stem_applies(t, s, silu));
  auto refused = [&](Conv2dShape v) { return !detail::direct_stem_applies(t, v, Epilogue{}); };
  Conv2dShape v = s;
  v.y_pad_top = v.y_pad_left = v.y_pad_bottom = v.y_pad_right = 1;
  EXPECT_TRUE(refused(v));
  v = s, v.stride_h = v.stride_w = 1;
  EXPECT_TRUE(refused(v));
  v = s, v.C = 5;
  EXPECT_TRUE(refused(v));
  v = s, v.W = 63;
  EXPECT_TRUE(refused(v));
  v = s, v.W = 48;  // 24 outputs a row
  EXPECT_TRUE(refused(v));
  v = s, v.y_block = kConvBlockWide;
  EXPECT_TRUE(refused(v));
  v = s, v.C = 8, v.x_blocked = true;
  EXPECT_TRUE(refused(v));
}

// The RGB stems band by band (detail::conv_direct_bands: each band's padded input rows in the
// thread's scratch, the band written into the output's planes) against the padded copy's
// schedule: the same outputs (the zero rows' products add zeros: compared with ==, so a -0 and
// a +0 count as equal), at two and three threads, two images, 8- and 16-channel output blocks.
TEST(Conv, StemsBandByBandMatchThePaddedCopy) {
  struct Stem {
    Conv2dShape s;
    int64_t block;
  };
  const bool avx512 = kernel_table().simd_width == kConvBlockWide;
  std::vector<Stem> stems = {{shape(2, 3, 224, 224, 32, 3, 3, 2, 1), kConvBlock},  // mobilenet_v2's
                             {shape(1, 3, 64, 60, 64, 3, 3, 2, 1), kConvBlock},    // 64 channels, smaller
                             {shape(1, 1, 30, 30, 16, 3, 3, 1, 1), kConvBlock}};   // one channel, stride 1
  if (avx512) stems.push_back({shape(1, 3, 96, 96, 32, 3, 3, 2, 1), kConvBlockWide});
  // Into plain blocked planes, and into planes with a one-pixel zero border that the next
  // (depthwise) layer reads as its padding, as in mobilenet_v2 (lower/padded_layout.cpp).
  int padded_runs = 0;
  for (const Stem& st : stems) {
    for (int64_t y_pad : {0, 1}) {
      Conv2dShape s = st.s;
      s.y_blocked = true, s.y_block = st.block;
      s.y_pad_top = s.y_pad_left = s.y_pad_bottom = s.y_pad_right = y_pad;
      if (!conv_tactic_unsupported(ConvTactic::Direct, s).empty()) continue;
      padded_runs += y_pad != 0;
      SCOPED_TRACE(std::to_string(s.C) + " -> " + std::to_string(s.K) + " " + std::to_string(s.R) + "x" +
                   std::to_string(s.S) + "/" + std::to_string(s.stride_h) + " at " + std::to_string(s.H) + "x" +
                   std::to_string(s.W) + ", output border " + std::to_string(y_pad));
      Epilogue e;
      EXPECT_TRUE(detail::direct_bands_apply(s, e, 2));
      EXPECT_FALSE(detail::direct_bands_apply(s, e, 1));
      const auto x = random_vec(s.N * s.C * s.H * s.W, 61), w = random_vec(s.K * s.C * s.R * s.S, 62),
                 bias = random_vec(s.K, 63);
      std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
      conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
      e.bias = bias.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
      const size_t out = static_cast<size_t>(s.N * s.y_image_floats());
      std::vector<float> copied(out);
      detail::direct_bands_enabled = false;
      detail::direct_stem_enabled = false;  // the bands against the copy, not the pixel-vector stem
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), copied.data(), e, nullptr, 2);
      detail::direct_bands_enabled = true;
      size_t nonzero = 0;
      for (float v : copied) nonzero += v != 0.f;
      EXPECT_GT(nonzero, out / 4);
      for (int threads : {2, 3}) {
        std::vector<float> banded(out, -5.f);
        conv2d(ConvTactic::Direct, s, x.data(), packed.data(), banded.data(), e, nullptr, threads);
        for (size_t i = 0; i < out; ++i) ASSERT_EQ(banded[i], copied[i]) << "threads " << threads << ", at " << i;
      }
      detail::direct_stem_enabled = true;
    }
  }
  EXPECT_GE(padded_runs, 2);
  // Not for blocked or unpadded inputs, one thread, NCHW outputs, or windows above 3x3 (resnet's 7x7).
  Conv2dShape resnet_stem = shape(1, 3, 224, 224, 64, 7, 7, 2, 3);
  resnet_stem.y_blocked = true;
  EXPECT_FALSE(detail::direct_bands_apply(resnet_stem, Epilogue{}, 2));
  Conv2dShape b = shape(1, 16, 28, 28, 32, 3, 3, 1, 1);
  b.x_blocked = b.y_blocked = true;
  EXPECT_FALSE(detail::direct_bands_apply(b, Epilogue{}, 2));
  Conv2dShape planar_out = shape(1, 3, 28, 28, 32, 3, 3, 1, 1);
  EXPECT_FALSE(detail::direct_bands_apply(planar_out, Epilogue{}, 2));
}

// Narrow images one output row a tile, the padding's taps skipped (detail::conv_direct_edge_rows,
// AVX-512's 8-wide rows): against the reference (check), and against the general schedule's
// padded copy bit for bit (a skipped tap is an FMA of a padding zero): digits_cnn's 16 -> 32 on a
// batch, a second panel of 8 columns (K = 40), 16-channel blocks in and out, one- and two-row
// images (the top and bottom row classes at once / alone), every fused activation, bias and
// residual or neither, one to three threads.
TEST(Conv, EdgeRowsEqualTheGeneralScheduleBitForBit) {
  const KernelTable& t = kernel_table();
  struct Case {
    ConvCase c;
    int64_t block;
  };
  std::vector<Case> cases = {
      {{shape(5, 16, 8, 8, 32, 3, 3, 1, 1), Act::Relu, true, false}, kConvBlock},   // digits_cnn's
      {{shape(2, 8, 8, 8, 40, 3, 3, 1, 1), Act::Clip, true, true}, kConvBlock},     // 32 + 8 columns
      {{shape(1, 24, 1, 8, 32, 3, 3, 1, 1), Act::LeakyRelu, true, true}, kConvBlock},  // one row
      {{shape(3, 16, 2, 8, 16, 3, 3, 1, 1), Act::None, false, false}, kConvBlock},  // two rows, half a panel
      {{shape(2, 32, 8, 8, 64, 3, 3, 1, 1), Act::Relu, true, true}, kConvBlockWide},
  };
  int ran = 0;
  for (Case& k : cases) {
    Conv2dShape& s = k.c.s;
    s.x_blocked = s.y_blocked = true;
    s.x_block = s.y_block = k.block;
    if (!conv_tactic_unsupported(ConvTactic::Direct, s).empty()) continue;
    Epilogue e;
    e.act = k.c.act;
    if (!detail::direct_edge_rows_apply(t, s, e)) continue;  // a table without the tile
    ++ran;
    SCOPED_TRACE(std::to_string(s.N) + " x " + std::to_string(s.C) + " -> " + std::to_string(s.K) + " at " +
                 std::to_string(s.H) + "x" + std::to_string(s.W) + ", blocks of " + std::to_string(k.block));
    for (int threads : {1, 2}) check(t, ConvTactic::Direct, k.c, threads, threads == 2);
    const int64_t HW = s.H * s.W;
    const auto x = random_vec(s.N * s.C * HW, 71), w = random_vec(s.K * s.C * 9, 72), bias = random_vec(s.K, 73),
               res = random_vec(s.N * s.K * HW, 74);
    test::act_params(e.act, e.act_alpha, e.act_beta);
    if (k.c.bias) e.bias = bias.data(), e.bias_per_row = true;
    if (k.c.residual) e.residual = res.data(), e.ldr = HW;
    std::vector<float> packed(conv_packed_weight_floats(ConvTactic::Direct, s));
    conv_pack_weight(ConvTactic::Direct, s, w.data(), packed.data());
    std::vector<float> general(s.N * s.K * HW);
    detail::direct_edge_rows_enabled = false;
    conv2d(ConvTactic::Direct, s, x.data(), packed.data(), general.data(), e, nullptr, 2);
    detail::direct_edge_rows_enabled = true;
    for (int threads : {1, 2, 3}) {
      std::vector<float> rows(general.size(), -7.f);
      conv2d(ConvTactic::Direct, s, x.data(), packed.data(), rows.data(), e, nullptr, threads);
      for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i], general[i]) << "threads " << threads << ", at " << i;
    }
  }
  if (t.simd_width == kConvBlockWide) {
    EXPECT_EQ(ran, static_cast<int>(cases.size()));
  }
  // Not for other widths (no tile), strides, windows or padding, planar or padded activations,
  // channel means, or an activation the tile cannot apply.
  Conv2dShape digits = shape(1, 16, 8, 8, 32, 3, 3, 1, 1);
  digits.x_blocked = digits.y_blocked = true;
  const bool has = detail::direct_edge_rows_apply(t, digits, Epilogue{});
  EXPECT_EQ(has, t.simd_width == kConvBlockWide);
  for (auto change : std::vector<std::function<void(Conv2dShape&)>>{
           [](Conv2dShape& s) { s.W = 9; },
           [](Conv2dShape& s) { s.stride_h = s.stride_w = 2; },
           [](Conv2dShape& s) { s.R = s.S = 5, s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 2; },
           [](Conv2dShape& s) { s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 0; },
           [](Conv2dShape& s) { s.x_blocked = false; },
           [](Conv2dShape& s) { s.y_blocked = false; },
           [](Conv2dShape& s) { s.x_padded = true; },
           [](Conv2dShape& s) { s.C = 128; },  // 9 C past one K block
       }) {
    Conv2dShape s = digits;
    change(s);
    EXPECT_FALSE(detail::direct_edge_rows_apply(t, s, Epilogue{}));
  }
  Epilogue silu;
  silu.act = Act::Silu;
  EXPECT_FALSE(detail::direct_edge_rows_apply(t, digits, silu));
  float means[32];
  Epilogue with_means;
  with_means.channel_means = means;
  EXPECT_FALSE(detail::direct_edge_rows_apply(t, digits, with_means));
}

}  // namespace
}  // namespace kiln::kernels

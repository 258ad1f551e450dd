// Pooling kernels (pool.h) against naive loops on every kernel table: max exact, average within
// 1e-6 relative (f32 sums of <= 49 taps, one reciprocal), over strides, pads, dilations, ragged
// widths, extra bottom/right padding (ceil_mode) and both count_include_pad settings; the global
// average equal to the reference kernel's sequential double sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_test_util.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/pool.h"

namespace kiln::kernels {
namespace {

using test::all_tables;
using test::random_vec;

std::vector<float> naive_pool(PoolKind kind, const Conv2dShape& s, bool include_pad, const std::vector<float>& x) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  std::vector<float> y(s.N * s.C * OH * OW);
  for (int64_t p = 0; p < s.N * s.C; ++p)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0;
        for (int64_t r = 0; r < s.R; ++r)
          for (int64_t c = 0; c < s.S; ++c) {
            const int64_t ih = i * s.stride_h - s.pad_top + r * s.dil_h, iw = j * s.stride_w - s.pad_left + c * s.dil_w;
            if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
            const double v = x[(p * s.H + ih) * s.W + iw];
            best = std::max(best, v), sum += v, ++inside;
          }
        const double avg = sum / static_cast<double>(include_pad ? s.R * s.S : inside);
        y[(p * OH + i) * OW + j] = static_cast<float>(kind == PoolKind::Max ? best : avg);
      }
  return y;
}

void check(const Conv2dShape& s, const std::string& label) {
  const std::vector<float> x = random_vec(s.N * s.C * s.H * s.W, 7, -3.f, 2.f);
  for (const KernelTable* t : all_tables())
    for (PoolKind kind : {PoolKind::Max, PoolKind::Average})
      for (bool include_pad : {false, true})
        for (int threads : {1, 2}) {
          if (kind == PoolKind::Max && include_pad) continue;
          const std::vector<float> want = naive_pool(kind, s, include_pad, x);
          std::vector<float> y(want.size(), 123.f), ws(pool2d_workspace_floats_on(*t, s, threads));
          pool2d_on(*t, kind, s, include_pad, x.data(), y.data(), threads == 2 ? ws.data() : nullptr, threads);
          for (size_t i = 0; i < y.size(); ++i) {
            const float tol = kind == PoolKind::Max ? 0.f : 1e-6f * std::max(1.f, std::fabs(want[i]));
            ASSERT_NEAR(y[i], want[i], tol) << label << " isa " << isa_name(t->isa) << " kind "
                                            << static_cast<int>(kind) << " include_pad " << include_pad
                                            << " threads " << threads << " at " << i;
          }
        }
}

Conv2dShape pool_shape(int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t stride, int64_t pad,
                       int64_t dil = 1) {
  Conv2dShape s;
  s.N = 2, s.C = s.K = s.group = C, s.H = H, s.W = W, s.R = R, s.S = S;
  s.stride_h = s.stride_w = stride, s.dil_h = s.dil_w = dil;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
  return s;
}

TEST(Pool, ResNetStemWindow) { check(pool_shape(8, 112, 112, 3, 3, 2, 1), "3x3 s2 p1 112"); }  // 2 threads pay here
TEST(Pool, StridesPadsDilationsAndRaggedWidths) {
  check(pool_shape(5, 9, 13, 2, 2, 2, 0), "2x2 s2");  // odd sizes: the last row and column unused
  check(pool_shape(96, 64, 62, 2, 2, 2, 0), "2x2 s2, rows on 2 threads");
  check(pool_shape(4, 17, 21, 3, 3, 1, 1), "3x3 s1 p1");
  check(pool_shape(3, 15, 19, 3, 2, 3, 1, 2), "3x2 s3 p1 d2");
  check(pool_shape(2, 7, 7, 7, 7, 1, 0), "7x7 global-like");
  check(pool_shape(2, 33, 35, 5, 5, 2, 2), "5x5 s2 p2");
  check(pool_shape(3, 12, 15, 3, 3, 2, 2), "3x3 s2 p2: windows with one inside row or column");
  check(pool_shape(2, 1, 40, 3, 3, 2, 1), "3x3 s2 p1 on one row");
  // The 3x3/2 row kernel works in blocks of 64 outputs: rows of 150 and 129 outputs.
  check(pool_shape(2, 5, 300, 3, 3, 2, 1), "3x3 s2 p1, 150 outputs a row");
  Conv2dShape s = pool_shape(2, 6, 257, 3, 3, 2, 0);
  s.pad_left = 2, s.pad_right = 1, s.pad_top = 0, s.pad_bottom = 2;  // uneven borders, 129 outputs
  check(s, "3x3 s2 pads 2/1 left/right, 0/2 top/bottom");
}
TEST(Pool, SmallPlanesStackedIntoTallerOnes) {
  Conv2dShape s = pool_shape(70, 8, 8, 2, 2, 2, 0);  // 140 planes of 4x4 outputs: two units, the last short
  check(s, "digits 2x2 s2");
  s.pad_left = s.pad_right = 1;  // horizontal padding only: still stacked, averages count inside taps
  check(s, "2x2 s2 pad w");
}
TEST(Pool, ExtraBottomRightPaddingLikeCeilMode) {
  Conv2dShape s = pool_shape(3, 10, 11, 3, 3, 2, 0);
  s.pad_bottom = 1, s.pad_right = 2;  // windows reach past the input: only inside taps count
  check(s, "ceil-like");
}

TEST(Pool, GlobalAverageIsTheReferenceDoubleMean) {
  for (const KernelTable* t : all_tables())
    for (int64_t size : {1, 7, 49, 50, 3136, 12544}) {
      const int64_t planes = 5;
      const std::vector<float> x = random_vec(planes * size, 3, -1.f, 2.f);
      std::vector<float> y(planes);
      global_average_pool_on(*t, x.data(), planes, size, y.data(), 2);
      for (int64_t p = 0; p < planes; ++p) {
        double sum = 0;
        for (int64_t i = 0; i < size; ++i) sum += x[p * size + i];
        EXPECT_EQ(y[p], static_cast<float>(sum / static_cast<double>(size)))  // as the reference kernel
            << isa_name(t->isa) << " size " << size << " plane " << p;
      }
    }
}

// [N][C][HW] <-> [N][C/8][HW][8] (kConvBlock).
std::vector<float> to_blocked(const std::vector<float>& v, int64_t N, int64_t C, int64_t HW, bool back = false) {
  std::vector<float> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < HW; ++i) {
        const int64_t plain = (n * C + c) * HW + i, blk = ((n * C + c / 8 * 8) * HW + i * 8) + c % 8;
        (back ? out[plain] : out[blk]) = back ? v[blk] : v[plain];
      }
  return out;
}

// The channel-blocked max pool equals the planar one, exactly, on every table: the resnet
// stem window, strides 1..3, asymmetric pads, dilation, ragged widths (odd output counts: the
// AVX-512 pair of pixels and its single tail), the plain 2x2 window (its own loop; an odd
// width and height leave a column and a row out), batch 2, 1 and 2 threads; written blocked
// and written NCHW.
TEST(Pool, ChannelBlockedMaxPoolMatchesThePlanarOne) {
  std::vector<Conv2dShape> shapes = {pool_shape(16, 112, 112, 3, 3, 2, 1), pool_shape(8, 9, 13, 3, 3, 1, 1),
                                     pool_shape(24, 10, 11, 2, 2, 2, 0),   pool_shape(8, 15, 17, 3, 2, 3, 1, 2),
                                     pool_shape(8, 7, 7, 5, 5, 1, 2),      pool_shape(32, 8, 8, 2, 2, 2, 0),
                                     pool_shape(16, 9, 6, 2, 2, 2, 0)};
  Conv2dShape asym = pool_shape(16, 12, 15, 3, 3, 2, 0);
  asym.pad_left = 2, asym.pad_right = 1, asym.pad_bottom = 2;
  shapes.push_back(asym);
  for (const Conv2dShape& s : shapes) {
    const std::vector<float> x = random_vec(s.N * s.C * s.H * s.W, 9, -3.f, 2.f);
    const std::vector<float> want = naive_pool(PoolKind::Max, s, false, x);
    const std::vector<float> xb = to_blocked(x, s.N, s.C, s.H * s.W);
    for (const KernelTable* t : all_tables())
      for (int threads : {1, 2}) {
        std::vector<float> yb(want.size(), 123.f);
        max_pool_blocked_on(*t, s, xb.data(), yb.data(), threads);
        const std::vector<float> y = to_blocked(yb, s.N, s.C, s.out_h() * s.out_w(), /*back=*/true);
        std::vector<float> planar(want.size(), 123.f);
        max_pool_blocked_on(*t, s, xb.data(), planar.data(), threads, /*planar_out=*/true);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_EQ(y[i], want[i]) << isa_name(t->isa) << " C=" << s.C << " H=" << s.H << " W=" << s.W << " R=" << s.R
                                   << " stride=" << s.stride_w << " threads=" << threads << " at " << i;
          ASSERT_EQ(planar[i], want[i]) << "NCHW out, " << isa_name(t->isa) << " C=" << s.C << " H=" << s.H
                                        << " R=" << s.R << " threads=" << threads << " at " << i;
        }
      }
  }
}

TEST(Pool, ChannelBlockedGlobalAverageIsTheDoubleMean) {
  const int64_t N = 2, C = 24;
  for (int64_t size : {1, 49, 3136}) {
    const std::vector<float> x = random_vec(N * C * size, 4, -1.f, 2.f);
    const std::vector<float> xb = to_blocked(x, N, C, size);
    std::vector<float> y(N * C);
    global_average_pool_blocked(xb.data(), N, C, size, y.data(), 2);
    for (int64_t p = 0; p < N * C; ++p) {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += x[p * size + i];
      EXPECT_EQ(y[p], static_cast<float>(sum / static_cast<double>(size))) << "size " << size << " plane " << p;
    }
  }
}

}  // namespace
}  // namespace kiln::kernels

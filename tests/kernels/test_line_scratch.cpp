// The GEMM driver's thread scratch (src/kernels/line_scratch.h): every buffer it hands out starts on
// a cache line, so packed panels are loaded without line splits.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/line_scratch.h"

namespace {

using kiln::kernels::detail::LineScratch;

bool on_line(const float* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(LineScratch, BuffersStartOnACacheLineAndGrowOnlyWhenAsked) {
  LineScratch s;
  // Sizes on both sides of glibc's mmap threshold (128 KiB), where a std::vector<float> starts 16
  // bytes past a line.
  float* small = s.floats(5);
  EXPECT_TRUE(on_line(small));
  small[4] = 1.f;
  float* big = s.floats(300000);
  EXPECT_TRUE(on_line(big));
  big[299999] = 2.f;  // the whole request is writable
  EXPECT_EQ(s.floats(1000), big) << "a smaller request reuses the buffer";
  float* bigger = s.floats(1 << 20);
  EXPECT_TRUE(on_line(bigger));
  bigger[(1 << 20) - 1] = 3.f;
}

}  // namespace

// The prelude's approximations against correctly rounded results (double-precision libm rounded
// to float), over every 997th float bit pattern (all signs, denormals, huge values, inf, NaN)
// plus hand-picked specials, compiled as generated code is (this machine's ISA, and scalar).
// Also the f16/bf16 conversions, bit for bit against kiln's own (all 65536 halves).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "codegen/codegen_test_util.h"

namespace kiln::codegen::test {
namespace {

struct MathFn {
  const char* name;          // prelude function
  double (*reference)(double);
  int max_ulp;               // stated in the prelude's header comment
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

const MathFn kFns[] = {
    {"kiln_exp", [](double x) { return std::exp(x); }, 1},
    {"kiln_expm1", [](double x) { return std::expm1(x); }, 2},
    {"kiln_log", [](double x) { return std::log(x); }, 1},
    {"kiln_log1p", [](double x) { return std::log1p(x); }, 2},
    {"kiln_tanh", [](double x) { return std::tanh(x); }, 2},
    {"kiln_sigmoid", sigmoid_ref, 2},
    {"kiln_erf", [](double x) { return std::erf(x); }, 2},
};

std::string probes() {
  std::string s;
  for (const MathFn& f : kFns)
    s += str_cat("extern \"C\" void probe_", f.name, "(const float* x, float* y, int64_t n) {\n  KILN_VECTOR_LOOP\n",
                 "  for (int64_t i = 0; i < n; ++i) y[i] = ", f.name, "(x[i]);\n}\n");
  s += R"(
extern "C" void probe_h2f(const uint16_t* x, float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = kiln_h2f(x[i]); }
extern "C" void probe_f2h(const float* x, uint16_t* y, int64_t n) {
  KILN_VECTOR_LOOP
  for (int64_t i = 0; i < n; ++i) y[i] = kiln_f2h(x[i]);
}
extern "C" void probe_f2bf(const float* x, uint16_t* y, int64_t n) {
  KILN_VECTOR_LOOP
  for (int64_t i = 0; i < n; ++i) y[i] = kiln_f2bf(x[i]);
}
)";
  return s;
}

int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t{INT32_MIN} - i : i;
}

std::vector<float> sample_floats() {
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 997) {
    float f;
    uint32_t b = static_cast<uint32_t>(u);
    std::memcpy(&f, &b, 4);
    xs.push_back(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1.17549435e-38f, 88.72f, 88.73f, 89.0f,
                  -87.3f, -103.9f, -104.0f, -110.0f, 1.0f, -1.0f, 0.875f, -0.875f, 3.93f, 0.625f, -0.625f, 65519.0f,
                  65520.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 1e30f, -1e30f})
    xs.push_back(f);
  return xs;
}

using Probe = void (*)(const void*, void*, int64_t);

class PreludeMath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    BuildOptions bo;
    bo.cache_dir = test_cache_dir();
    bo.target_isa = GetParam();
    lib_ = std::make_unique<LoadedLibrary>(build_kernel_library({{"probes", probes()}}, bo).path);
  }
  Probe probe(const std::string& name) { return reinterpret_cast<Probe>(lib_->symbol("probe_" + name)); }
  std::unique_ptr<LoadedLibrary> lib_;
};

TEST_P(PreludeMath, ErrorsWithinStatedUlps) {
  const std::vector<float> xs = sample_floats();
  std::vector<float> ys(xs.size());
  for (const MathFn& f : kFns) {
    probe(f.name)(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
    int64_t worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float want = static_cast<float>(f.reference(static_cast<double>(xs[i])));
      const float got = ys[i];
      if (std::isnan(want) || std::isnan(got)) {
        ASSERT_TRUE(std::isnan(want) && std::isnan(got)) << f.name << "(" << xs[i] << ") = " << got << ", want " << want;
        continue;
      }
      if (std::isinf(want)) {
        ASSERT_EQ(got, want) << f.name << "(" << xs[i] << ")";
      }
      const int64_t ulps = std::abs(ordered(got) - ordered(want));
      if (ulps > worst) worst = ulps, worst_x = xs[i];
    }
    EXPECT_LE(worst, f.max_ulp) << f.name << " is off by " << worst << " ulp at " << worst_x;
  }
}

TEST_P(PreludeMath, SignedZerosAndLimits) {
  const std::vector<float> xs = {-0.0f, 0.0f, INFINITY, -INFINITY};
  std::vector<float> ys(xs.size());
  probe("kiln_tanh")(xs.data(), ys.data(), 4);
  EXPECT_TRUE(ys[0] == 0 && std::signbit(ys[0]));
  EXPECT_EQ(ys[2], 1.0f);
  EXPECT_EQ(ys[3], -1.0f);
  probe("kiln_erf")(xs.data(), ys.data(), 4);
  EXPECT_TRUE(ys[0] == 0 && std::signbit(ys[0]));
  EXPECT_EQ(ys[2], 1.0f);
  EXPECT_EQ(ys[3], -1.0f);
  probe("kiln_exp")(xs.data(), ys.data(), 4);
  EXPECT_EQ(ys[2], INFINITY);
  EXPECT_EQ(ys[3], 0.0f);
  probe("kiln_log")(xs.data(), ys.data(), 4);
  EXPECT_EQ(ys[0], -INFINITY);
  EXPECT_EQ(ys[1], -INFINITY);
  EXPECT_EQ(ys[2], INFINITY);
  EXPECT_TRUE(std::isnan(ys[3]));
  probe("kiln_sigmoid")(xs.data(), ys.data(), 4);
  EXPECT_EQ(ys[2], 1.0f);
  EXPECT_EQ(ys[3], 0.0f);
}

TEST_P(PreludeMath, HalfConversionsMatchKilnBitForBit) {
  std::vector<uint16_t> halves(65536);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> as_float(halves.size());
  probe("h2f")(halves.data(), as_float.data(), 65536);
  for (size_t i = 0; i < halves.size(); ++i) {
    const float want = f16_to_f32(halves[i]);
    ASSERT_EQ(std::memcmp(&as_float[i], &want, 4), 0) << "half 0x" << std::hex << i;
  }
  // Every half, the midpoints between neighbours (ties to even), and a sweep of all floats.
  std::vector<float> xs = sample_floats();
  for (size_t i = 0; i + 1 < halves.size(); ++i) {
    xs.push_back(f16_to_f32(halves[i]));
    xs.push_back((f16_to_f32(halves[i]) + f16_to_f32(halves[i + 1])) / 2);
  }
  std::vector<uint16_t> got(xs.size()), got_bf(xs.size());
  probe("f2h")(xs.data(), got.data(), static_cast<int64_t>(xs.size()));
  probe("f2bf")(xs.data(), got_bf.data(), static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(got[i], f32_to_f16(xs[i])) << "f16 of " << xs[i];
    ASSERT_EQ(got_bf[i], f32_to_bf16(xs[i])) << "bf16 of " << xs[i];
  }
}

std::vector<std::string> isas() {
  std::vector<std::string> v = {"scalar"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) v.push_back("avx2");
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    v.push_back("avx512");
  return v;
}

INSTANTIATE_TEST_SUITE_P(Isa, PreludeMath, ::testing::ValuesIn(isas()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace kiln::codegen::test

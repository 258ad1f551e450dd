// The vectorised activations (through the epilogue) against std:: in double over a dense grid,
// with the maximum errors docs/kernels.md states:
//   Sigmoid, Silu, Tanh, GeluTanh: relative error <= 2e-6 (absolute 1e-7 near zero crossings)
//   Gelu: |error| <= 2e-7·max(1, |x|) (A&S erf is absolute-accurate, not relative near -inf)
//   exp (through softmax of two values): relative error <= 2e-6
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "kernel_test_util.h"
#include "kiln/kernels/rows.h"

namespace kiln::kernels {
namespace {

double measured_error(const KernelTable& t, Act a, bool relative) {
  const int64_t n = 40001;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -20.f + 40.f * float(i) / float(n - 1);
  std::vector<float> y = x;
  Epilogue e;
  e.act = a;
  apply_epilogue(y.data(), n, 1, n, e, 1, t);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double want = test::ref_act(a, x[i], 0, 0);
    double err = std::fabs(y[i] - want);
    worst = std::max(worst, relative ? err / std::max(std::fabs(want), 1e-1 * 1e-6)
                                     : err / std::max(1.0, std::fabs(double(x[i]))));
  }
  return worst;
}

TEST(VecMath, ActivationErrorsWithinStatedBounds) {
  for (const KernelTable* t : test::all_tables()) {
    EXPECT_LE(measured_error(*t, Act::Sigmoid, true), 2e-6) << isa_name(t->isa);
    EXPECT_LE(measured_error(*t, Act::Silu, true), 2e-6) << isa_name(t->isa);
    EXPECT_LE(measured_error(*t, Act::Tanh, true), 2e-6) << isa_name(t->isa);
    EXPECT_LE(measured_error(*t, Act::GeluTanh, false), 2e-7) << isa_name(t->isa);
    EXPECT_LE(measured_error(*t, Act::Gelu, false), 2e-7) << isa_name(t->isa);
  }
}

// Sigmoid (e^-x through exp_neg_v) past the test grid above: finite everywhere on [-100, 100],
// within 2e-6 relative wherever the true value is a normal float (below, where e^-x is clamped,
// it is at most a few FLT_MIN).
TEST(VecMath, SigmoidOverItsWholeRange) {
  for (const KernelTable* t : test::all_tables()) {
    const int64_t n = 20001;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = -100.f + 200.f * float(i) / float(n - 1);
    std::vector<float> y = x;
    Epilogue e;
    e.act = Act::Sigmoid;
    apply_epilogue(y.data(), n, 1, n, e, 1, *t);
    for (int64_t i = 0; i < n; ++i) {
      const double want = 1 / (1 + std::exp(-double(x[i])));
      ASSERT_TRUE(std::isfinite(y[i])) << isa_name(t->isa) << " x=" << x[i];
      if (want >= FLT_MIN)
        ASSERT_NEAR(y[i], want, 2e-6 * want) << isa_name(t->isa) << " x=" << x[i];
      else
        ASSERT_LE(y[i], 4 * FLT_MIN) << isa_name(t->isa) << " x=" << x[i];
    }
  }
}

TEST(VecMath, ExpThroughSoftmaxOfTwo) {
  // softmax([0, x])[1] = e^x / (1 + e^x): checks exp over its whole range, and that below it
  // exp stops at e^-87.33 (the bottom of the normal floats) instead of going denormal.
  for (const KernelTable* t : test::all_tables())
    for (float xv = -100.f; xv <= 20.f; xv += 0.37f) {
      float in[2] = {0.f, xv}, out[2];
      softmax_rows(in, 2, out, 2, 1, 2, 1, *t);
      double want = std::exp(double(xv)) / (1 + std::exp(double(xv)));
      if (want < 1.1832e-38) {  // e^-87.33
        EXPECT_GE(out[1], FLT_MIN) << isa_name(t->isa) << " x=" << xv;
        EXPECT_LE(out[1], 1.1833e-38f) << isa_name(t->isa) << " x=" << xv;
      } else {
        EXPECT_NEAR(out[1], want, 2e-6 * want) << isa_name(t->isa) << " x=" << xv;
      }
    }
}

}  // namespace
}  // namespace kiln::kernels

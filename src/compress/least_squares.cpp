// NormalEquations: chunked float GEMMs into double sums; Cholesky (parallel over rows of each
// column) and two triangular solves with all targets at once.
#include "kiln/compress/least_squares.h"

#include <algorithm>
#include <cmath>

#include "kiln/ir/error.h"
#include "kiln/kernels/gemm.h"
#include "kiln/kernels/parallel.h"

namespace kiln::compress {
namespace {

// Dot product with four partial sums (no -ffast-math: the compiler keeps one chain otherwise).
double dot(const double* a, const double* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) s0 += a[i] * b[i], s1 += a[i + 1] * b[i + 1], s2 += a[i + 2] * b[i + 2], s3 += a[i + 3] * b[i + 3];
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// In-place lower Cholesky of the d x d matrix a (row-major; the lower triangle is read and
// written). False when a pivot is not positive.
bool cholesky(std::vector<double>& a, int64_t d) {
  const int threads = kernels::default_threads();
  for (int64_t j = 0; j < d; ++j) {
    double* rj = &a[j * d];
    const double p = rj[j] - dot(rj, rj, j);
    if (!(p > 0) || !std::isfinite(p)) return false;
    const double l = std::sqrt(p);
    rj[j] = l;
    const int64_t below = d - j - 1;
    kernels::parallel_for(below, kernels::threads_for_work(static_cast<double>(below) * j, threads),
                          [&](int64_t b, int64_t e) {
                            for (int64_t i = j + 1 + b; i < j + 1 + e; ++i) {
                              double* ri = &a[i * d];
                              ri[j] = (ri[j] - dot(ri, rj, j)) / l;
                            }
                          });
  }
  return true;
}

}  // namespace

NormalEquations::NormalEquations(int64_t features, int64_t targets, bool bias)
    : features_(features), targets_(targets), d_(features + (bias ? 1 : 0)), bias_(bias) {
  KILN_CHECK(features > 0 && targets > 0, "least squares: no features or targets");
  g_.assign(static_cast<size_t>(d_ * d_), 0.0);
  r_.assign(static_cast<size_t>(d_ * targets_), 0.0);
}

void NormalEquations::add(const float* x, const float* y, int64_t rows) {
  std::vector<float> xa(static_cast<size_t>(kChunk * d_)), gc(static_cast<size_t>(d_ * d_)),
      rc(static_cast<size_t>(d_ * targets_));
  for (int64_t r0 = 0; r0 < rows; r0 += kChunk) {
    const int64_t n = std::min(kChunk, rows - r0);
    for (int64_t i = 0; i < n; ++i) {
      std::copy(x + (r0 + i) * features_, x + (r0 + i + 1) * features_, &xa[i * d_]);
      if (bias_) xa[i * d_ + features_] = 1.f;
    }
    const float* yc = y + r0 * targets_;
    kernels::sgemm(true, false, d_, d_, n, 1.f, xa.data(), d_, xa.data(), d_, 0.f, gc.data(), d_, 0);
    kernels::sgemm(true, false, d_, targets_, n, 1.f, xa.data(), d_, yc, targets_, 0.f, rc.data(), targets_, 0);
    for (size_t i = 0; i < g_.size(); ++i) g_[i] += gc[i];
    for (size_t i = 0; i < r_.size(); ++i) r_[i] += rc[i];
    for (int64_t i = 0; i < n * targets_; ++i) yy_ += static_cast<double>(yc[i]) * yc[i];
  }
  rows_ += rows;
}

std::vector<double> NormalEquations::solve(double ridge) const {
  double mean_diag = 0;
  for (int64_t i = 0; i < features_; ++i) mean_diag += g_[i * d_ + i];
  mean_diag = mean_diag > 0 ? mean_diag / static_cast<double>(features_) : 1.0;
  double lambda = std::max(ridge, 1e-12) * mean_diag;
  std::vector<double> l;
  for (int attempt = 0;; ++attempt) {
    KILN_CHECK(attempt < 12, "least squares: the normal equations stay singular");
    l = g_;
    for (int64_t i = 0; i < features_; ++i) l[i * d_ + i] += lambda;
    if (bias_ && l[features_ * d_ + features_] <= 0) l[features_ * d_ + features_] = 1;  // no rows
    if (cholesky(l, d_)) break;
    lambda *= 10;
  }
  // L Z = R, then L^T W^T = Z, with all targets at once (rows of length `targets_`).
  const int64_t t = targets_;
  std::vector<double> z = r_;
  for (int64_t i = 0; i < d_; ++i) {
    double* zi = &z[i * t];
    for (int64_t k = 0; k < i; ++k) {
      const double lik = l[i * d_ + k];
      const double* zk = &z[k * t];
      for (int64_t c = 0; c < t; ++c) zi[c] -= lik * zk[c];
    }
    const double inv = 1.0 / l[i * d_ + i];
    for (int64_t c = 0; c < t; ++c) zi[c] *= inv;
  }
  for (int64_t i = d_ - 1; i >= 0; --i) {
    double* zi = &z[i * t];
    for (int64_t k = i + 1; k < d_; ++k) {
      const double lki = l[k * d_ + i];
      const double* zk = &z[k * t];
      for (int64_t c = 0; c < t; ++c) zi[c] -= lki * zk[c];
    }
    const double inv = 1.0 / l[i * d_ + i];
    for (int64_t c = 0; c < t; ++c) zi[c] *= inv;
  }
  // z is W^T (d x targets): return W (targets x d).
  std::vector<double> w(static_cast<size_t>(t * d_));
  for (int64_t i = 0; i < d_; ++i)
    for (int64_t c = 0; c < t; ++c) w[c * d_ + i] = z[i * t + c];
  return w;
}

double NormalEquations::squared_error(const std::vector<double>& w) const {
  KILN_CHECK(static_cast<int64_t>(w.size()) == targets_ * d_, "least squares: W has ", w.size(), " values, expected ",
             targets_ * d_);
  // sum over targets of ||y||^2 - 2 w.r + w^T G w; G W^T as one float GEMM (d x d by d x targets).
  std::vector<float> gf(g_.begin(), g_.end()), wf(w.begin(), w.end()), gw(static_cast<size_t>(d_ * targets_));
  kernels::sgemm(false, true, d_, targets_, d_, 1.f, gf.data(), d_, wf.data(), d_, 0.f, gw.data(), targets_, 0);
  double s = yy_;
  for (int64_t i = 0; i < d_; ++i)
    for (int64_t c = 0; c < targets_; ++c) s += w[c * d_ + i] * (static_cast<double>(gw[i * targets_ + c]) - 2 * r_[i * targets_ + c]);
  return std::max(s, 0.0);
}

void NormalEquations::merge(const NormalEquations& o) {
  KILN_CHECK(o.d_ == d_ && o.targets_ == targets_, "least squares: merging different problems");
  for (size_t i = 0; i < g_.size(); ++i) g_[i] += o.g_[i];
  for (size_t i = 0; i < r_.size(); ++i) r_[i] += o.r_[i];
  yy_ += o.yy_;
  rows_ += o.rows_;
}

}  // namespace kiln::compress

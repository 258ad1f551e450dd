// Histogram observers and the three ways of picking a clipping range from them.
#include "kiln/compress/observer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/ir/error.h"

namespace kiln::compress {

void Observer::widen_to(double a) {
  if (bins_.empty()) {
    // First data: the smallest power of two covering it, so later widening doubles cleanly.
    range_ = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(std::max(a, 1e-30)))));
    bins_.assign(kBins, 0);
    return;
  }
  while (a > range_) {
    // Doubling [-R, R]: old bin j lands in new bin (j + kBins/2) / 2.
    std::vector<int64_t> merged(kBins, 0);
    for (int j = 0; j < kBins; ++j) merged[(j + kBins / 2) / 2] += bins_[j];
    bins_.swap(merged);
    range_ *= 2;
  }
}

void Observer::observe(const float* x, int64_t n) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]), ++finite;
  if (finite == 0) return;
  widen_to(std::max(std::abs(static_cast<double>(lo)), std::abs(static_cast<double>(hi))));
  min_ = count_ == 0 ? lo : std::min(min_, lo);
  max_ = count_ == 0 ? hi : std::max(max_, hi);
  const double scale = kBins / (2 * range_);
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    int b = static_cast<int>((x[i] + range_) * scale);
    ++bins_[std::clamp(b, 0, kBins - 1)];
  }
  count_ += finite;
}

void Observer::observe(const Tensor& t) {
  KILN_CHECK(t.dtype() == DType::f32, "observer: expected an f32 tensor, got ", dtype_name(t.dtype()));
  observe(t.data<float>(), t.numel());
  if (channel_axis_ == -1000 || t.rank() == 0) return;
  const int64_t rank = static_cast<int64_t>(t.rank());
  const int64_t axis = channel_axis_ < 0 ? channel_axis_ + rank : channel_axis_;
  if (axis < 0 || axis >= rank) return;
  const int64_t channels = t.dim(static_cast<size_t>(axis));
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= t.dim(static_cast<size_t>(d));
  if (channel_sum_.empty()) channel_sum_.assign(static_cast<size_t>(channels), 0.0);
  if (static_cast<int64_t>(channel_sum_.size()) != channels) return;  // shape changed between batches: keep the first
  // Outer x channel x inner blocks, each channel's run summed contiguously (a division per
  // element made this half of the observer's time on resnet50).
  const float* x = t.data<float>();
  const int64_t outer = channels > 0 && inner > 0 ? t.numel() / (channels * inner) : 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c, x += inner) {
      double s = 0;
      for (int64_t i = 0; i < inner; ++i) s += x[i];
      channel_sum_[static_cast<size_t>(c)] += s;
    }
  channel_samples_ += channels ? t.numel() / channels : 0;
}

std::vector<double> Observer::channel_means() const {
  std::vector<double> m = channel_sum_;
  for (double& v : m) v /= static_cast<double>(std::max<int64_t>(channel_samples_, 1));
  return m;
}

float Observer::quantile(double q) const {
  if (count_ == 0) return 0.f;
  const double target = q * static_cast<double>(count_);
  const double width = 2 * range_ / kBins;
  double seen = 0;
  for (int j = 0; j < kBins; ++j) {
    if (seen + bins_[j] >= target && bins_[j] > 0) {
      double frac = (target - seen) / bins_[j];
      double v = -range_ + (j + frac) * width;
      return static_cast<float>(std::clamp(v, static_cast<double>(min_), static_cast<double>(max_)));
    }
    seen += bins_[j];
  }
  return max_;
}

Calibration parse_calibration(const std::string& text) {
  Calibration c;
  if (text == "minmax") return c;
  if (text == "entropy") {
    c.method = CalibMethod::Entropy;
    return c;
  }
  if (text.rfind("percentile", 0) == 0) {
    c.method = CalibMethod::Percentile;
    if (text.size() > 10) {
      KILN_CHECK(text[10] == ':', "--method ", text, ": write percentile or percentile:P (e.g. percentile:99.99)");
      char* end = nullptr;
      c.percentile = std::strtod(text.c_str() + 11, &end);
      KILN_CHECK(end && *end == 0 && c.percentile > 50 && c.percentile <= 100, "--method ", text,
                 ": the percentile must be a number in (50, 100]");
    }
    return c;
  }
  throw Error("--method " + text + ": expected minmax, percentile[:P] or entropy");
}

std::string calibration_name(const Calibration& c) {
  switch (c.method) {
    case CalibMethod::MinMax: return "minmax";
    case CalibMethod::Entropy: return "entropy";
    case CalibMethod::Percentile: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "percentile:%g", c.percentile);
      return buf;
    }
  }
  return "?";
}

namespace {

// KL(P || Q) of two unnormalised histograms over the same bins (Q's zero bins where P is not
// zero are smoothed, as TensorRT does, so the divergence stays finite).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double ps = 0, qs = 0;
  for (double v : p) ps += v;
  for (double v : q) qs += v;
  if (ps == 0 || qs == 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    double pi = p[i] / ps, qi = std::max(q[i] / qs, 1e-12);
    kl += pi * std::log(pi / qi);
  }
  return kl;
}

// TensorRT's entropy calibration on a histogram of magnitudes h[0..n): for each candidate
// threshold bin i, P = h[0..i) with everything beyond folded into bin i-1, Q = P merged into
// `levels` buckets and spread back over the nonzero bins; the i with the least KL(P||Q) wins.
// Returns the threshold as a fraction of the histogram's extent.
double entropy_threshold(const std::vector<double>& h, int levels) {
  const int n = static_cast<int>(h.size());
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  const int step = std::max(1, n / 512);
  for (int i = std::min(levels, n); i <= n; i += step) {
    std::vector<double> p(h.begin(), h.begin() + i);
    double outliers = 0;
    for (int j = i; j < n; ++j) outliers += h[j];
    p[i - 1] += outliers;
    std::vector<double> q(i, 0);
    for (int l = 0; l < levels; ++l) {
      int b = static_cast<int>(static_cast<int64_t>(l) * i / levels), e = static_cast<int>(static_cast<int64_t>(l + 1) * i / levels);
      double sum = 0;
      int nonzero = 0;
      for (int j = b; j < e; ++j) sum += h[j], nonzero += h[j] != 0;
      for (int j = b; j < e; ++j)
        if (h[j] != 0) q[j] = sum / nonzero;
    }
    double kl = kl_divergence(p, q);
    if (kl < best) best = kl, best_i = i;
  }
  return static_cast<double>(best_i) / n;
}

}  // namespace

std::pair<float, float> choose_range(const Observer& o, const Calibration& c) {
  if (o.empty()) return {0.f, 0.f};
  float lo = o.min(), hi = o.max();
  if (c.method == CalibMethod::Percentile) {
    double tail = (100.0 - c.percentile) / 200.0;
    lo = o.quantile(tail);
    hi = o.quantile(1.0 - tail);
  } else if (c.method == CalibMethod::Entropy) {
    const auto& bins = o.bins();
    const int half = Observer::kBins / 2;
    const bool nonneg = o.min() >= 0;
    // Magnitude histogram over [0, range): bin k gathers the bins at +k and (when signed) -k.
    std::vector<double> mag(half, 0);
    for (int k = 0; k < half; ++k) mag[k] = static_cast<double>(bins[half + k]) + (nonneg ? 0 : bins[half - 1 - k]);
    double t = entropy_threshold(mag, nonneg ? 255 : 128) * o.range();
    hi = std::min(hi, static_cast<float>(t));
    if (!nonneg) lo = std::max(lo, static_cast<float>(-t));
  }
  return {std::min(lo, 0.f), std::max(hi, 0.f)};
}

QParams qparams_for_range(float lo, float hi, DType type) {
  KILN_CHECK(type == DType::u8 || type == DType::i8, "quantized activations are u8 or i8, not ", dtype_name(type));
  lo = std::min(lo, 0.f), hi = std::max(hi, 0.f);
  QParams p;
  p.type = type;
  p.scale = hi > lo ? (hi - lo) / 255.f : 1.f;
  const int32_t qmin = type == DType::u8 ? 0 : -128;
  p.zero_point = std::clamp(static_cast<int32_t>(std::nearbyint(qmin - lo / p.scale)), qmin, qmin + 255);
  return p;
}

}  // namespace kiln::compress

// Calibration observers: what `kiln quantize` learns about each activation while the float
// model runs over the calibration batches, in bounded memory (a fixed-size histogram that widens
// by merging bins, never the activations themselves), and the quantization parameters chosen
// from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/tensor.h"

namespace kiln::compress {

// A histogram of values over [-range, range] with kBins equal bins. When a value falls outside,
// the range doubles (pairs of bins merge) until it fits, so counts stay exact at the current
// bin width and memory stays kBins counters.
class Observer {
 public:
  static constexpr int kBins = 4096;
  void observe(const float* x, int64_t n);
  // Also keep the mean of each channel along `axis` of the observed tensors (bias correction
  // needs E[x] per input channel of a quantized layer): call before observing.
  void track_channels(int axis) { channel_axis_ = axis; }
  void observe(const Tensor& t);  // f32; histogram and, when tracked, the channel sums
  // Empty unless track_channels was called.
  std::vector<double> channel_means() const;
  bool empty() const { return count_ == 0; }
  float min() const { return min_; }
  float max() const { return max_; }
  int64_t count() const { return count_; }
  double range() const { return range_; }
  const std::vector<int64_t>& bins() const { return bins_; }
  // The value below which fraction q (0..1) of the observed values lie (bin-width accurate).
  float quantile(double q) const;

 private:
  void widen_to(double a);
  std::vector<int64_t> bins_;
  int channel_axis_ = -1000;  // none
  std::vector<double> channel_sum_;
  int64_t channel_samples_ = 0;  // values per channel so far
  double range_ = 0;
  float min_ = 0, max_ = 0;
  int64_t count_ = 0;
};

enum class CalibMethod { MinMax, Percentile, Entropy };
struct Calibration {
  CalibMethod method = CalibMethod::MinMax;
  double percentile = 99.99;  // Percentile: keeps this share of values inside the range (two-sided)
};
// "minmax", "percentile", "percentile:99.9", "entropy"; throws kiln::Error otherwise.
Calibration parse_calibration(const std::string& text);
std::string calibration_name(const Calibration& c);

// Per-tensor affine parameters: real = (q - zero_point) * scale.
struct QParams {
  float scale = 1.f;
  int32_t zero_point = 0;
  DType type = DType::u8;  // u8 or i8
};

// The clipping range [lo, hi] the method picks (always containing 0).
//   minmax: the observed min and max.
//   percentile:P: the values with a share (100 - P) / 2 % of the samples below / above them.
//   entropy: the threshold minimising the KL divergence between the histogram and its quantized
//     version (TensorRT's calibration), on |x| (or on x when no value is negative).
std::pair<float, float> choose_range(const Observer& o, const Calibration& c);
// u8: scale = (hi - lo) / 255, zero point round(-lo / scale); i8 the same shifted by -128.
QParams qparams_for_range(float lo, float hi, DType type);

}  // namespace kiln::compress

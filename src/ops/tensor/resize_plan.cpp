#include "resize_plan.h"

#include <cmath>

namespace kiln::ops::tensor_ops {
namespace {

// Output coordinate -> input coordinate (ONNX Resize, coordinate_transformation_mode).
double original_coord(const ResizeAttrs& a, double x, int64_t in, int64_t out, double scale, double rs, double re) {
  switch (a.coord) {
    case CoordMode::half_pixel: return (x + 0.5) / scale - 0.5;
    case CoordMode::pytorch_half_pixel: return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::align_corners: return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / static_cast<double>(out - 1);
    case CoordMode::asymmetric: return x / scale;
    case CoordMode::tf_half_pixel_for_nn: return (x + 0.5) / scale;
    case CoordMode::tf_crop_and_resize:
      return out > 1 ? rs * (in - 1) + x * (re - rs) * (in - 1) / static_cast<double>(out - 1)
                     : 0.5 * (rs + re) * (in - 1);
  }
  return 0;
}

int64_t nearest_index(NearestMode m, double x, double scale) {
  double f = std::floor(x);
  switch (m) {
    case NearestMode::round_prefer_floor: return static_cast<int64_t>(x - f == 0.5 ? f : std::round(x));
    case NearestMode::round_prefer_ceil: return static_cast<int64_t>(x - f == 0.5 ? f + 1 : std::round(x));
    case NearestMode::floor: return static_cast<int64_t>(f);
    case NearestMode::ceil: return static_cast<int64_t>(std::ceil(x));
    case NearestMode::legacy: return static_cast<int64_t>(scale < 1 ? std::ceil(x) : f);
  }
  return 0;
}

// Keys cubic convolution weights for the 4 taps at floor(x)-1 .. floor(x)+2, t = x - floor(x).
void cubic_weights(double t, double A, double* w) {
  auto near = [A](double s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };         // |s| <= 1
  auto far = [A](double s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };   // 1 < |s| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

}  // namespace

AxisTaps axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double rs, double re) {
  AxisTaps t;
  t.taps = a.mode == ResizeMode::nearest ? 1 : a.mode == ResizeMode::linear ? 2 : 4;
  t.idx.resize(out * t.taps);
  t.w.resize(out * t.taps);
  t.outside.assign(out, 0);
  auto clamp_idx = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    double x = original_coord(a, static_cast<double>(o), in, out, scale, rs, re);
    if (a.coord == CoordMode::tf_crop_and_resize && (x < 0 || x > in - 1)) {
      t.outside[o] = 1;
      continue;
    }
    int64_t* idx = &t.idx[o * t.taps];
    double* w = &t.w[o * t.taps];
    if (a.mode == ResizeMode::nearest) {
      idx[0] = clamp_idx(nearest_index(a.nearest, x, scale));
      w[0] = 1;
    } else if (a.mode == ResizeMode::linear) {
      // Linear reads the edge value beyond the borders, i.e. x clamped into [0, in-1].
      double xc = std::clamp(x, 0.0, static_cast<double>(in - 1));
      int64_t x0 = static_cast<int64_t>(std::floor(xc));
      double f = xc - x0;
      idx[0] = x0;
      idx[1] = clamp_idx(x0 + 1);
      w[0] = 1 - f;
      w[1] = f;
    } else {
      int64_t x0 = static_cast<int64_t>(std::floor(x));
      cubic_weights(x - x0, a.cubic_a, w);
      double sum = 0;
      for (int j = 0; j < 4; ++j) {
        int64_t i = x0 - 1 + j;
        if (a.exclude_outside && (i < 0 || i >= in)) w[j] = 0;
        sum += w[j];
        idx[j] = clamp_idx(i);
      }
      if (a.exclude_outside && sum != 0)
        for (int j = 0; j < 4; ++j) w[j] /= sum;
    }
  }
  return t;
}

}  // namespace kiln::ops::tensor_ops

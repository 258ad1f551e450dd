// Resize/Upsample as data: per output axis, which input positions (taps) each output
// position reads and with what weights. Built once per call from the ONNX attributes;
// the kernels in resize.cpp only walk these tables.
#pragma once
#include <string>
#include <vector>

#include "tensor_common.h"

namespace kiln::ops::tensor_ops {

enum class ResizeMode { nearest, linear, cubic };
enum class CoordMode { half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
                       tf_crop_and_resize };
// legacy: Upsample and Resize-10 (floor when upsampling, ceil when downsampling, as ONNX Runtime)
enum class NearestMode { round_prefer_floor, round_prefer_ceil, floor, ceil, legacy };

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::nearest;
  CoordMode coord = CoordMode::half_pixel;
  NearestMode nearest = NearestMode::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

// Taps of one axis: for output position o, entries [o*taps, o*taps + taps) of idx/w;
// outside[o] = the position maps outside the input (tf_crop_and_resize extrapolation).
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> outside;
};

// scale: the given scale, or out/in when sizes were given. roi_start/end: for tf_crop_and_resize.
AxisTaps axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double roi_start, double roi_end);

}  // namespace kiln::ops::tensor_ops

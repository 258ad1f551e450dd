#include <algorithm>

#include "kiln_common.h"

namespace kiln::ops {

kernels::Conv2dShape fused_conv_shape(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  KILN_CHECK(x.size() == 4 && w.size() == 4, n.describe(), ": a 2-D convolution needs 4-D input and weight, got ",
             dims_str(x), " and ", dims_str(w));
  kernels::Conv2dShape s;
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.K = w[0], s.R = w[2], s.S = w[3];
  s.group = n.attr_i("group", 1);
  s.x_blocked = n.attr_i("x_blocked", 0) != 0, s.y_blocked = n.attr_i("y_blocked", 0) != 0;
  auto strides = n.attr_ints("strides", {1, 1}), dil = n.attr_ints("dilations", {1, 1});
  auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  KILN_CHECK(strides.size() == 2 && dil.size() == 2 && pads.size() == 4, n.describe(),
             ": strides, dilations and pads must describe 2 spatial dims");
  s.stride_h = strides[0], s.stride_w = strides[1], s.dil_h = dil[0], s.dil_w = dil[1];
  s.pad_top = pads[0], s.pad_left = pads[1], s.pad_bottom = pads[2], s.pad_right = pads[3];
  std::string ap = n.attr_s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    // Total padding so that out = ceil(in / stride); the odd pixel goes last for SAME_UPPER.
    auto split = [&](int64_t in, int64_t k, int64_t st, int64_t d, int64_t& lo, int64_t& hi) {
      int64_t out = (in + st - 1) / st;
      int64_t total = std::max<int64_t>(0, (out - 1) * st + (k - 1) * d + 1 - in);
      lo = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      hi = total - lo;
    };
    split(s.H, s.R, s.stride_h, s.dil_h, s.pad_top, s.pad_bottom);
    split(s.W, s.S, s.stride_w, s.dil_w, s.pad_left, s.pad_right);
  } else if (ap == "VALID") {
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 0;
  }
  return s;
}

}  // namespace kiln::ops

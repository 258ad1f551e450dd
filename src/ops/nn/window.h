// Sliding-window geometry shared by Conv, ConvTranspose and the pools: reads kernel_shape,
// strides, dilations, pads and auto_pad from a node and works out padding and output sizes.
// Kernels run every spatial rank as 3-D by padding the leading spatial dims with size 1.
#pragma once
#include <cstdint>
#include <vector>

#include "nn_common.h"

namespace kiln::ops::nn {

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
  std::vector<int64_t> out;  // output spatial sizes; -1 where the input size is unknown
};

// Attributes of a forward window (Conv, pools). `in` holds the input spatial sizes (-1 =
// unknown). `kernel` comes from kernel_shape or W. Throws naming the node on bad attributes.
Window forward_window(const Node& n, const std::vector<int64_t>& in, std::vector<int64_t> kernel,
                      bool ceil_mode, bool has_dilations);

// Reads an ints attribute of exactly `rank` entries (or `dflt` filled when absent).
std::vector<int64_t> spatial_attr(const Node& n, const char* name, size_t rank, int64_t dflt);

// Spatial sizes of a shape from dim 2 on (-1 for non-static dims).
std::vector<int64_t> spatial_sizes(const Shape& s);

// The 3-D embedding used by the kernels: sizes padded at the front to rank 3.
struct Geom3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};
Geom3 to_geom3(const std::vector<int64_t>& in, const Window& w);

// Output positions [lo, hi) of a row whose input index o * s + base lies in [0, in).
void valid_range(int64_t base, int64_t s, int64_t in, int64_t out, int64_t& lo, int64_t& hi);

// col[(c*K + kidx) * OS + o] = x[c][window position] (0 in the padding) for `channels` planes.
template <typename T>
void im2col(const T* x, int64_t channels, const Geom3& g, T* col, int threads);
// Adds col back into y (the transpose of im2col); used by ConvTranspose.
template <typename T>
void col2im(const T* col, int64_t channels, const Geom3& g, T* y);

}  // namespace kiln::ops::nn

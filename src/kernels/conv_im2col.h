// Implicit GEMM for convolution: one K x N block of the im2col matrix of one image and group
// (rows = (c, r, s) of the window, columns = output pixels), written straight into the
// micro-kernel's nr-column B panels. The full im2col matrix never exists.
#pragma once
#include <cstdint>

#include "kiln/kernels/conv.h"

namespace kiln::kernels::detail {

// x: the group's first input channel (C/group planes of H x W).
void im2col_pack_block(const Conv2dShape& s, const float* x, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int nr,
                       float* out);

}  // namespace kiln::kernels::detail

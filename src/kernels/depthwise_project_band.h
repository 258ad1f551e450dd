// One band of a depthwise layer and the 1x1 projection after it, the pieces that
// kernels::depthwise_project and kernels::stem_depthwise_project run on each band
// (conv_depthwise_project.cpp).
#pragma once
#include <cstdint>

#include "depthwise_parts.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/epilogue.h"

namespace kiln::kernels::detail {

// The depthwise windows of band `bd` over its input rows `in` (8-channel blocks, `in_plane`
// floats apart; the band's first input row first) into `mid`, the band's rows of every channel
// ([K / 8][rows][OW][8]), on the table's blocked kernel with `scratch`
// (depthwise_block_scratch(bd.g) floats).
void depthwise_band_rows(const KernelTable& t, const Conv2dShape& d, const DepthwiseBand& bd, const float* in,
                         int64_t in_plane, const float* wd, const Epilogue& epi_d, float* scratch, float* mid);

// The projection of the band's depthwise rows `mid` (output rows [oh0, oh0 + rows) of image n)
// straight into y's planes (Conv2dShape::y_plane_rows), the residual's rows (epi_p.residual, over
// the whole output) added as they are stored, on one thread. epi_p's bias is per row.
void project_band(const Conv2dShape& p, int64_t n, int64_t oh0, int64_t rows, const float* mid, const float* wp,
                  const Epilogue& epi_p, float* y);

}  // namespace kiln::kernels::detail

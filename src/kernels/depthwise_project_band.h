// One band of a depthwise layer and the 1x1 projection after it, the pieces that
// kernels::depthwise_project and kernels::stem_depthwise_project run on each band
// (conv_depthwise_project.cpp).
#pragma once
#include <cstdint>

#include "depthwise_parts.h"
#include "line_scratch.h"
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
// The same for channels [c_begin, c_end) only (whole 8-channel blocks): `in` still the band's
// first input row of block 0, `mid` the range's rows ([(c_end - c_begin) / 8][rows][OW][8]).
void depthwise_band_rows(const KernelTable& t, const Conv2dShape& d, const DepthwiseBand& bd, const float* in,
                         int64_t in_plane, const float* wd, const Epilogue& epi_d, float* scratch, float* mid,
                         int64_t c_begin, int64_t c_end);

// The depthwise rows of band `bd` of image xn's channels [c_begin, c_end) (whole blocks of the
// input's) into mid ([(c_end - c_begin) / bi][rows][OW][bi], bi the input's block): 16-channel
// blocks through depthwise_wide, 8-channel ones through depthwise_band_rows with `scratch`.
void depthwise_channel_rows(const KernelTable& t, const Conv2dShape& d, const DepthwiseBand& bd, const float* xn,
                            const float* wd, const Epilogue& epi_d, LineScratch& scratch, float* mid, int64_t c_begin,
                            int64_t c_end);

// KILN_DW_PROJECT_KSPLIT=0 at start-up turns depthwise_project's halves off (its 7x7 pairs then
// run in row bands, or apart); in-process A/B harnesses flip it between calls. Same floats
// either way.
extern bool depthwise_project_k_split_enabled;

// The pair (one image) as two halves of its input channels, [0, kc) and [kc, C), one a thread:
// each half's depthwise channels over the whole plane and their part of the projection's sums
// (a slice of the packed weight, Conv2dShape::w_panel_rows) into a scratch of the half's; then,
// split by output blocks, y = epilogue_p(second + first). kc is the first of the two K blocks
// the direct tactic sums the projection in (direct_k_blocks), so each output is the sum the
// whole projection makes: its last block's sums plus the first's, then the epilogue.
void project_halves(const KernelTable& t, const Conv2dShape& d, const Conv2dShape& p, const float* x, const float* wd,
                    const Epilogue& epi_d, const float* wp, const Epilogue& epi_p, float* y, int64_t kc, int threads);

// The projection of the band's depthwise rows `mid` (output rows [oh0, oh0 + rows) of image n)
// straight into y's planes (Conv2dShape::y_plane_rows), the residual's rows (epi_p.residual, over
// the whole output) added as they are stored, on one thread. epi_p's bias is per row.
void project_band(const Conv2dShape& p, int64_t n, int64_t oh0, int64_t rows, const float* mid, const float* wp,
                  const Epilogue& epi_p, float* y);

}  // namespace kiln::kernels::detail

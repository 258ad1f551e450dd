// Implicit GEMM for convolution without an im2col matrix: the zero-padded input is split once
// into stride phases, plane (a, b) of a channel holding xpad[i*sh + a][j*sw + b]. On that
// layout every row of the im2col matrix — one (tap, channel) pair — is a contiguous slice of
// one phase plane, shifted by the tap, if the output is computed on a grid of width Wg >= OW
// (columns ow >= OW are computed and dropped). The GEMM reads those rows in place through row
// pointers (GemmProblem::b_rows), or packs them into panels with a plain copy per row
// (pack_row_panels in gemm_driver.cpp) for any stride and dilation.
//
// The GEMM's K index is q = tap * Cg + channel with tap = r * S + s (the weight is packed in
// that order, see conv.cpp).
#pragma once
#include <cstdint>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels::detail {

struct PhaseGeometry {
  int64_t Hq = 0, Wg = 0;      // rows and width of a phase plane (Wg is also the output grid width)
  int64_t plane = 0;           // floats of one phase plane
  int64_t per_channel = 0;     // sh * sw planes
  int64_t grid = 0;            // output grid columns: OH * Wg
  bool compact = false;        // Wg != OW: the grid is compacted into the NCHW output
};
PhaseGeometry phase_geometry(const Conv2dShape& s);

// Fills the phase planes of `channels` input planes (H x W each) the taps use; row copies go
// through the table's strided_copy, padding gets `pad` (0 for convolution, -inf for max
// pooling). Padding positions are the same for every channel, so a caller that refills the
// same buffer can fill it with `pad` once and pass borders_filled = true.
void build_phase_planes(const KernelTable& t, const Conv2dShape& s, const PhaseGeometry& g, const float* x,
                        int64_t channels, float* out, bool borders_filled = false, float pad = 0.f);

// Where B row q (tap, channel) starts for output grid column 0.
inline const float* phase_row(const Conv2dShape& s, const PhaseGeometry& g, const float* planes, int64_t channels,
                              int64_t q) {
  const int64_t tap = q / channels, ch = q % channels, r = tap / s.S, c = tap % s.S;
  const int64_t dr = r * s.dil_h, dc = c * s.dil_w;
  const int64_t phase = (dr % s.stride_h) * s.stride_w + dc % s.stride_w;
  return planes + ch * g.per_channel + phase * g.plane + (dr / s.stride_h) * g.Wg + dc / s.stride_w;
}

}  // namespace kiln::kernels::detail

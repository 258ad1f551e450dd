// 2-D pooling on NCHW planes (MaxPool, AveragePool) and the global average, on the stride-phase
// planes of the depthwise convolution: each window tap is a contiguous slice of a padded phase
// plane, so a plane is max_t(tap_t) or sum_t(tap_t) over whole vectors.
//
// The geometry is a Conv2dShape with K = C and group = C (kernel R x S, strides, dilations,
// pads); ceil_mode is expressed by extra pad_bottom / pad_right (the caller checks that every
// window still holds an input element). Numerics: max is exact; the average sums the taps in
// order t = 0..R*S-1 in f32 and multiplies by 1/count (a rounding of the reciprocal away from
// the reference's division: within 2 ulp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kiln/kernels/conv.h"

namespace kiln::kernels {

enum class PoolKind : uint8_t { Max, Average };

// Scratch floats pool2d needs for `threads` threads (one phase-plane slot per thread).
size_t pool2d_workspace_floats(const Conv2dShape& s, int threads);

// y [N, C, out_h, out_w]. Average divides by R*S when count_include_pad (padding counts as
// zeros), else by the number of taps inside the input (pad_bottom/right beyond the ONNX pads,
// i.e. ceil_mode, must be 0 for an average that includes padding).
// workspace: pool2d_workspace_floats(s, threads) floats, or null for a thread-local buffer.
void pool2d(PoolKind kind, const Conv2dShape& s, bool count_include_pad, const float* x, float* y, float* workspace,
            int threads);

// Whether pool2d runs this shape through a row kernel over all the planes as one stack (a plain
// 2x2 stride-2 max pool, or a 3x3 stride-2 max pool padded by up to 2) instead of plane by plane
// on phase planes: no per-plane set-up, so its time follows the bytes it moves (the
// performance model, analysis/perf_cpu.cpp, times it that way).
bool pool2d_runs_rows(PoolKind kind, const Conv2dShape& s);

// y[p] = mean of x[p*size : (p+1)*size] for p < planes (GlobalAveragePool), summed in double
// and divided like the reference kernel (the same float in practice).
void global_average_pool(const float* x, int64_t planes, int64_t size, float* y, int threads);

// The same two on channel-blocked activations (Conv2dShape::x_blocked: [N][C/8][H][W][8], C a
// multiple of kConvBlock), between direct convolutions (lower/blocked_layout.cpp).
// max_pool_blocked: y [N][C/8][OH][OW][8], the max over each window's taps inside the input
// (any kernel, strides, dilations, pads with every window holding an input row); exact. With
// planar_out, y is NCHW [N, C, OH, OW] instead (a reader that needs NCHW, e.g. a Flatten).
void max_pool_blocked(const Conv2dShape& s, const float* x, float* y, int threads, bool planar_out = false);
// global_average_pool_blocked: y [N, C] (the NCHW [N, C, 1, 1]), summed in double like
// global_average_pool.
void global_average_pool_blocked(const float* x, int64_t N, int64_t C, int64_t size, float* y, int threads);
// The same on pixel-major activations [N][size][C] (an INT8 network's last convolution output,
// dequantized: lower/int8_nhwc_layout.cpp): y [N, C], the same floats as global_average_pool.
void global_average_pool_pixel_major(const float* x, int64_t N, int64_t C, int64_t size, float* y, int threads);

}  // namespace kiln::kernels

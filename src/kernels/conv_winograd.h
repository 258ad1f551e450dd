// F(2x2, 3x3) Winograd convolution (Lavin & Gray, 2015) for the direct tactic's channel-blocked
// activations: 3x3 windows at stride 1 with one pixel of padding, 16-channel blocks in and out,
// on AVX-512. Each 2x2 output tile takes a 4x4 input tile; per channel the input tile becomes
// V = Bᵀ d B, the products of the 16 positions are 16 independent GEMMs over the channels
// (V_ξ [tiles x C] times U_ξ = (G g Gᵀ)_ξ [C x K], weights transformed and packed once), and
// the output tile is Aᵀ M A: 16 multiply-adds per output pixel and input channel instead of
// 36, 2.25x fewer. The transforms add and subtract only (G's halves are in the weights), so the
// result differs from the direct sum by rounding alone: max |Δ| / max |ref| ~2e-6 against the
// direct tactic on resnet's layers (tests/kernels: within 1e-5 of the reference).
//
// The direct tactic runs this when Conv2dShape::winograd is set (lowering decides once the
// layouts are known: lower/winograd.cpp); the weights are then packed as 16 packed-B matrices.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"

namespace kiln::kernels::detail {

// "" when the Winograd path can run s on table t, else why not.
std::string winograd_unsupported(const KernelTable& t, const Conv2dShape& s);
size_t winograd_packed_weight_floats(const KernelTable& t, const Conv2dShape& s);
// w: the ONNX weight [K][C][3][3].
void winograd_pack_weight(const KernelTable& t, const Conv2dShape& s, const float* w, float* packed);
void winograd_conv(const KernelTable& t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                   const Epilogue& epi, int threads);

// The AVX-512 transforms (avx512/winograd_avx512.cpp), over tiles [t0, t0 + count) of one
// image whose tile rows hold `tw` tiles.
// A vector is 16 channels: one plane of a 16-channel-blocked tensor, or two consecutive planes
// of an 8-channel-blocked one (`block`).
struct WinogradInput {
  const float* x;            // the image's first channel plane
  int64_t block;             // channels per plane: 8 or 16
  int64_t groups, ph, pw;    // 16-channel groups (C / 16); plane height and width as stored
  int64_t row0, col0;        // plane row and column of tile (0, 0)'s first input pixel (-1: padding not stored)
};
// V[ξ][i][c] (ξ stride xi_stride, tile i's row C floats) for tile t0 + i.
void winograd_input_avx512(const WinogradInput& in, int64_t tw, int64_t t0, int64_t count, float* V,
                           int64_t xi_stride);
struct WinogradOutput {
  float* y;                  // the image's first output channel plane
  int64_t block;             // channels per plane: 8 or 16
  int64_t groups, ph, pw;    // 16-channel groups (K / 16); plane height and width as stored
  int64_t row0, col0;        // plane row and column of output pixel (0, 0)
  int64_t oh, ow;            // output size (the last tiles' pixels past it are not stored)
  // The epilogue applied in registers before the store: x alpha, + bias[k], + the residual (the
  // output's layout without padding: the image's first plane), then `act` (None, Relu, Clip or
  // LeakyRelu; winograd_conv applies any other activation over the stored rows).
  float alpha = 1.f;
  const float* bias = nullptr;
  const float* residual = nullptr;
  Act act = Act::None;
  float act_alpha = 0.f, act_beta = 0.f;
};
// Output tiles t0 + i from M[ξ][i][k] (ξ stride xi_stride, tile i's row K floats).
void winograd_output_avx512(const WinogradOutput& out, int64_t tw, int64_t t0, int64_t count, const float* M,
                            int64_t xi_stride);

}  // namespace kiln::kernels::detail

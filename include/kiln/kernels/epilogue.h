// What a GEMM or convolution kernel applies to each output element before storing it:
//   y = act(acc * alpha + bias + residual)
// so a Conv/MatMul + bias + residual Add + activation chain is one pass over the output.
#pragma once
#include <cstdint>

namespace kiln::kernels {

// Same order and meaning as kiln::ops::Activation (kernels depend on nothing of ours).
enum class Act : uint8_t { None, Relu, LeakyRelu, Clip, Sigmoid, Tanh, Silu, HardSigmoid, HardSwish, Gelu, GeluTanh };

struct Epilogue {
  float alpha = 1.f;
  const float* bias = nullptr;      // nullptr = none
  bool bias_per_row = false;        // true: bias[i] for row i of C (conv: one per output channel);
                                    // false: bias[j] for column j (MatMul: one per output feature)
  const float* residual = nullptr;  // nullptr = none; same layout as C
  int64_t ldr = 0;                  // row stride of residual
  Act act = Act::None;
  float act_alpha = 0.f, act_beta = 0.f;  // LeakyRelu alpha; Clip min/max; HardSigmoid alpha/beta
  // conv2d only (GEMMs ignore it): when set, channel_means[n * K + k] receives the mean of output
  // plane (n, k) after the activation, as a GlobalAveragePool of the output would. The blocked
  // depthwise kernel sums a blocked output as it writes it (float over a row or 16 pixels, then
  // double: TileEpilogue::sums), an NCHW one right after each part; other tactics average the
  // output after it, in double (efficientnet_b0's squeeze-excitation averages).
  float* channel_means = nullptr;
  // conv2d only, and only where conv_fetches_ahead (the direct tactic's general schedule):
  // warm_floats floats that a later kernel reads once from memory (the classifier GEMV's
  // weights after a network's last convolution), which the tiles fetch into L2 a few lines a K
  // step as they compute, so that the memory traffic overlaps this kernel's FMAs instead of
  // stalling the later one. Prefetches only: the outputs do not change.
  const float* warm = nullptr;
  int64_t warm_floats = 0;
};

}  // namespace kiln::kernels

// Pieces the INT8 fast kernels (kiln.QConv, kiln.QMatMul) share: the epilogue a node asks for,
// with the zero-point compensation folded into an int32 bias, from its constant inputs.
#pragma once
#include <memory>
#include <vector>

#include "kiln/kernels/int8.h"
#include "kiln/ops/quantized.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {

// Constant inputs of a quantized node, read at prepare time (weights live in the artifact).
struct QuantizedConstants {
  const Tensor* w = nullptr;        // i8 weight
  std::vector<float> w_scale;       // one per channel (a single scale repeated)
  const Tensor* bias = nullptr;     // i32 or f32, or nullptr
};
// nullopt when an input that must be constant is not (the node then runs its reference kernel).
std::optional<QuantizedConstants> quantized_constants(const Node& n, int64_t channels);

// The epilogue of node n for `channels` channels: scales x_scale * w_scale, bias
// (i32 bias - x_zero_point' * weight_sums) where x_zero_point' is the zero point of the
// activations as the kernel sees them (+128 for i8, whose sign bit the kernel flips), clamp,
// output and residual parameters. The arrays live in `store` (owned by the kernel's state).
struct QuantizedEpilogue {
  kernels::int8::QEpilogue e;
  std::vector<float> scales, bias_f;
  std::vector<int32_t> bias;
  ops::QuantAttrs attrs;
};
void build_epilogue(const Node& n, const QuantizedConstants& c, const std::vector<int32_t>& weight_sums,
                    int32_t x_zero_point, float x_scale, QuantizedEpilogue& out);

}  // namespace kiln::runtime

// Pieces shared by kiln.QConv and kiln.QMatMul: attribute specs, shape checks of the
// scale/bias/residual inputs and the element-wise epilogue both reference kernels apply.
#pragma once
#include <vector>

#include "kiln/ops/quantized.h"
#include "kiln_common.h"

namespace kiln::ops::kiln_domain {

// x_scale, x_zero_point, out_dtype, y_scale, y_zero_point, z_scale, z_zero_point + activation attrs.
std::vector<AttrSpec> quant_attr_specs();

// Checks W_scale (input 2: f32 with 1 or `channels` entries), B (input 3: i32 or f32, one per
// channel) and Z (input 4: u8/i8/f32 broadcastable... exactly Y's shape); sets output 0's dtype
// from out_dtype with shape y.
void infer_quantized_io(InferContext& c, const Shape& y, const std::optional<int64_t>& channels);

// Per-channel scales x_scale * w_scale[c] (a single w_scale is repeated).
std::vector<float> channel_scales(const KernelContext& c, float x_scale, const Tensor& w_scale, int64_t channels);

// Y from int32 accumulators laid out like Y ([outer][channel][inner] when per channel, so
// channel = (i / inner) % channels), applying bias, residual, activation and quantization.
Tensor quantized_output(const KernelContext& c, const QuantAttrs& q, const std::vector<int32_t>& acc,
                        const std::vector<int64_t>& ydims, const std::vector<float>& scales, int64_t channels,
                        int64_t inner);

}  // namespace kiln::ops::kiln_domain

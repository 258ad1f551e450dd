// kiln's own ops (domain "kiln", version 1): what fusion passes produce and lowering consumes.
// Each is declared in the op table like any ONNX op (schema, shape inference, cost, reference
// kernel), so the reference interpreter runs an optimized graph too and stays the oracle.
//
//   kiln.FusedConv(X, W, B?, Z?) -> Y
//       Y = act(Conv(X, W) + B + Z). X is NCHW (or NCW / NCDHW as Conv allows), W the ONNX
//       weight [Cout, Cin/group, k...], B [Cout], Z a residual with Y's shape.
//       Attributes: every Conv attribute, plus `activation`, `act_alpha`, `act_beta`.
//   kiln.FusedMatMul(A, B, Bias?, Z?) -> Y
//       Y = act(alpha * A @ op(B) + Bias + Z) with MatMul's broadcasting; op(B) = B, or Bᵀ of
//       the last two dims when `trans_b` = 1 (what Gemm's transB folds into). Bias broadcasts
//       to Y (usually [N]); Z has Y's shape.
//       Attributes: `trans_b` (int, 0), `alpha` (float, 1), `activation`, `act_alpha`, `act_beta`.
//   kiln.FusedElementwise(inputs...) -> outputs...
//       Attribute `body` (graph): its inputs correspond to the node's inputs in order, its
//       outputs to the node's outputs; its nodes are elementwise ops (unary, binary with
//       broadcasting, Where, Clip, Cast, ...). Codegen emits one loop nest for the body.
//   kiln.LayerNorm(X, Scale, Bias?) -> Y
//       Normalises over the trailing dims from `axis` (int, -1) with `epsilon` (float, 1e-5):
//       Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias (ONNX LayerNormalization, any opset).
//   kiln.Attention(Q, K, V, Mask?) -> Y
//       Q [B, H, Sq, D], K [B, H, Sk, D], V [B, H, Sk, Dv] -> Y [B, H, Sq, Dv];
//       Y = softmax(scale * Q Kᵀ + Mask) V, row-wise over Sk. Mask is additive f32 broadcastable
//       to [B, H, Sq, Sk]. Attributes: `scale` (float), `causal` (int, 0): when 1, key j > query
//       i + (Sk - Sq) is masked out (decode with a KV cache keeps the right alignment).
//       Views (fold-attention-views): `q_view`, `k_view`, `v_view` (ints: offset, B, H, S, D,
//       then the element strides along B, H, S; D is contiguous) read that operand as a
//       [B, H, S, D] view of its tensor, whatever the tensor's shape (BERT's [S, 1, 3·E]
//       projection output, Q at offset 0, K at E, V at 2E); `y_view` (B, H, Sq, Dv, then the
//       strides) writes Y that way into an output of the shape `y_shape` (ints), every one of
//       whose elements it covers once (a Transpose + Reshape back to [S, E], absorbed).
//
// Activations (the `activation` string; "" = none), with their float parameters:
//   Relu · LeakyRelu(alpha = act_alpha) · Clip(min = act_alpha, max = act_beta) · Sigmoid ·
//   Tanh · Silu (x·sigmoid x) · HardSigmoid(alpha = act_alpha, beta = act_beta) ·
//   HardSwish (x·HardSigmoid(1/6, 0.5)) · Gelu (erf) · GeluTanh (tanh approximation)
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::ops {

constexpr std::string_view kKilnDomain = "kiln";
constexpr int64_t kKilnOpsetVersion = 1;

enum class Activation : uint8_t {
  None, Relu, LeakyRelu, Clip, Sigmoid, Tanh, Silu, HardSigmoid, HardSwish, Gelu, GeluTanh
};

// "" -> None, "Relu" -> Relu, ...; throws kiln::Error listing the known names otherwise.
Activation parse_activation(std::string_view name);
std::string_view activation_name(Activation a);
// The activation applied to one value (the reference every fast path is checked against).
float apply_activation(Activation a, float x, float alpha, float beta);

}  // namespace kiln::ops

#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/int8.h"
#include "kiln/kernels/pool.h"

namespace kiln::ops {

// The activation of a FusedConv/FusedMatMul node with its two float parameters, defaults
// filled in as the ONNX op it stands for has them (LeakyRelu 0.01, HardSigmoid 0.2/0.5, Clip ±inf).
struct ActivationSpec {
  Activation act = Activation::None;
  float alpha = 0, beta = 0;
};
ActivationSpec activation_of(const Node& n);

// The 2-D geometry of a kiln.FusedConv node for input dims x [N, C, H, W] and weight dims
// w [K, C/group, R, S] (the logical ones: `w_shape` once packed), with auto_pad resolved.
// Shared by the lowering (tactic choice, packing) and the runtime (each input shape).
kernels::Conv2dShape fused_conv_shape(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& w);

// A lowered kiln.ExpandDepthwise node's two convolutions for input dims x [N, C, H, W]: the
// expand (1x1 into E = expand_w_shape[0] channels, in the depthwise input's blocks) and the
// depthwise one over [N, E, H, W] (the node's Conv attributes, `w_shape`). The expand's
// activation is its `expand_` prefixed attributes'. Shared by the lowering and the runtime.
struct ExpandDepthwiseShapes {
  kernels::Conv2dShape expand, depthwise;
};
ExpandDepthwiseShapes expand_depthwise_shapes(const Node& n, const std::vector<int64_t>& x);
ActivationSpec expand_activation_of(const Node& n);

// A lowered kiln.DepthwiseProject node's two convolutions for input dims x [N, C, H, W]: the
// depthwise one (its `depthwise_` attributes, `depthwise_w_shape`) and the 1x1 projection over
// its output (the node's own attributes, `w_shape`). Shared by the lowering and the runtime.
struct DepthwiseProjectShapes {
  kernels::Conv2dShape depthwise, project;
};
DepthwiseProjectShapes depthwise_project_shapes(const Node& n, const std::vector<int64_t>& x);
// The depthwise convolution of a kiln.DepthwiseProject node as a kiln.FusedConv node of its own:
// the `depthwise_` attributes without the prefix (activation, layout, packing); no inputs.
Node depthwise_half(const Node& n);

// A lowered kiln.StemDepthwiseProject node's three convolutions for input dims x [N, C, H, W]:
// the stem (its `stem_` attributes, `stem_w_shape`) and the depthwise + projection pair over the
// stem's output (the node's other attributes, as a kiln.DepthwiseProject's). Shared by the
// lowering and the runtime.
struct StemDepthwiseProjectShapes {
  kernels::Conv2dShape stem, depthwise, project;
};
StemDepthwiseProjectShapes stem_depthwise_project_shapes(const Node& n, const std::vector<int64_t>& x);
// The stem of a kiln.StemDepthwiseProject node as a kiln.FusedConv node of its own: the `stem_`
// attributes without the prefix; no inputs.
Node stem_half(const Node& n);

// Bytes a value takes in memory when that is more than its dims say: the output of a kiln.FusedConv
// written into padded planes (`y_pad`, lower/padded_layout.cpp), its border included. 0 for every
// other value, and for one whose shape is not static yet. The memory planner's
// PlanOptions::stored_bytes.
int64_t padded_planes_bytes(const Value& v);

// kiln.Attention's operand i (0, 1, 2: Q, K, V; 3: Y) as a [B, H, S, D] view of a tensor of
// dims `tensor`: its `*_view` attribute, or without one the tensor itself (rank 4, contiguous).
// Throws naming the node when the attribute is malformed or the view reaches past the tensor
// (or, for Y, does not cover it exactly). Read by the shape inference, the cost, the reference
// kernel, the runtime and the performance model.
struct AttentionView {
  int64_t offset = 0;
  int64_t dims[4] = {0, 0, 0, 0};     // B, H, S, D
  int64_t strides[3] = {0, 0, 0};     // elements between consecutive b, h, s (d: 1)
};
AttentionView attention_view(const Node& n, size_t operand, const std::vector<int64_t>& tensor);
bool attention_has_view(const Node& n, size_t operand);
// The attribute holding that view: "q_view", "k_view", "v_view", "y_view".
const char* attention_view_attr(size_t operand);

// The fast pooling kernels' geometry for a MaxPool / AveragePool node (explicit, auto_pad and
// ceil_mode padding resolved), or nothing when the node runs the reference kernel. Read by the
// runtime (runtime/fast_pool.cpp), the lowering (which pools take channel-blocked activations)
// and the performance model (analysis/perf_cpu.cpp).
struct PoolGeometry {
  kernels::PoolKind kind = kernels::PoolKind::Max;
  kernels::Conv2dShape shape;
  bool count_include_pad = false;
};
// any_batch: a symbolic batch counts as 1 (for the lowering's layout choice, which the batch does
// not change: lower/blocked_layout.cpp; the runtime asks with the instance's static shapes).
std::optional<PoolGeometry> pool_geometry(const Node& n, bool any_batch = false);

// A shape's dims with a symbolic batch (dim 0) counted as 1, or nothing when its rank or another
// dim is not known: for choices the batch does not change (a convolution's tactic, the INT8
// layout), since the runtime plans each batch's shapes.
std::optional<std::vector<int64_t>> dims_batch_as_one(const Shape& s);

// The int8 max pool kernel's geometry (kernels::int8::max_pool_2d) for a MaxPool of a static
// 4-D u8/i8 tensor (2-D window, dilation 1, explicit or VALID padding, no indices output; the
// output size from shape inference), or nothing when the node runs the reference kernel. Read
// by the runtime (runtime/fast_qmax_pool.cpp) and the lowering (lower/int8_nhwc_layout.cpp,
// any_batch: a symbolic batch counts as 1, since the runtime plans each batch's shapes).
std::optional<kernels::int8::Pool2d> qmax_pool_geometry(const Node& n, bool any_batch = false);

}  // namespace kiln::ops

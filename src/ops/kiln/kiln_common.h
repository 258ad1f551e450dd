// Pieces shared by the kiln-domain ops (ops/kiln/): they are compositions of ONNX ops, so
// their shape inference, cost and reference kernels call the ONNX ops' entries in the op
// table rather than keeping second copies of Conv/MatMul/LayerNormalization math.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "../op_helpers.h"
#include "kiln/ops/kiln_ops.h"

namespace kiln::ops::kiln_domain {

// The table entry of ONNX op `name` (throws when missing: a kiln op depends on it).
const OpDef& onnx_op(std::string_view name);

// Runs ONNX op `name`'s reference kernel on `inputs` for the kiln node of `c` (whose
// attributes the ONNX kernel reads, e.g. Conv's pads) and returns output 0.
Tensor run_onnx_kernel(const KernelContext& c, std::string_view name, std::vector<const Tensor*> inputs);

// Flops per element of an activation, read from the cost of the ONNX op(s) it stands for
// (Silu = Sigmoid + Mul), so fused and unfused graphs report the same work.
double activation_flops(Activation a);
// The `activation`, `act_alpha`, `act_beta` attribute specs.
std::vector<AttrSpec> activation_attrs();

// Fused ops compute in f32: f16/bf16 inputs are converted, f64 and integers are refused.
Tensor f32_input(const KernelContext& c, size_t i);
// The compiled runtime replaces a weight by a pre-packed one (attribute `packed`); the
// reference interpreter cannot run such a node.
void refuse_packed(const KernelContext& c);

// Lowering replaces a constant weight (input 1) by its packed form and records the logical
// shape in `w_shape`; inference and cost must see that shape, not the packed blob's.
std::vector<AttrSpec> lowering_attrs();  // packed, isa, tactic, w_shape, x_blocked, y_blocked
// A copy of the node whose input 1 is `standin`, a value with the logical weight shape
// (only when the node is packed; else nullopt).
std::optional<Node> logical_weight_node(const Node& n, Value& standin);
// in_dims[1] replaced by the logical weight dims when the node is packed.
CostContext logical_weight_cost(const CostContext& c);

// y += t in place (f32), t broadcasting to y without growing it; `what` names t in errors.
void add_into(const KernelContext& c, Tensor& y, const Tensor& t, const char* what);
// y = act(y) in place (f32).
void activate(Tensor& y, const ActivationSpec& a);

// Output 1, when the node has it: the per-channel average of output 0, [N, K, 1, ...] (FusedConv's
// and ExpandDepthwise's M, GlobalAveragePool's shape).
void infer_channel_means_output(InferContext& c);

// A composite node's parts (kiln.DepthwiseProject's depthwise half, kiln.StemDepthwiseProject's
// stem) keep their attributes on the node with a prefix. `specs` with `prefix` before each name
// (the names are stored for the life of the process, as AttrSpec's views need).
std::vector<AttrSpec> prefixed_attrs(std::string_view prefix, const std::vector<AttrSpec>& specs);
// A node of op `op` (kiln domain, no inputs or outputs) named n.name + ":" + part, with the
// attributes of n that start with `prefix`, the prefix taken off.
Node prefixed_part(const Node& n, std::string_view prefix, const char* op, const char* part);

// Fails unless `extra` broadcasts to `out` without changing it (bias and residual inputs).
void check_broadcasts_into(const InferContext& c, const Shape& out, size_t input, const char* what);

}  // namespace kiln::ops::kiln_domain

// kiln.FusedMatMul(A, B, Bias?, Z?) = act(alpha * A @ op(B) + Bias + Z), with MatMul's
// broadcasting; op(B) = B, or B with its last two dims swapped when trans_b = 1 (Gemm's
// transB). Made by fuse-epilogue from MatMul/Gemm chains. Inference and the product are
// MatMul's; the epilogue follows.
#include "kiln_common.h"

namespace kiln::ops {
namespace {

using namespace kiln_domain;

bool trans_b(const Node& n) { return n.attr_i("trans_b", 0) != 0; }

void infer_fused_matmul(InferContext& c) {
  Value standin;
  if (std::optional<Node> logical = logical_weight_node(c.node(), standin)) {
    // The packed weight's logical shape is op(B) = [K, N] already: infer as a plain MatMul.
    logical->attrs.erase("trans_b");
    logical->attrs.erase("packed");
    InferContext lc(*logical, c.opset());
    return infer_fused_matmul(lc);
  }
  const Node& n = c.node();
  if (!trans_b(n)) {
    onnx_op("MatMul").infer(c);
  } else {
    // MatMul's inference on A and B with B's last two dims swapped (a stand-in node: the
    // real node's B keeps its stored shape).
    Value bt;
    bt.dtype = c.in_dtype(1);
    bt.shape = c.in_shape(1);
    if (bt.shape.rank_known) {
      if (bt.shape.rank() < 2) c.fail(str_cat("trans_b needs B of rank >= 2, got ", bt.shape.str()));
      std::swap(bt.shape.dims[bt.shape.rank() - 1], bt.shape.dims[bt.shape.rank() - 2]);
    }
    Node stand_in;
    stand_in.op = n.op;
    stand_in.domain = n.domain;
    stand_in.name = n.name;
    stand_in.inputs = {n.inputs[0], &bt};
    stand_in.outputs = n.outputs;
    InferContext sc(stand_in, c.opset());
    onnx_op("MatMul").infer(sc);
  }
  if (!c.has_output(0)) return;
  const Shape& y = n.outputs[0]->shape;
  check_broadcasts_into(c, y, 2, "Bias");
  check_broadcasts_into(c, y, 3, "residual Z");
  activation_of(n);
}

Cost cost_fused_matmul(const CostContext& packed_or_not) {
  const CostContext c = logical_weight_cost(packed_or_not);
  Cost k = onnx_op("MatMul").cost(c);  // 2·K per output; io bytes count Bias and Z once
  double outs = static_cast<double>(numel_of(c.out_dims[0]));
  if (c.node.attr_f("alpha", 1.f) != 1.f) k.flops += outs;
  if (c.node.input(2)) k.flops += outs;
  if (c.node.input(3)) k.flops += outs;
  k.flops += outs * activation_flops(activation_of(c.node).act);
  return k;
}

// B with its last two dims swapped (a fresh row-major tensor).
Tensor swap_last_two(const Tensor& b) {
  std::vector<int64_t> d = b.dims();
  size_t r = d.size();
  int64_t rows = d[r - 2], cols = d[r - 1], batch = rows * cols == 0 ? 0 : b.numel() / (rows * cols);
  std::swap(d[r - 1], d[r - 2]);
  Tensor t(DType::f32, d);
  const float* src = b.data<float>();
  float* dst = t.data<float>();
  for (int64_t k = 0; k < batch; ++k)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) dst[k * rows * cols + j * rows + i] = src[k * rows * cols + i * cols + j];
  return t;
}

void fused_matmul_kernel(KernelContext& c) {
  refuse_packed(c);
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  Tensor a = f32_input(c, 0), b = f32_input(c, 1);
  if (trans_b(n)) {
    KILN_CHECK(b.rank() >= 2, n.describe(), ": trans_b needs B of rank >= 2, got ", dims_str(b.dims()));
    b = swap_last_two(b);
  }
  Tensor y = run_onnx_kernel(c, "MatMul", {&a, &b});
  float alpha = n.attr_f("alpha", 1.f);
  if (alpha != 1.f) {
    float* p = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] *= alpha;
  }
  if (c.has_input(2)) add_into(c, y, f32_input(c, 2), "Bias");
  if (c.has_input(3)) add_into(c, y, f32_input(c, 3), "residual Z");
  activate(y, activation_of(n));
  c.set_output(0, from_f32(y, dt));
}

}  // namespace

OpDef def_FusedMatMul() {
  std::vector<AttrSpec> attrs = {{"trans_b", AttrKind::Int}, {"alpha", AttrKind::Float}};
  for (const AttrSpec& s : activation_attrs()) attrs.push_back(s);
  for (const AttrSpec& s : lowering_attrs()) attrs.push_back(s);
  return {.name = "FusedMatMul",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 2,
          .max_inputs = 4,
          .attrs = std::move(attrs),
          .infer = infer_fused_matmul,
          .cost = cost_fused_matmul,
          .kernel = fused_matmul_kernel,
          .doc = "act(alpha * A @ op(B) + Bias + Z): MatMul/Gemm with bias, residual Add and activation fused"};
}

}  // namespace kiln::ops

// precision-bf16 / precision-fp16: Conv, MatMul, kiln.FusedConv and kiln.FusedMatMul with a
// constant f32 weight -> kiln.HalfConv / kiln.HalfMatMul with the weight rounded (nearest even) to
// bf16 or f16. Bias, residual and activation stay f32 in the node's epilogue. Runs after the -O2
// fusions (so the epilogue chains are already in the nodes) and before lowering, which leaves the
// Half ops alone.
//
// Declines (with the reason for --explain): grouped convolutions (depthwise: too little work per
// weight for the dot-product kernel, they stay f32), weights that are not constant f32, already
// packed, or not a matrix; Gemm (fuse-epilogue turns it into FusedMatMul first).
#include "kiln/compress/quantize.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/passes/rewrite.h"

namespace kiln::compress {
namespace {

using passes::constant_of;

class ToHalf : public passes::Pass {
 public:
  ToHalf(std::string name, DType type) : name_(std::move(name)), type_(type) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override {
    return type_ == DType::bf16 ? "Conv/MatMul weights to bf16 -> kiln.HalfConv/HalfMatMul (AVX512-BF16 kernels)"
                                : "Conv/MatMul weights to f16 storage -> kiln.HalfConv/HalfMatMul (computed in f32)";
  }
  bool run(Model& m, passes::PassContext& ctx) override {
    Graph& g = *m.graph;
    passes::Rewriter rw(m, g, nullptr);
    bool changed = false;
    for (Node* n : passes::node_list(g)) {
      const bool kiln = n->domain == ops::kKilnDomain;
      const bool conv = (kiln && n->op == "FusedConv") || (n->domain.empty() && n->op == "Conv");
      const bool matmul = (kiln && n->op == "FusedMatMul") || (n->domain.empty() && n->op == "MatMul");
      if (!conv && !matmul) {
        if (n->domain.empty() && n->op == "Gemm") ctx.decline(name_, *n, passes::Decision::no("Gemm: run fuse-epilogue first"));
        continue;
      }
      const std::string what = n->describe();
      passes::Decision d = convert(*n, conv, rw);
      if (!d) {
        ctx.decline(name_, *n, d);
        continue;
      }
      ctx.remarks.push_back({name_, what, true, std::string("-> kiln.") + (conv ? "HalfConv" : "HalfMatMul") + " (" +
                                                     std::string(dtype_name(type_)) + " weight)"});
      changed = true;
    }
    if (changed) m.opsets[std::string(ops::kKilnDomain)] = ops::kKilnOpsetVersion;
    return changed;
  }

 private:
  passes::Decision convert(Node& n, bool conv, passes::Rewriter& rw) {
    if (n.has_attr("packed")) return passes::Decision::no("the weight is already packed for the float kernel");
    const Tensor* w = constant_of(n.input(1));
    if (!n.input(0) || n.input(0)->dtype != DType::f32) return passes::Decision::no("the input is not f32");
    if (!w || w->dtype() != DType::f32) return passes::Decision::no("the weight is not a constant f32 tensor");
    if (conv && (w->rank() != 4 || n.attr_i("group", 1) != 1))
      return passes::Decision::no("not a 2-D convolution with group 1 (grouped and depthwise ones stay f32)");
    if (!conv && w->rank() != 2) return passes::Decision::no("the weight is not a matrix");
    rw.set_insertion_point(&n);
    std::vector<Value*> inputs = n.inputs;
    inputs[1] = rw.constant(n.inputs[1]->name + (type_ == DType::bf16 ? "_bf16" : "_f16"), w->cast(type_));
    Node* h = rw.create(conv ? "HalfConv" : "HalfMatMul", inputs, n.attrs, 1, std::string(ops::kKilnDomain));
    h->name = n.name;
    rw.replace(n.outputs[0], h->outputs[0]);
    rw.erase_if_dead(&n);
    return passes::Decision::yes();
  }

  std::string name_;
  DType type_;
};

}  // namespace

std::unique_ptr<passes::Pass> make_precision_pass(DType type) {
  KILN_CHECK(type == DType::bf16 || type == DType::f16, "precision pass: bf16 or f16, not ", dtype_name(type));
  return std::make_unique<ToHalf>(type == DType::bf16 ? "precision-bf16" : "precision-fp16", type);
}

}  // namespace kiln::compress

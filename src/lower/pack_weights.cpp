// Tactic choice and weight packing for convolutions and weight GEMMs. The packed layout is the
// micro-kernel's (kernels/gemm_packed.h, kernels/conv.h), so the node records the ISA it was
// packed for and the runtime refuses a mismatch.
#include <algorithm>
#include <functional>
#include <optional>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// The conv geometry the tactic checks need. Spatial input dims may be symbolic (a dynamic
// image size): the tactics' constraints only read channels, kernel, strides, pads and groups,
// so a stand-in size is enough there.
kernels::Conv2dShape conv_shape(const Node& n, const Tensor& w) {
  const Shape& x = n.inputs[0]->shape;
  auto dim = [&](size_t i, int64_t dflt) { return x[i].is_static() ? x[i].value : dflt; };
  // An image size not known yet stands in as 64, or the window when that is larger (Silero VAD's
  // STFT is a 256-wide Conv1d): the tactics' applicability must not hang on the stand-in.
  const std::vector<int64_t> dil = n.attr_ints("dilations", {1, 1});
  const int64_t rh = (w.dim(2) - 1) * (dil.size() == 2 ? dil[0] : 1) + 1;
  const int64_t rw = (w.dim(3) - 1) * (dil.size() == 2 ? dil[1] : 1) + 1;
  return ops::fused_conv_shape(
      n, {1, dim(1, w.dim(1) * n.attr_i("group", 1)), dim(2, std::max<int64_t>(64, rh)), dim(3, std::max<int64_t>(64, rw))},
      w.dims());
}

Value* add_packed(Graph& g, const std::string& base, size_t floats, const std::function<void(float*)>& fill,
                  double& bytes) {
  Tensor t(DType::f32, {static_cast<int64_t>(floats)});
  fill(t.data<float>());
  bytes += static_cast<double>(floats) * sizeof(float);
  return g.add_initializer(g.unique_name(base), std::move(t));
}

}  // namespace

// The tactic of a kiln.FusedConv (nullopt: none applies, or no fast kernel: `why` says which);
// `others` gets why each other tactic was not taken.
std::optional<kernels::ConvTactic> choose_conv_tactic(const Node& n, std::string& why, std::string& others) {
  const Value* w = n.input(1);
  const Value* x = n.input(0);
  if (!w || !w->is_constant() || w->initializer->dtype() != DType::f32 || w->initializer->rank() != 4 ||
      !x->shape.rank_known || x->shape.rank() != 4) {
    why = "only 2-D f32 convolutions with a constant weight have a fast kernel";
    return std::nullopt;
  }
  const kernels::Conv2dShape s = conv_shape(n, *w->initializer);
  // The kernels' cost estimate picks (pixel-gemm for small images), at the image size when it is
  // static, else at conv_shape's stand-in (64, or the window): the first applicable tactic in a
  // fixed order was the old rule for those, and it gave Silero VAD's 1 -> 258 STFT (a 256-wide
  // window, 4 outputs) to depthwise, 0.045 ms against the reference kernel's 0.035.
  const bool sized = x->shape[2].is_static() && x->shape[3].is_static();
  const std::vector<kernels::ConvTactic> all = {kernels::ConvTactic::Depthwise, kernels::ConvTactic::Pointwise,
                                                kernels::ConvTactic::PixelGemm, kernels::ConvTactic::Gemm,
                                                kernels::ConvTactic::Direct};
  std::optional<kernels::ConvTactic> chosen;
  chosen = kernels::conv_preferred_tactic(s);
  // Why each other tactic was not taken: it cannot run this shape, or it can but costs more.
  for (auto t : all) {
    std::string why = kernels::conv_tactic_unsupported(t, s);
    if (why.empty() && !chosen) chosen = t;
    if (chosen && t == *chosen) continue;
    if (why.empty()) why = sized ? "applies, estimated slower" : "applies, estimated slower at a stand-in size";
    others += std::string(others.empty() ? "" : "; ") + kernels::conv_tactic_name(t) + ": " + why;
  }
  if (!chosen || !kernels::conv_tactic_unsupported(*chosen, s).empty()) {
    why = others;
    return std::nullopt;
  }
  return chosen;
}

KernelChoice lower_conv(Graph& g, Node& n, bool pack, double& bytes, bool direct_between_blocks) {
  KernelChoice c{n.name, "kiln::FusedConv", "reference", ""};
  std::string why, others;
  std::optional<kernels::ConvTactic> chosen = choose_conv_tactic(n, why, others);
  if (!chosen) {
    c.why = why;
    return c;
  }
  const Value* w = n.input(1);
  const Tensor& wt = *w->initializer;
  kernels::Conv2dShape s = conv_shape(n, wt);
  if (direct_between_blocks && kernels::conv_tactic_unsupported(kernels::ConvTactic::Direct, s).empty()) {
    others = std::string(kernels::conv_tactic_name(*chosen)) +
             ": cheaper alone, but its neighbours are direct convolutions: direct keeps the activations "
             "channel-blocked on both sides; " + others;
    chosen = kernels::ConvTactic::Direct;
  }
  const kernels::ConvTactic t = *chosen;
  c.tactic = kernels::conv_tactic_name(t);
  // The direct tactic's 6 x 64 tile, decided on the image's own size (never a stand-in's): its
  // weights are packed in 64-column panels, which the node records for the kernel.
  const Shape& xs = n.inputs[0]->shape;
  if (t == kernels::ConvTactic::Direct && xs[2].is_static() && xs[3].is_static() && kernels::conv_direct_takes_p64(s)) {
    s.p64 = true;
    n.attrs["p64"] = int64_t{1};
  }
  c.why = std::string(t == kernels::ConvTactic::PixelGemm ? "small image: output channels fill the vectors better; "
                                                            : "") +
          (s.p64 ? kP64Note : "") +
          "others: " + others;
  if (pack) {
    size_t floats = kernels::conv_packed_weight_floats(t, s);
    n.inputs[1] = add_packed(g, w->name + ".packed", floats,
                             [&](float* out) { kernels::conv_pack_weight(t, s, wt.data<float>(), out); }, bytes);
    n.attrs["packed"] = int64_t{1};
    n.attrs["isa"] = std::string(kernels::gemm_isa());
    n.attrs["w_shape"] = wt.dims();
  }
  n.attrs["tactic"] = c.tactic;
  return c;
}

KernelChoice lower_matmul(Graph& g, Node& n, bool pack, double& bytes) {
  KernelChoice c{n.name, "kiln::FusedMatMul", "gemm", ""};
  const Value* b = n.input(1);
  if (!b || !b->is_constant() || b->initializer->dtype() != DType::f32 || b->initializer->rank() != 2) {
    c.why = "B is not a constant f32 matrix: the activations GEMM packs both operands per run";
    n.attrs["tactic"] = c.tactic;
    return c;
  }
  const Tensor& bt = *b->initializer;
  bool tb = n.attr_i("trans_b", 0) != 0;
  int64_t K = tb ? bt.dim(1) : bt.dim(0), N = tb ? bt.dim(0) : bt.dim(1);
  // The packed kernel applies bias per output column and a residual of the output's shape.
  if (const Value* bias = n.input(2)) {
    std::optional<int64_t> count = bias->shape.numel();
    if (!count || *count != N || (bias->shape.rank() > 0 && bias->shape.dims.back() != Dim(N))) {
      c.why = "bias " + bias->shape.str() + " is not one value per output column: kept unpacked";
      n.attrs["tactic"] = c.tactic;
      return c;
    }
  }
  if (const Value* z = n.input(3); z && z->shape != n.outputs[0]->shape) {
    c.why = "residual " + z->shape.str() + " does not have the output's shape: kept unpacked";
    n.attrs["tactic"] = c.tactic;
    return c;
  }
  c.tactic = "packed-b";
  c.why = "constant weight packed once into the micro-kernel's panels";
  if (pack) {
    n.inputs[1] = add_packed(g, b->name + ".packed", kernels::packed_b_floats(K, N),
                             [&](float* out) { kernels::pack_b(bt.data<float>(), bt.dim(1), tb, K, N, out); }, bytes);
    n.attrs["packed"] = int64_t{1};
    n.attrs["isa"] = std::string(kernels::gemm_isa());
    n.attrs["w_shape"] = std::vector<int64_t>{K, N};
  }
  n.attrs["tactic"] = c.tactic;
  return c;
}

}  // namespace kiln::lower

// Tactic choice and weight packing for convolutions and weight GEMMs. The packed layout is the
// micro-kernel's (kernels/gemm_packed.h, kernels/conv.h), so the node records the ISA it was
// packed for and the runtime refuses a mismatch.
#include <algorithm>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/gemm_packed.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// The conv geometry the tactic checks need. Spatial input dims may be symbolic (a dynamic
// image size); the tactics' constraints only read channels, kernel, strides, pads, groups.
kernels::Conv2dShape conv_shape(const Node& n, const Tensor& w) {
  kernels::Conv2dShape s;
  const Shape& x = n.inputs[0]->shape;
  s.N = 1;
  s.C = x[1].is_static() ? x[1].value : w.dim(1) * n.attr_i("group", 1);
  s.H = x[2].is_static() ? x[2].value : 64;
  s.W = x[3].is_static() ? x[3].value : 64;
  s.K = w.dim(0);
  s.R = w.dim(2);
  s.S = w.dim(3);
  auto strides = n.attr_ints("strides", {1, 1}), dil = n.attr_ints("dilations", {1, 1});
  auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  s.stride_h = strides[0], s.stride_w = strides[1], s.dil_h = dil[0], s.dil_w = dil[1];
  s.pad_top = pads[0], s.pad_left = pads[1], s.pad_bottom = pads[2], s.pad_right = pads[3];
  std::string ap = n.attr_s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    // Total padding so that out = ceil(in / stride); only the split differs between the two.
    auto split = [&](int64_t in, int64_t k, int64_t st, int64_t d, int64_t& lo, int64_t& hi) {
      int64_t out = (in + st - 1) / st;
      int64_t total = std::max<int64_t>(0, (out - 1) * st + (k - 1) * d + 1 - in);
      lo = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      hi = total - lo;
    };
    split(s.H, s.R, s.stride_h, s.dil_h, s.pad_top, s.pad_bottom);
    split(s.W, s.S, s.stride_w, s.dil_w, s.pad_left, s.pad_right);
  }
  s.group = n.attr_i("group", 1);
  return s;
}

Value* add_packed(Graph& g, const std::string& base, size_t floats, const std::function<void(float*)>& fill,
                  double& bytes) {
  Tensor t(DType::f32, {static_cast<int64_t>(floats)});
  fill(t.data<float>());
  bytes += static_cast<double>(floats) * sizeof(float);
  return g.add_initializer(g.unique_name(base), std::move(t));
}

}  // namespace

KernelChoice lower_conv(Graph& g, Node& n, bool pack, double& bytes) {
  KernelChoice c{n.name, "kiln::FusedConv", "reference", ""};
  const Value* w = n.input(1);
  const Value* x = n.input(0);
  if (!w || !w->is_constant() || w->initializer->dtype() != DType::f32 || w->initializer->rank() != 4 ||
      !x->shape.rank_known || x->shape.rank() != 4) {
    c.why = "only 2-D f32 convolutions with a constant weight have a fast kernel";
    return c;
  }
  const Tensor& wt = *w->initializer;
  kernels::Conv2dShape s = conv_shape(n, wt);
  std::string refusals;
  for (auto t : {kernels::ConvTactic::Depthwise, kernels::ConvTactic::Pointwise, kernels::ConvTactic::Gemm}) {
    std::string why = kernels::conv_tactic_unsupported(t, s);
    if (!why.empty()) {
      refusals += std::string(refusals.empty() ? "" : "; ") + kernels::conv_tactic_name(t) + ": " + why;
      continue;
    }
    c.tactic = kernels::conv_tactic_name(t);
    c.why = refusals.empty() ? "first applicable tactic" : "not " + refusals;
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
  c.why = refusals;
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

#include "kiln/passes/batchnorm.h"

#include <cmath>

namespace kiln::passes {
namespace {

// A constant f32 vector, or nullptr.
const Tensor* f32_vector(const Value* v) {
  const Tensor* t = constant_of(v);
  return t && t->dtype() == DType::f32 && t->rank() == 1 ? t : nullptr;
}

}  // namespace

Decision batchnorm_affine(const Node& bn, BatchNormAffine& out) {
  if (bn.attr_i("training_mode", 0) != 0) return Decision::no("training mode");
  if (bn.attr_i("spatial", 1) != 1) return Decision::no("spatial=0 (per-element statistics)");
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (bn.outputs[i] && (is_graph_output(bn.outputs[i]) || !users_of(bn.outputs[i]).empty()))
      return Decision::no("its running-statistics outputs are used");
  const Tensor* p[4];
  const char* names[4] = {"scale", "bias", "mean", "var"};
  for (size_t i = 0; i < 4; ++i) {
    p[i] = f32_vector(bn.input(i + 1));
    if (!p[i]) return Decision::no(str_cat("its ", names[i], " is not a constant f32 vector"));
    if (p[i]->numel() != p[0]->numel()) return Decision::no("its parameters differ in length");
  }
  double eps = bn.attr_f("epsilon", 1e-5f);
  size_t c = static_cast<size_t>(p[0]->numel());
  out.scale.resize(c);
  out.shift.resize(c);
  for (size_t i = 0; i < c; ++i) {
    double s = p[0]->data<float>()[i] / std::sqrt(static_cast<double>(p[3]->data<float>()[i]) + eps);
    out.scale[i] = static_cast<float>(s);
    out.shift[i] = static_cast<float>(p[1]->data<float>()[i] - p[2]->data<float>()[i] * s);
  }
  return Decision::yes();
}

Tensor scale_along_axis(const Tensor& w, size_t axis, const std::vector<float>& scale) {
  KILN_CHECK(w.dtype() == DType::f32 && axis < w.rank() && static_cast<size_t>(w.dim(axis)) == scale.size(),
             "scale_along_axis: ", scale.size(), " scales for axis ", axis, " of ", dims_str(w.dims()));
  Tensor out(DType::f32, w.dims());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= w.dim(i);
  for (size_t i = axis + 1; i < w.rank(); ++i) inner *= w.dim(i);
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  int64_t c = w.dim(axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < c; ++k) {
      float s = scale[static_cast<size_t>(k)];
      int64_t base = (o * c + k) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[base + i] = src[base + i] * s;
    }
  return out;
}

Tensor fold_bias(const Tensor* bias, const BatchNormAffine& a) {
  size_t c = a.channels();
  KILN_CHECK(!bias || (bias->dtype() == DType::f32 && (bias->numel() == 1 || static_cast<size_t>(bias->numel()) == c)),
             "fold_bias: bias of ", bias ? bias->numel() : 0, " values for ", c, " channels");
  Tensor out(DType::f32, {static_cast<int64_t>(c)});
  for (size_t i = 0; i < c; ++i) {
    float b = bias ? bias->data<float>()[bias->numel() == 1 ? 0 : i] : 0.0f;
    out.data<float>()[i] = b * a.scale[i] + a.shift[i];
  }
  return out;
}

Decision conv_can_absorb(const Node& conv, size_t channels) {
  if (!has_single_use(conv.outputs[0])) return Decision::no("the Conv output has other users");
  const Tensor* w = constant_of(conv.input(1));
  if (!w || w->dtype() != DType::f32 || w->rank() < 3) return Decision::no("the Conv weight is not a constant f32");
  if (static_cast<size_t>(w->dim(0)) != channels)
    return Decision::no(str_cat("the Conv has ", w->dim(0), " output channels, the BatchNormalization ", channels));
  if (conv.input(2)) {
    const Tensor* b = constant_of(conv.input(2));
    if (!b || b->dtype() != DType::f32) return Decision::no("the Conv bias is not a constant f32");
  }
  return Decision::yes();
}

Node* create_conv_with_batchnorm(Rewriter& rw, const Node& conv, const BatchNormAffine& a, const std::string& op,
                                 const std::string& domain, const std::map<std::string, Attribute>& extra_attrs) {
  const Tensor* w = constant_of(conv.input(1));
  KILN_CHECK(w != nullptr, conv.describe(), ": weight is not a constant");
  Value* nw = rw.constant(conv.input(1)->name + "_bn", scale_along_axis(*w, 0, a.scale));
  Value* nb = rw.constant(conv.name + "_bn_bias", fold_bias(constant_of(conv.input(2)), a));
  std::map<std::string, Attribute> attrs = conv.attrs;
  for (const auto& [k, v] : extra_attrs) attrs[k] = v;
  return rw.create(op, {conv.inputs[0], nw, nb}, std::move(attrs), 1, domain);
}

}  // namespace kiln::passes

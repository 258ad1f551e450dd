// Resize (opsets 10, 11, 13+) and Upsample (7-9): nearest / linear / cubic over any
// number of axes, every coordinate_transformation_mode. Weights come from resize_plan.
#include <cmath>
#include <functional>

#include "resize_plan.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

// Which inputs hold scales / sizes / roi for this op and opset (-1: none).
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};

ResizeInputs resize_inputs(const Node& n, int64_t opset) {
  if (n.op == "Upsample") return opset >= 9 ? ResizeInputs{-1, 1, -1} : ResizeInputs{};
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

ResizeAttrs resize_attrs(const Node& n, int64_t opset) {
  ResizeAttrs a;
  const bool legacy = n.op == "Upsample" || opset < 11;
  std::string mode = n.attr_s("mode", "nearest");
  if (mode == "nearest") a.mode = ResizeMode::nearest;
  else if (mode == "linear" || (legacy && mode == "bilinear")) a.mode = ResizeMode::linear;
  else if (mode == "cubic" && !legacy) a.mode = ResizeMode::cubic;
  else throw Error(str_cat(n.describe(), ": unknown mode '", mode, "'"));
  if (legacy) {
    a.coord = CoordMode::asymmetric;
    a.nearest = NearestMode::legacy;
    return a;
  }
  std::string c = n.attr_s("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel") a.coord = CoordMode::half_pixel;
  else if (c == "pytorch_half_pixel") a.coord = CoordMode::pytorch_half_pixel;
  else if (c == "align_corners") a.coord = CoordMode::align_corners;
  else if (c == "asymmetric") a.coord = CoordMode::asymmetric;
  else if (c == "tf_half_pixel_for_nn") a.coord = CoordMode::tf_half_pixel_for_nn;
  else if (c == "tf_crop_and_resize") a.coord = CoordMode::tf_crop_and_resize;
  else throw Error(str_cat(n.describe(), ": unknown coordinate_transformation_mode '", c, "'"));
  std::string nm = n.attr_s("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor") a.nearest = NearestMode::round_prefer_floor;
  else if (nm == "round_prefer_ceil") a.nearest = NearestMode::round_prefer_ceil;
  else if (nm == "floor") a.nearest = NearestMode::floor;
  else if (nm == "ceil") a.nearest = NearestMode::ceil;
  else throw Error(str_cat(n.describe(), ": unknown nearest_mode '", nm, "'"));
  a.cubic_a = n.attr_f("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attr_i("exclude_outside", 0) != 0;
  a.extrapolation = n.attr_f("extrapolation_value", 0.f);
  if (n.attr_i("antialias", 0) != 0) throw Error(str_cat(n.describe(), ": antialias is not supported"));
  return a;
}

// Output dims and per-axis scales from scales or sizes (an empty tensor = not given).
struct ResizeTarget {
  std::vector<int64_t> out;
  std::vector<double> scales;
};

ResizeTarget resize_target(const Node& n, const std::vector<int64_t>& in, const Tensor* scales, const Tensor* sizes) {
  const size_t r = in.size();
  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  std::vector<float> sc;
  if (!scales && !sizes && n.op == "Upsample") {
    KILN_CHECK(n.has_attr("scales"), n.describe(), ": 'scales' is required");
    sc = n.attr_floats("scales", {});
  } else if (scales) {
    KILN_CHECK(!sizes, n.describe(), ": give only one of scales and sizes");
    for (int64_t i = 0; i < scales->numel(); ++i) sc.push_back(static_cast<float>(scales->as_double(i)));
  }
  ResizeTarget t;
  if (!sc.empty()) {
    KILN_CHECK(sc.size() == r, n.describe(), ": ", sc.size(), " scales for rank ", r);
    for (size_t i = 0; i < r; ++i) {
      KILN_CHECK(sc[i] > 0, n.describe(), ": scales must be > 0, got ", sc[i]);
      // float product truncated, as ONNX Runtime
      t.out.push_back(static_cast<int64_t>(std::floor(sc[i] * static_cast<float>(in[i]))));
      t.scales.push_back(sc[i]);
    }
    return t;
  }
  KILN_CHECK(sizes != nullptr, n.describe(), ": one of scales and sizes is required");
  t.out = sizes->to_int64_vector();
  KILN_CHECK(t.out.size() == r, n.describe(), ": ", t.out.size(), " sizes for rank ", r);
  for (size_t i = 0; i < r; ++i) {
    KILN_CHECK(t.out[i] >= 0, n.describe(), ": negative size ", t.out[i]);
    t.scales.push_back(in[i] == 0 ? 1.0 : static_cast<double>(t.out[i]) / static_cast<double>(in[i]));
  }
  return t;
}

void resize_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  DType dt = c.in_dtype(0);
  resize_attrs(c.node(), c.opset());  // reports bad attributes early
  if (!s.rank_known) return c.set_output(0, dt, Shape::unknown_rank());
  ResizeInputs ri = resize_inputs(c.node(), c.opset());
  const Tensor* scales = ri.scales >= 0 ? c.in_const(ri.scales) : nullptr;
  const Tensor* sizes = ri.sizes >= 0 ? c.in_const(ri.sizes) : nullptr;
  // An input whose static shape is empty is "not given" even when its values are unknown.
  auto pending = [&c](int i, const Tensor* known) {
    if (i < 0 || !c.has_input(i) || known) return false;
    const Shape& s = c.in_shape(i);
    return !(s.is_static() && s.numel() == 0);
  };
  const bool scales_pending = pending(ri.scales, scales);
  const bool sizes_pending = pending(ri.sizes, sizes);
  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  const bool attr_scales = c.node().op == "Upsample" && c.opset() < 9;
  if ((!sizes && !scales && !attr_scales) || scales_pending || sizes_pending)
    return c.set_output(0, dt, unknown_dims(s.rank()));
  Shape out = unknown_dims(s.rank());
  if (sizes) {
    auto v = sizes->to_int64_vector();
    if (v.size() != s.rank()) c.fail(str_cat(v.size(), " sizes for rank ", s.rank()));
    for (size_t i = 0; i < v.size(); ++i) out[i] = Dim(v[i]);
    return c.set_output(0, dt, out);
  }
  // scales: static dims scale, a symbolic dim with scale 1 stays
  std::vector<int64_t> in(s.rank(), 1);
  for (size_t i = 0; i < s.rank(); ++i)
    if (s[i].is_static()) in[i] = s[i].value;
  ResizeTarget t = resize_target(c.node(), in, scales, nullptr);
  for (size_t i = 0; i < s.rank(); ++i) {
    if (s[i].is_static()) out[i] = Dim(t.out[i]);
    else if (t.scales[i] == 1.0) out[i] = s[i];
  }
  c.set_output(0, dt, out);
}

// Nearest: a pure gather of whole elements (any dtype), extrapolation_value where outside.
void resize_nearest(KernelContext& k, const Tensor& x, const std::vector<AxisTaps>& taps,
                    const std::vector<int64_t>& out, double extrapolation) {
  Tensor& y = k.alloc_output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  Tensor fill = Tensor::scalar<double>(extrapolation).cast(x.dtype());
  const int64_t r = static_cast<int64_t>(out.size()), es = static_cast<int64_t>(dtype_size(x.dtype()));
  std::vector<int64_t> st = strides_of(x.dims()), pos(r, 0);
  const auto* src = static_cast<const char*>(x.raw());
  auto* dst = static_cast<char*>(y.raw());
  for (int64_t e = 0; e < y.numel(); ++e) {
    int64_t off = 0;
    bool outside = false;
    for (int64_t d = 0; d < r; ++d) {
      outside |= taps[d].outside[pos[d]] != 0;
      off += taps[d].idx[pos[d]] * st[d];
    }
    std::memcpy(dst + e * es, outside ? static_cast<const char*>(fill.raw()) : src + off * es, es);
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
}

// Linear / cubic: each output is the tensor-product weighted sum over all axes' taps.
template <typename T>
void resize_weighted(const T* src, T* dst, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                     const std::vector<AxisTaps>& taps, double extrapolation) {
  const int64_t r = static_cast<int64_t>(out.size());
  std::vector<int64_t> st = strides_of(in), pos(r, 0);
  const int64_t n = numel_of(out);
  std::function<double(int64_t, int64_t)> sum = [&](int64_t d, int64_t off) -> double {
    if (d == r) return static_cast<double>(src[off]);
    const AxisTaps& t = taps[d];
    double acc = 0;
    for (int j = 0; j < t.taps; ++j) {
      double w = t.w[pos[d] * t.taps + j];
      if (w != 0) acc += w * sum(d + 1, off + t.idx[pos[d] * t.taps + j] * st[d]);
    }
    return acc;
  };
  for (int64_t e = 0; e < n; ++e) {
    bool outside = false;
    for (int64_t d = 0; d < r; ++d) outside |= taps[d].outside[pos[d]] != 0;
    dst[e] = static_cast<T>(outside ? extrapolation : sum(0, 0));
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
}

void resize_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const Node& n = k.node();
  ResizeAttrs a = resize_attrs(n, k.opset());
  ResizeInputs ri = resize_inputs(n, k.opset());
  const Tensor* scales = ri.scales >= 0 && k.has_input(ri.scales) ? &k.input(ri.scales) : nullptr;
  const Tensor* sizes = ri.sizes >= 0 && k.has_input(ri.sizes) ? &k.input(ri.sizes) : nullptr;
  ResizeTarget t = resize_target(n, x.dims(), scales, sizes);
  check_dims(t.out, k);
  const size_t r = x.rank();
  std::vector<double> roi;
  if (a.coord == CoordMode::tf_crop_and_resize) {
    if (ri.roi < 0 || !k.has_input(ri.roi) || k.input(ri.roi).numel() != static_cast<int64_t>(2 * r))
      k.fail(str_cat("tf_crop_and_resize needs roi with ", 2 * r, " values"));
    for (int64_t i = 0; i < k.input(ri.roi).numel(); ++i) roi.push_back(k.input(ri.roi).as_double(i));
  }
  std::vector<AxisTaps> taps;
  for (size_t d = 0; d < r; ++d) {
    if (x.dim(d) == 0 && t.out[d] > 0) k.fail(str_cat("cannot resize an empty dim ", d, " to ", t.out[d]));
    taps.push_back(axis_taps(a, x.dim(d), t.out[d], t.scales[d], roi.empty() ? 0 : roi[d], roi.empty() ? 1 : roi[d + r]));
  }
  if (a.mode == ResizeMode::nearest) return resize_nearest(k, x, taps, t.out, a.extrapolation);
  if (x.dtype() == DType::f64) {
    Tensor& y = k.alloc_output(0, x.dtype(), t.out);
    return resize_weighted(x.data<double>(), y.data<double>(), x.dims(), t.out, taps, a.extrapolation);
  }
  // Others compute in f32 (f16/bf16/ints convert; ints truncate back).
  Tensor xf = to_f32(x);
  Tensor yf(DType::f32, t.out);
  resize_weighted(xf.data<float>(), yf.data<float>(), x.dims(), t.out, taps, a.extrapolation);
  k.set_output(0, from_f32(yf, x.dtype()));
}

// Linear and cubic: a multiply-add per tap of every resized axis and output element.
Cost resize_cost(const CostContext& c) {
  Cost k = cost_data_movement(c);
  std::string mode = c.node.attr_s("mode", "nearest");
  if (mode == "nearest" || c.in_dims.empty() || c.out_dims.empty()) return k;
  const int taps = mode == "cubic" ? 4 : 2;
  double per_out = 1;
  const auto &in = c.in_dims[0], &out = c.out_dims[0];
  for (size_t d = 0; d < in.size() && d < out.size(); ++d)
    if (in[d] != out[d]) per_out *= taps;
  k.flops = 2 * per_out * static_cast<double>(numel_of(out));
  return k;
}

}  // namespace

OpDef def_Resize() {
  return {.name = "Resize", .since = 10, .min_inputs = 1, .max_inputs = 4,
          .attrs = {{"mode", AttrKind::String}, {"coordinate_transformation_mode", AttrKind::String},
                    {"nearest_mode", AttrKind::String}, {"cubic_coeff_a", AttrKind::Float},
                    {"exclude_outside", AttrKind::Int}, {"extrapolation_value", AttrKind::Float},
                    {"antialias", AttrKind::Int}},
          .infer = resize_infer, .cost = resize_cost, .kernel = resize_kernel,
          .doc = "resizes by scales or to sizes: nearest, linear or cubic interpolation"};
}

OpDef def_Upsample() {
  return {.name = "Upsample", .since = 7, .min_inputs = 1, .max_inputs = 2,
          .attrs = {{"mode", AttrKind::String}, {"scales", AttrKind::Floats}}, .infer = resize_infer,
          .cost = resize_cost, .kernel = resize_kernel,
          .doc = "upsamples by scales (nearest or linear, asymmetric coordinates)"};
}

}  // namespace kiln::ops

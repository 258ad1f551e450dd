#include <algorithm>
#include <optional>

#include "kiln_common.h"

namespace kiln::ops {
namespace {

// Padding before and after for one spatial dim under auto_pad SAME_UPPER / SAME_LOWER: the total
// that makes out = ceil(in / stride), the odd pixel last for SAME_UPPER.
void same_pads(int64_t in, int64_t k, int64_t stride, int64_t dil, bool upper, int64_t& before, int64_t& after) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + (k - 1) * dil + 1 - in);
  before = upper ? total / 2 : total - total / 2;
  after = total - before;
}

// A kiln.FusedConv's `y_pad` [top, left, bottom, right] (padded_layout.cpp), or empty.
std::vector<int64_t> y_pad_of(const Node& n) {
  if (!n.has_attr("y_pad")) return {};
  std::vector<int64_t> pad = n.attr_ints("y_pad", {});
  KILN_CHECK(pad.size() == 4, n.describe(), ": y_pad must hold 4 values (top, left, bottom, right), got ", pad.size());
  return pad;
}

}  // namespace

kernels::Conv2dShape fused_conv_shape(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  KILN_CHECK(x.size() == 4 && w.size() == 4, n.describe(), ": a 2-D convolution needs 4-D input and weight, got ",
             dims_str(x), " and ", dims_str(w));
  kernels::Conv2dShape s;
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.K = w[0], s.R = w[2], s.S = w[3];
  s.group = n.attr_i("group", 1);
  s.x_blocked = n.attr_i("x_blocked", 0) != 0, s.y_blocked = n.attr_i("y_blocked", 0) != 0;
  s.x_block = n.attr_i("x_block", kernels::kConvBlock), s.y_block = n.attr_i("y_block", kernels::kConvBlock);
  s.x_nhwc = n.attr_i("x_nhwc", 0) != 0, s.y_nhwc = n.attr_i("y_nhwc", 0) != 0;
  s.x_padded = n.attr_i("x_padded", 0) != 0;
  s.p64 = n.attr_i("p64", 0) != 0;
  s.winograd = n.attr_i("winograd", 0) != 0;
  if (const std::vector<int64_t> yp = y_pad_of(n); !yp.empty())
    s.y_pad_top = yp[0], s.y_pad_left = yp[1], s.y_pad_bottom = yp[2], s.y_pad_right = yp[3];
  auto strides = n.attr_ints("strides", {1, 1}), dil = n.attr_ints("dilations", {1, 1});
  auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  KILN_CHECK(strides.size() == 2 && dil.size() == 2 && pads.size() == 4, n.describe(),
             ": strides, dilations and pads must describe 2 spatial dims");
  s.stride_h = strides[0], s.stride_w = strides[1], s.dil_h = dil[0], s.dil_w = dil[1];
  s.pad_top = pads[0], s.pad_left = pads[1], s.pad_bottom = pads[2], s.pad_right = pads[3];
  std::string ap = n.attr_s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    same_pads(s.H, s.R, s.stride_h, s.dil_h, ap == "SAME_UPPER", s.pad_top, s.pad_bottom);
    same_pads(s.W, s.S, s.stride_w, s.dil_w, ap == "SAME_UPPER", s.pad_left, s.pad_right);
  } else if (ap == "VALID") {
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 0;
  }
  return s;
}

int64_t padded_planes_bytes(const Value& v) {
  const Node* n = v.producer;
  if (!n || n->domain != kKilnDomain || n->op != "FusedConv" || !n->has_attr("y_pad") || n->outputs.empty() ||
      n->outputs[0] != &v || !v.shape.is_static() || v.shape.rank() != 4)
    return 0;
  const std::vector<int64_t> d = v.shape.static_dims(), pad = y_pad_of(*n);
  return static_cast<int64_t>(dtype_size(v.dtype)) * d[0] * d[1] * (d[2] + pad[0] + pad[2]) * (d[3] + pad[1] + pad[3]);
}

std::optional<std::vector<int64_t>> dims_batch_as_one(const Shape& s) {
  if (!s.rank_known || s.rank() == 0) return std::nullopt;
  std::vector<int64_t> d = {s[0].is_static() ? s[0].value : 1};
  for (size_t i = 1; i < s.rank(); ++i) {
    if (!s[i].is_static()) return std::nullopt;
    d.push_back(s[i].value);
  }
  return d;
}

namespace {
// A pool's input or output dims: static, or (any_batch) static but for a symbolic batch, which
// counts as 1.
std::optional<std::vector<int64_t>> pool_dims(const Shape& s, bool any_batch) {
  if (s.is_static()) return s.static_dims();
  return any_batch ? dims_batch_as_one(s) : std::nullopt;
}
}  // namespace

std::optional<PoolGeometry> pool_geometry(const Node& n, bool any_batch) {
  const Value* x = n.input(0);
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (n.outputs.size() > 1 && n.outputs[1]) return std::nullopt;  // Indices: the reference computes them
  if (!x || !y || x->dtype != DType::f32) return std::nullopt;
  const std::optional<std::vector<int64_t>> xs = pool_dims(x->shape, any_batch), ys = pool_dims(y->shape, any_batch);
  if (!xs || !ys || xs->size() != 4 || ys->size() != 4) return std::nullopt;
  const std::vector<int64_t>&xd = *xs, &yd = *ys;
  const std::vector<int64_t> k = n.attr_ints("kernel_shape", {});
  if (k.size() != 2) return std::nullopt;
  const std::vector<int64_t> st = n.attr_ints("strides", {1, 1}), dil = n.attr_ints("dilations", {1, 1});
  std::vector<int64_t> pads = n.attr_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || dil.size() != 2 || pads.size() != 4) return std::nullopt;
  const std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    same_pads(xd[2], k[0], st[0], dil[0], auto_pad == "SAME_UPPER", pads[0], pads[2]);
    same_pads(xd[3], k[1], st[1], dil[1], auto_pad == "SAME_UPPER", pads[1], pads[3]);
  } else if (auto_pad != "NOTSET") {
    return std::nullopt;
  }
  PoolGeometry s;
  s.kind = n.op == "MaxPool" ? kernels::PoolKind::Max : kernels::PoolKind::Average;
  s.count_include_pad = n.attr_i("count_include_pad", 0) != 0;
  kernels::Conv2dShape& c = s.shape;
  c.N = xd[0], c.C = c.K = c.group = xd[1], c.H = xd[2], c.W = xd[3];
  c.R = k[0], c.S = k[1];
  c.stride_h = st[0], c.stride_w = st[1], c.dil_h = dil[0], c.dil_w = dil[1];
  c.pad_top = pads[0], c.pad_left = pads[1], c.pad_bottom = pads[2], c.pad_right = pads[3];
  if (!kernels::conv_tactic_unsupported(kernels::ConvTactic::Depthwise, c).empty()) return std::nullopt;
  // ceil_mode (or any rounding up the shape inference did): widen the bottom/right padding
  // until the floor formula gives the output size.
  const int64_t extra_h = (yd[2] - 1) * c.stride_h + (c.R - 1) * c.dil_h + 1 - (c.H + c.pad_top + c.pad_bottom);
  const int64_t extra_w = (yd[3] - 1) * c.stride_w + (c.S - 1) * c.dil_w + 1 - (c.W + c.pad_left + c.pad_right);
  if (extra_h > 0) c.pad_bottom += extra_h;
  if (extra_w > 0) c.pad_right += extra_w;
  if (yd != std::vector<int64_t>{c.N, c.C, c.out_h(), c.out_w()}) return std::nullopt;
  // The average that counts padding would count the extra too; a window with no input element
  // has no defined maximum here.
  if ((extra_h > 0 || extra_w > 0) && s.kind == kernels::PoolKind::Average && s.count_include_pad) return std::nullopt;
  if ((yd[2] - 1) * c.stride_h - c.pad_top >= c.H || (yd[3] - 1) * c.stride_w - c.pad_left >= c.W) return std::nullopt;
  return s;
}


std::optional<kernels::int8::Pool2d> qmax_pool_geometry(const Node& n, bool any_batch) {
  if (!n.domain.empty() || n.op != "MaxPool" || n.outputs.empty() || !n.outputs[0]) return std::nullopt;
  const Value* x = n.input(0);
  const Value* y = n.outputs[0];
  if (!x || (x->dtype != DType::u8 && x->dtype != DType::i8) || (n.outputs.size() > 1 && n.outputs[1]))
    return std::nullopt;
  const std::optional<std::vector<int64_t>> xd = pool_dims(x->shape, any_batch), yd = pool_dims(y->shape, any_batch);
  if (!xd || !yd || xd->size() != 4 || yd->size() != 4) return std::nullopt;
  const std::vector<int64_t> k = n.attr_ints("kernel_shape", {}), s = n.attr_ints("strides", {1, 1}),
                             d = n.attr_ints("dilations", {1, 1}), pads = n.attr_ints("pads", {0, 0, 0, 0});
  const std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  if (k.size() != 2 || s.size() != 2 || d != std::vector<int64_t>{1, 1} || pads.size() != 4 ||
      (auto_pad != "NOTSET" && auto_pad != "VALID"))
    return std::nullopt;
  kernels::int8::Pool2d p;
  p.planes = (*xd)[0] * (*xd)[1], p.H = (*xd)[2], p.W = (*xd)[3], p.OH = (*yd)[2], p.OW = (*yd)[3];
  p.kh = k[0], p.kw = k[1], p.stride_h = s[0], p.stride_w = s[1];
  p.pad_top = auto_pad == "VALID" ? 0 : pads[0], p.pad_left = auto_pad == "VALID" ? 0 : pads[1];
  return p;
}

}  // namespace kiln::ops

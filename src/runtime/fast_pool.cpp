// MaxPool / AveragePool over two spatial dims and GlobalAveragePool on f32 NCHW, with the
// phase-plane pooling kernels of kernels/pool.h. Other cases (1-D/3-D windows, the Indices
// output, an average whose ceil_mode window reaches past the padding) run the reference kernel.
#include <limits>

#include "fast_common.h"
#include "kiln/kernels/pool.h"

namespace kiln::runtime {
namespace {

// Padding before and after for one spatial dim under auto_pad SAME_UPPER / SAME_LOWER.
void same_pads(int64_t in, int64_t k, int64_t stride, int64_t dil, bool upper, int64_t& before, int64_t& after) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + (k - 1) * dil + 1 - in);
  before = upper ? total / 2 : total - total / 2;
  after = total - before;
}

}  // namespace

std::optional<PoolGeometry> fast_pool_geometry(const Node& n) {
  const Value* x = n.input(0);
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (n.outputs.size() > 1 && n.outputs[1]) return std::nullopt;  // Indices: the reference computes them
  if (!x || !y || x->dtype != DType::f32 || !x->shape.is_static() || x->shape.rank() != 4 || !y->shape.is_static())
    return std::nullopt;
  const std::vector<int64_t> xd = x->shape.static_dims(), yd = y->shape.static_dims();
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

namespace {

bool prepare_pool(StepContext& ctx) {
  std::optional<PoolGeometry> g = fast_pool_geometry(*ctx.node);
  if (!g) return false;
  ctx.workspace_bytes = static_cast<int64_t>(kernels::pool2d_workspace_floats(g->shape, ctx.max_threads) * sizeof(float));
  ctx.state = std::make_shared<PoolGeometry>(*g);
  return true;
}

void run_pool(StepContext& ctx) {
  const PoolGeometry& s = *static_cast<const PoolGeometry*>(ctx.state.get());
  kernels::pool2d(s.kind, s.shape, s.count_include_pad, ctx.in(0).data<float>(), ctx.out(0).data<float>(),
                  static_cast<float*>(ctx.workspace), ctx.threads);
}

struct GlobalState {
  int64_t planes = 0, size = 0;
};

bool prepare_global(StepContext& ctx) {
  const Value* x = ctx.node->input(0);
  if (!x || x->dtype != DType::f32 || !x->shape.is_static() || x->shape.rank() < 3) return false;
  const std::vector<int64_t> d = x->shape.static_dims();
  auto s = std::make_shared<GlobalState>();
  s->planes = d[0] * d[1];
  s->size = dims_product(d, 2, d.size());
  if (s->size == 0) return false;
  ctx.state = s;
  return true;
}

void run_global(StepContext& ctx) {
  const GlobalState& s = *static_cast<const GlobalState*>(ctx.state.get());
  kernels::global_average_pool(ctx.in(0).data<float>(), s.planes, s.size, ctx.out(0).data<float>(), ctx.threads);
}

}  // namespace

FastKernel fast_Pool() { return FastKernel{prepare_pool, run_pool}; }
FastKernel fast_GlobalAveragePool() { return FastKernel{prepare_global, run_global}; }

}  // namespace kiln::runtime

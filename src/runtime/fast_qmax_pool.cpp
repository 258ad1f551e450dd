// MaxPool on u8/i8 tensors (what fold-qdq leaves between quantized convolutions), 2-D, with
// dilation 1 and no indices output; the output size comes from shape inference (so ceil_mode
// and auto_pad are already resolved). Anything else, f32 included, runs its reference kernel.
#include "kiln/kernels/int8.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Value* y = n.outputs[0];
  if ((x->dtype != DType::u8 && x->dtype != DType::i8) || !x->shape.is_static() || x->shape.rank() != 4 ||
      !y->shape.is_static() || (n.outputs.size() > 1 && n.outputs[1]))
    return false;
  std::vector<int64_t> k = n.attr_ints("kernel_shape", {}), s = n.attr_ints("strides", {1, 1}),
                       d = n.attr_ints("dilations", {1, 1}), pads = n.attr_ints("pads", {0, 0, 0, 0});
  std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  if (k.size() != 2 || s.size() != 2 || d != std::vector<int64_t>{1, 1} || pads.size() != 4 ||
      (auto_pad != "NOTSET" && auto_pad != "VALID"))
    return false;
  auto xd = x->shape.static_dims(), yd = y->shape.static_dims();
  auto p = std::make_shared<kernels::int8::Pool2d>();
  p->planes = xd[0] * xd[1], p->H = xd[2], p->W = xd[3], p->OH = yd[2], p->OW = yd[3];
  p->kh = k[0], p->kw = k[1], p->stride_h = s[0], p->stride_w = s[1];
  p->pad_top = auto_pad == "VALID" ? 0 : pads[0], p->pad_left = auto_pad == "VALID" ? 0 : pads[1];
  ctx.workspace_bytes = static_cast<int64_t>(kernels::int8::max_pool_workspace_bytes(*p, ctx.max_threads));
  ctx.state = p;
  return true;
}

void run(StepContext& ctx) {
  const auto& p = *static_cast<const kernels::int8::Pool2d*>(ctx.state.get());
  kernels::int8::max_pool_2d(p, ctx.in(0).dtype() == DType::i8, static_cast<const uint8_t*>(ctx.in(0).raw()),
                             static_cast<uint8_t*>(ctx.out(0).raw()), static_cast<uint8_t*>(ctx.workspace), ctx.threads);
}

}  // namespace

FastKernel fast_QMaxPool() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

// MaxPool on u8/i8 tensors (what fold-qdq leaves between quantized convolutions), 2-D, with
// dilation 1 and no indices output; the output size comes from shape inference (so ceil_mode
// and auto_pad are already resolved; ops::qmax_pool_geometry). Anything else, f32 included, runs
// its reference kernel. With y_nhwc (lower/int8_nhwc_layout.cpp) the pooled planes are then
// transposed into the pixel-major output the INT8 convolutions after it read.
#include "kiln/kernels/int8.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct QPoolState {
  kernels::int8::Pool2d p;
  int64_t N = 0, C = 0;
  // y_nhwc (lower/int8_nhwc_layout.cpp): pooled NCHW into the workspace after the pool's own
  // scratch, then transposed into the pixel-major output.
  bool pixel_major = false;
  int64_t pooled_offset = 0;
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const bool pixel_major = n.attr_i("y_nhwc", 0) != 0;
  std::optional<kernels::int8::Pool2d> p = ops::qmax_pool_geometry(n);
  KILN_CHECK(p || !pixel_major, n.describe(), ": a pixel-major output needs the fast int8 max pool");
  if (!p) return false;
  auto st = std::make_shared<QPoolState>();
  st->p = *p;
  const auto xd = n.input(0)->shape.static_dims();
  st->N = xd[0], st->C = xd[1], st->pixel_major = pixel_major;
  const int64_t scratch = static_cast<int64_t>(kernels::int8::max_pool_workspace_bytes(*p, ctx.max_threads));
  st->pooled_offset = (scratch + 63) / 64 * 64;
  ctx.workspace_bytes = pixel_major ? st->pooled_offset + p->planes * p->OH * p->OW : scratch;
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const auto& st = *static_cast<const QPoolState*>(ctx.state.get());
  uint8_t* ws = static_cast<uint8_t*>(ctx.workspace);
  uint8_t* y = static_cast<uint8_t*>(ctx.out(0).raw());
  uint8_t* pooled = st.pixel_major ? ws + st.pooled_offset : y;
  kernels::int8::max_pool_2d(st.p, ctx.in(0).dtype() == DType::i8, static_cast<const uint8_t*>(ctx.in(0).raw()), pooled,
                             ws, ctx.threads);
  if (st.pixel_major) kernels::int8::planes_to_pixels(pooled, st.N, st.C, st.p.OH, st.p.OW, y, ctx.threads);
}

}  // namespace

FastKernel fast_QMaxPool() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

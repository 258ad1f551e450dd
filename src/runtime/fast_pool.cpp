// MaxPool / AveragePool over two spatial dims and GlobalAveragePool on f32 NCHW, with the
// phase-plane pooling kernels of kernels/pool.h. Other cases (1-D/3-D windows, the Indices
// output, an average whose ceil_mode window reaches past the padding) run the reference kernel.
#include <limits>

#include "fast_common.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"
#include "kiln/kernels/pool.h"

namespace kiln::runtime {

namespace {

// A pool after a direct convolution reads channel-blocked activations and writes them blocked
// too, or NCHW when a reader needs that (digits_cnn's pool before its Flatten: each block is
// transposed into its planes as it is pooled); lower/blocked_layout.cpp never sets y_blocked
// without x_blocked. The reference kernel cannot.
bool blocked(const Node& n) { return n.attr_i("x_blocked", 0) != 0; }
bool blocked_out(const Node& n) { return n.attr_i("y_blocked", 0) != 0; }

bool prepare_pool(StepContext& ctx) {
  std::optional<PoolGeometry> g = fast_pool_geometry(*ctx.node);
  if (blocked(*ctx.node)) {
    KILN_CHECK(g && g->kind == kernels::PoolKind::Max && g->shape.C % kernels::kConvBlock == 0,
               ctx.node->describe(), ": channel-blocked pooling needs a 2-D f32 max pool over a multiple of ",
               kernels::kConvBlock, " channels");
    ctx.state = std::make_shared<PoolGeometry>(*g);
    return true;
  }
  KILN_CHECK(!blocked_out(*ctx.node), ctx.node->describe(), ": a channel-blocked output needs a blocked input");
  if (!g) return false;
  ctx.workspace_bytes = static_cast<int64_t>(kernels::pool2d_workspace_floats(g->shape, ctx.max_threads) * sizeof(float));
  ctx.state = std::make_shared<PoolGeometry>(*g);
  return true;
}

void run_pool(StepContext& ctx) {
  const PoolGeometry& s = *static_cast<const PoolGeometry*>(ctx.state.get());
  if (blocked(*ctx.node)) {
    kernels::max_pool_blocked(s.shape, ctx.in(0).data<float>(), ctx.out(0).data<float>(), ctx.threads,
                              !blocked_out(*ctx.node));
    return;
  }
  kernels::pool2d(s.kind, s.shape, s.count_include_pad, ctx.in(0).data<float>(), ctx.out(0).data<float>(),
                  static_cast<float*>(ctx.workspace), ctx.threads);
}

struct GlobalState {
  int64_t planes = 0, size = 0;
  int64_t N = 0, C = 0;
  bool blocked = false, pixel_major = false;
};

bool prepare_global(StepContext& ctx) {
  const Value* x = ctx.node->input(0);
  const bool in_blocks = blocked(*ctx.node);
  // Pixel-major [N][H][W][C] floats (lower/int8_nhwc_layout.cpp: a dequantized INT8 output).
  const bool pixel_major = ctx.node->attr_i("x_nhwc", 0) != 0;
  const bool fast = x && x->dtype == DType::f32 && x->shape.is_static() && x->shape.rank() >= 3;
  if (in_blocks)
    KILN_CHECK(fast && x->shape[1].value % kernels::kConvBlock == 0, ctx.node->describe(),
               ": a channel-blocked input needs a static f32 one with a multiple of ", kernels::kConvBlock, " channels");
  KILN_CHECK(!pixel_major || fast, ctx.node->describe(), ": a pixel-major input needs a static f32 one");
  if (!fast) return false;
  const std::vector<int64_t> d = x->shape.static_dims();
  auto s = std::make_shared<GlobalState>();
  s->planes = d[0] * d[1];
  s->N = d[0], s->C = d[1], s->blocked = in_blocks, s->pixel_major = pixel_major;
  s->size = dims_product(d, 2, d.size());
  if (s->size == 0 && !in_blocks && !pixel_major) return false;
  ctx.state = s;
  return true;
}

void run_global(StepContext& ctx) {
  const GlobalState& s = *static_cast<const GlobalState*>(ctx.state.get());
  if (s.pixel_major) {
    kernels::global_average_pool_pixel_major(ctx.in(0).data<float>(), s.N, s.C, s.size, ctx.out(0).data<float>(),
                                              ctx.threads);
    return;
  }
  if (s.blocked) {
    kernels::global_average_pool_blocked(ctx.in(0).data<float>(), s.N, s.C, s.size, ctx.out(0).data<float>(),
                                         ctx.threads);
    return;
  }
  kernels::global_average_pool(ctx.in(0).data<float>(), s.planes, s.size, ctx.out(0).data<float>(), ctx.threads);
}

}  // namespace

FastKernel fast_Pool() { return FastKernel{prepare_pool, run_pool}; }
FastKernel fast_GlobalAveragePool() { return FastKernel{prepare_global, run_global}; }

}  // namespace kiln::runtime

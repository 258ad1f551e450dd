// Softmax over contiguous f32 rows, straight into the arena and split over threads by rows.
// The arithmetic is the reference kernel's, in the same order (max, e = exp(x - max) stored,
// sum in double, multiply by the float of 1/sum), so results are bit-identical to it; only the
// allocation and the copy out of a temporary are gone.
#include <cmath>

#include "kiln/kernels/parallel.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct Rows {
  int64_t rows = 0, n = 0;
};

bool prepare(StepContext& ctx) {
  const Node& node = *ctx.node;
  const Value* x = node.input(0);
  if (!x || x->dtype != DType::f32 || !x->shape.is_static()) return false;
  std::vector<int64_t> dims = x->shape.static_dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return false;
  int64_t axis;
  if (ctx.opset >= 13) {
    axis = node.attr_i("axis", -1);
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return false;  // rows must be contiguous
  } else {
    axis = node.attr_i("axis", 1);  // coerced to 2-D: rows are everything from axis on
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return false;
  }
  auto r = std::make_shared<Rows>();
  r->rows = 1;
  r->n = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? r->rows : r->n) *= dims[i];
  if (r->n == 0) return false;
  ctx.state = r;
  return true;
}

void run(StepContext& ctx) {
  const Rows& r = *static_cast<const Rows*>(ctx.state.get());
  const float* x = ctx.in(0).data<float>();
  float* y = ctx.out(0).data<float>();
  const int64_t n = r.n;
  auto body = [x, y, n](int64_t rb, int64_t re) {
    for (int64_t row = rb; row < re; ++row) {
      const float* xr = x + row * n;
      float* yr = y + row * n;
      float m = xr[0];
      for (int64_t k = 1; k < n; ++k)
        if (xr[k] > m) m = xr[k];
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        float e = std::exp(xr[k] - m);
        yr[k] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t k = 0; k < n; ++k) yr[k] *= inv;
    }
  };
  const int threads = r.rows > 1 ? kernels::threads_for_work(static_cast<double>(r.rows * r.n) * 4, ctx.threads) : 1;
  if (threads > 1) kernels::parallel_for(r.rows, threads, body);
  else body(0, r.rows);
}

}  // namespace

FastKernel fast_Softmax() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime

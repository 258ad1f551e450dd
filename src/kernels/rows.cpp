// Row kernels (rows.h): threading and argument plumbing around the table's per-row routines.
#include "kiln/kernels/rows.h"

#include <algorithm>
#include <vector>

#include "gemm_driver.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {

void softmax_rows(const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t n, int threads,
                  const KernelTable& t) {
  if (rows <= 0 || n <= 0) return;
  threads = threads_for_work(static_cast<double>(rows) * n * 8, threads <= 0 ? default_threads() : threads);
  parallel_for(rows, threads, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) t.softmax_row(x + r * ldx, y + r * ldy, n);
  });
}

void layer_norm_rows(const float* x, int64_t ldx, const float* scale, const float* bias, float eps, float* y,
                     int64_t ldy, int64_t rows, int64_t n, int threads, const KernelTable& t) {
  if (rows <= 0 || n <= 0) return;
  threads = threads_for_work(static_cast<double>(rows) * n * 4, threads <= 0 ? default_threads() : threads);
  parallel_for(rows, threads, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) t.layer_norm_row(x + r * ldx, scale, bias, eps, y + r * ldy, n);
  });
}

void apply_epilogue(float* y, int64_t ldy, int64_t rows, int64_t cols, const Epilogue& epi, int threads,
                    const KernelTable& t) {
  if (rows <= 0 || cols <= 0 || detail::epilogue_is_identity(epi)) return;
  threads = threads_for_work(static_cast<double>(rows) * cols * 4, threads <= 0 ? default_threads() : threads);
  parallel_for(rows, threads, [&](int64_t b, int64_t e) {
    t.epilogue_tile(y + b * ldy, ldy, e - b, cols, detail::tile_epilogue(epi, b, 0));
  });
}

void attention(const AttentionArgs& a, int threads, const KernelTable& t) {
  KILN_CHECK(a.B >= 0 && a.H >= 0 && a.Sq >= 0 && a.Sk >= 0 && a.D > 0 && a.Dv > 0,
             "attention: bad shape B=", a.B, " H=", a.H, " Sq=", a.Sq, " Sk=", a.Sk, " D=", a.D, " Dv=", a.Dv);
  if (a.B == 0 || a.H == 0 || a.Sq == 0) return;
  // Query tiles of up to 128 rows share each transposed key block; fewer rows when that is
  // what it takes to give every thread two tasks.
  if (threads <= 0) threads = default_threads();
  const double work = static_cast<double>(a.B) * a.H * a.Sq * a.Sk * (a.D + a.Dv);
  // Below 2^16 multiply-adds on one thread. GPT-2's decode step (one query against 128 cached
  // keys, 12 heads: 2^17.6) ran on one thread under the old 2^20 and read the keys and values
  // its cache Concat had just written on both cores, half of them from the other core: 0.33 ms
  // for the 12 layers at 2 threads against 0.29 at 1. Shared out by heads, as the Concat shares
  // them out, 0.16 ms (kiln profile, 2 threads, Zen 4).
  threads = work < (1 << 16) ? 1 : threads;
  int64_t tile = 128;
  while (tile > 4 && a.B * a.H * detail::ceil_div(a.Sq, tile) < 2 * threads) tile /= 2;
  const int64_t qtiles = detail::ceil_div(a.Sq, tile), tasks = a.B * a.H * qtiles;
  const size_t scratch_floats = attention_scratch_floats(tile, a.D, a.Dv);
  // Strides along B, H, S: the given ones, or a contiguous [B,H,S,width] tensor's.
  struct Strides {
    int64_t b, h, s;
  };
  auto strides_of = [&](const int64_t (&st)[3], int64_t S, int64_t width) {
    if (st[0] == 0 && st[1] == 0 && st[2] == 0) return Strides{a.H * S * width, S * width, width};
    return Strides{st[0], st[1], st[2]};
  };
  const Strides qs = strides_of(a.q_strides, a.Sq, a.D), ks = strides_of(a.k_strides, a.Sk, a.D),
                vs = strides_of(a.v_strides, a.Sk, a.Dv), ys = strides_of(a.y_strides, a.Sq, a.Dv);
  parallel_for(tasks, threads, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
    for (int64_t task = b; task < e; ++task) {
      const int64_t bh = task / qtiles, qt = task % qtiles, bi = bh / a.H, hi = bh % a.H;
      const int64_t i0 = qt * tile;
      AttentionTile at;
      at.rows = std::min(tile, a.Sq - i0);
      at.i0 = i0;
      at.q = a.q + bi * qs.b + hi * qs.h + i0 * qs.s;
      at.k = a.k + bi * ks.b + hi * ks.h;
      at.v = a.v + bi * vs.b + hi * vs.h;
      at.y = a.y + bi * ys.b + hi * ys.h + i0 * ys.s;
      at.q_rs = qs.s, at.k_rs = ks.s, at.v_rs = vs.s, at.y_rs = ys.s;
      if (a.mask) {
        at.mask = a.mask + bi * a.mask_strides[0] + hi * a.mask_strides[1] + i0 * a.mask_strides[2];
        at.mask_rs = a.mask_strides[2], at.mask_cs = a.mask_strides[3];
      }
      at.Sk = a.Sk, at.D = a.D, at.Dv = a.Dv;
      at.causal = a.causal;
      at.causal_offset = a.Sk - a.Sq;
      at.scale = a.scale;
      at.scratch = scratch.data();
      at.transpose = t.transpose;
      t.attention_tile(at);
    }
  });
}

}  // namespace kiln::kernels

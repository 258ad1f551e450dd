// MaxPool and AveragePool over 1-3 spatial dims (kernels run in the 3-D embedding).
// MaxPool may also return the flat index of each maximum (row- or column-major).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/kernels/parallel.h"
#include "window.h"

namespace kiln::ops {
namespace {

bool is_max(const Node& n) { return n.op == "MaxPool"; }

nn::Window pool_window(const Node& n, const std::vector<int64_t>& in) {
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
  KILN_CHECK(!kernel.empty(), n.describe(), ": attribute 'kernel_shape' is required");
  KILN_CHECK(kernel.size() == in.size(), n.describe(), ": kernel_shape has ", kernel.size(),
             " dims, input has ", in.size(), " spatial dims");
  return nn::forward_window(n, in, kernel, n.attr_i("ceil_mode", 0) != 0, is_max(n));
}

void infer_pool(InferContext& c) {
  const Shape& x = c.in_shape(0);
  if (!x.rank_known) {
    c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
    c.set_output(1, DType::i64, Shape::unknown_rank());
    return;
  }
  if (x.rank() < 3) c.fail(str_cat("input must have rank >= 3 (N, C, spatial...), got ", x.str()));
  nn::Window w = pool_window(c.node(), nn::spatial_sizes(x));
  std::vector<Dim> out = {x[0], x[1]};
  for (int64_t v : w.out) out.push_back(nn::dim_or_unknown(v));
  c.set_output(0, c.in_dtype(0), Shape(out));
  c.set_output(1, DType::i64, Shape(out));
}

Cost cost_pool(const CostContext& c) {
  // One compare or add per window element of each output.
  double k = static_cast<double>(numel_of(c.node.attr_ints("kernel_shape", {})));
  Cost r;
  r.flops = static_cast<double>(numel_of(c.out_dims[0])) * k;
  r.bytes_read = c.io_bytes_read();
  r.bytes_written = c.io_bytes_written();
  return r;
}

// Valid window taps [lo, hi) in one dim for output position o (taps are kernel indices).
inline void taps(int64_t o, int64_t s, int64_t pb, int64_t d, int64_t k, int64_t in, int64_t& lo, int64_t& hi) {
  int64_t start = o * s - pb;
  lo = start >= 0 ? 0 : (-start + d - 1) / d;
  hi = start + (k - 1) * d < in ? k : (in - 1 - start) / d + 1;
  if (hi < lo) hi = lo;
}

template <typename T>
void max_pool(const T* x, T* y, int64_t* idx, int64_t planes, const nn::Geom3& g, bool col_major, int threads) {
  const int64_t IS = g.in_size(), OS = g.out_size();
  kernels::parallel_for(planes, threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * IS;
      for (int64_t od = 0, o = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
            int64_t l0, h0, l1, h1, l2, h2;
            taps(od, g.s[0], g.pb[0], g.d[0], g.k[0], g.in[0], l0, h0);
            taps(oh, g.s[1], g.pb[1], g.d[1], g.k[1], g.in[1], l1, h1);
            taps(ow, g.s[2], g.pb[2], g.d[2], g.k[2], g.in[2], l2, h2);
            T best = std::numeric_limits<T>::lowest();
            int64_t bd = -1, bh = -1, bw = -1;
            for (int64_t kd = l0; kd < h0; ++kd) {
              int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
              for (int64_t kh = l1; kh < h1; ++kh) {
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                for (int64_t kw = l2; kw < h2; ++kw) {
                  int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                  T v = xp[(id * g.in[1] + ih) * g.in[2] + iw];
                  if (bd < 0 || v > best) best = v, bd = id, bh = ih, bw = iw;
                }
              }
            }
            y[p * OS + o] = best;
            if (idx) {
              // storage_order 1: the spatial dims are flattened column-major.
              int64_t local = col_major ? bd + (bh + bw * g.in[1]) * g.in[0] : (bd * g.in[1] + bh) * g.in[2] + bw;
              idx[p * OS + o] = bd < 0 ? -1 : p * IS + local;
            }
          }
    }
  });
}

template <typename T>
void avg_pool(const T* x, T* y, int64_t planes, const nn::Geom3& g, const int64_t* pe, bool include_pad,
              int threads) {
  const int64_t IS = g.in_size(), OS = g.out_size();
  kernels::parallel_for(planes, threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * IS;
      for (int64_t od = 0, o = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
            int64_t os[3] = {od, oh, ow}, lo[3], hi[3], count = 1;
            for (int i = 0; i < 3; ++i) {
              taps(os[i], g.s[i], g.pb[i], g.d[i], g.k[i], g.in[i], lo[i], hi[i]);
              // With count_include_pad the divisor counts the taps inside the padded extent
              // [-pb, in + pe), shifted here to [0, in + pb + pe); taps a ceil_mode window
              // reaches past that never count.
              int64_t cl = lo[i], ch = hi[i];
              if (include_pad) taps(os[i], g.s[i], 0, g.d[i], g.k[i], g.in[i] + g.pb[i] + pe[i], cl, ch);
              count *= ch - cl;
            }
            double sum = 0;
            for (int64_t kd = lo[0]; kd < hi[0]; ++kd) {
              int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
              for (int64_t kh = lo[1]; kh < hi[1]; ++kh) {
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                const T* xr = xp + (id * g.in[1] + ih) * g.in[2];
                for (int64_t kw = lo[2]; kw < hi[2]; ++kw) sum += xr[ow * g.s[2] - g.pb[2] + kw * g.d[2]];
              }
            }
            y[p * OS + o] = count > 0 ? static_cast<T>(sum / static_cast<double>(count)) : T(0);
          }
    }
  });
}

void pool_kernel(KernelContext& c) {
  const Node& n = c.node();
  // Set by lowering for the compiled runtime's kernels (channel-blocked or pixel-major
  // activations): these loops read and write NCHW.
  if (n.attr_i("x_blocked", 0) != 0 || n.attr_i("y_blocked", 0) != 0 || n.attr_i("y_nhwc", 0) != 0)
    c.fail("a channel-blocked or pixel-major pool runs only on the compiled kernels; recompile the model");
  DType dt = c.input(0).dtype();
  Tensor X = nn::compute_input(c.input(0));
  KILN_CHECK(X.rank() >= 3 && X.rank() <= 5, n.describe(), ": input ", dims_str(X.dims()),
             " must have 1 to 3 spatial dims");
  std::vector<int64_t> in(X.dims().begin() + 2, X.dims().end());
  nn::Window w = pool_window(n, in);
  nn::Geom3 g = nn::to_geom3(in, w);
  std::vector<int64_t> ydims = {X.dim(0), X.dim(1)};
  ydims.insert(ydims.end(), w.out.begin(), w.out.end());
  int64_t planes = X.dim(0) * X.dim(1);
  Tensor Y(X.dtype(), ydims);
  if (is_max(n)) {
    int64_t storage = n.attr_i("storage_order", 0);
    KILN_CHECK(storage == 0 || storage == 1, n.describe(), ": storage_order must be 0 or 1");
    int64_t* idx = nullptr;
    if (c.has_output(1)) idx = c.alloc_output(1, DType::i64, ydims).data<int64_t>();
    KILN_DISPATCH_NUMERIC(X.dtype(), n.describe(),
                          max_pool<T>(X.data<T>(), Y.data<T>(), idx, planes, g, storage == 1, c.threads()));
  } else {
    std::vector<int64_t> pe3(3, 0);
    for (size_t i = 0; i < in.size(); ++i) pe3[3 - in.size() + i] = w.pad_end[i];
    bool include_pad = n.attr_i("count_include_pad", 0) != 0;
    KILN_DISPATCH_FLOAT(X.dtype(), n.describe(),
                        avg_pool<T>(X.data<T>(), Y.data<T>(), planes, g, pe3.data(), include_pad, c.threads()));
  }
  nn::set_result(c, 0, Y, dt);
}

}  // namespace

OpDef def_MaxPool() {
  return {.name = "MaxPool",
          .since = 1,
          .min_inputs = 1,
          .max_inputs = 1,
          .min_outputs = 1,
          .max_outputs = 2,
          .attrs = {{"auto_pad", AttrKind::String},
                    {"ceil_mode", AttrKind::Int},
                    {"dilations", AttrKind::Ints},
                    {"kernel_shape", AttrKind::Ints, true},
                    {"pads", AttrKind::Ints},
                    {"storage_order", AttrKind::Int},
                    {"strides", AttrKind::Ints}},
          .infer = infer_pool,
          .cost = cost_pool,
          .kernel = pool_kernel,
          .doc = "maximum over each sliding window; optional flat Indices of the maxima"};
}

OpDef def_AveragePool() {
  return {.name = "AveragePool",
          .since = 1,
          .min_inputs = 1,
          .max_inputs = 1,
          .attrs = {{"auto_pad", AttrKind::String},
                    {"ceil_mode", AttrKind::Int},
                    {"count_include_pad", AttrKind::Int},
                    {"kernel_shape", AttrKind::Ints, true},
                    {"pads", AttrKind::Ints},
                    {"strides", AttrKind::Ints}},
          .infer = infer_pool,
          .cost = cost_pool,
          .kernel = pool_kernel,
          .doc = "mean over each sliding window, with or without the padding in the divisor"};
}

}  // namespace kiln::ops

// ConvTranspose: the gradient-of-conv ("deconvolution"). Per (image, group) the reference
// kernel computes col = W_g^T * X_g with SGEMM and scatters col into Y (col2im).
#include <algorithm>

#include "window.h"

namespace kiln::ops {
namespace {

// Padding and output spatial sizes (-1 where unknown) of a ConvTranspose node.
struct TransposeGeom {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end, out;
};

TransposeGeom transpose_geom(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) {
  size_t r = in.size();
  TransposeGeom t;
  t.kernel = kernel;
  t.strides = nn::spatial_attr(n, "strides", r, 1);
  t.dilations = nn::spatial_attr(n, "dilations", r, 1);
  std::vector<int64_t> out_pad = nn::spatial_attr(n, "output_padding", r, 0);
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  KILN_CHECK(pads.size() == 2 * r, n.describe(), ": attribute 'pads' has ", pads.size(), " entries, expected ", 2 * r);
  std::vector<int64_t> out_shape = n.attr_ints("output_shape", {});
  // output_shape may name all dims (N, C, spatial...); only the spatial ones matter.
  if (out_shape.size() > r) out_shape.erase(out_shape.begin(), out_shape.end() - r);
  KILN_CHECK(out_shape.empty() || out_shape.size() == r, n.describe(), ": output_shape has ", out_shape.size(),
             " entries, expected ", r);
  std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  KILN_CHECK(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER",
             n.describe(), ": unknown auto_pad '", auto_pad, "'");
  t.pad_begin.assign(pads.begin(), pads.begin() + r);
  t.pad_end.assign(pads.begin() + r, pads.end());
  t.out.assign(r, -1);
  for (size_t i = 0; i < r; ++i) {
    KILN_CHECK(t.kernel[i] >= 1 && t.strides[i] >= 1 && t.dilations[i] >= 1, n.describe(),
               ": kernel, strides and dilations must be >= 1");
    if (in[i] < 0) continue;
    int64_t full = t.strides[i] * (in[i] - 1) + out_pad[i] + (t.kernel[i] - 1) * t.dilations[i] + 1;
    int64_t want = -1;
    if (!out_shape.empty()) want = out_shape[i];
    else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") want = in[i] * t.strides[i];
    if (want >= 0) {
      int64_t total = full - want;
      KILN_CHECK(total >= 0, n.describe(), ": output_shape ", want, " is larger than the full output ", full);
      if (auto_pad == "SAME_UPPER") {
        t.pad_begin[i] = total / 2, t.pad_end[i] = total - total / 2;
      } else {
        t.pad_begin[i] = total - total / 2, t.pad_end[i] = total / 2;
      }
      t.out[i] = want;
    } else {
      if (auto_pad == "VALID") t.pad_begin[i] = t.pad_end[i] = 0;
      t.out[i] = full - t.pad_begin[i] - t.pad_end[i];
      KILN_CHECK(t.out[i] >= 1, n.describe(), ": pads leave an empty output");
    }
  }
  return t;
}

void infer_conv_transpose(InferContext& c) {
  const Shape& x = c.in_shape(0);
  const Shape& w = c.in_shape(1);
  if (!x.rank_known || !w.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  size_t rank = x.rank();
  if (rank < 3 || w.rank() != rank) c.fail(str_cat("X ", x.str(), " and W ", w.str(), " must have equal rank >= 3"));
  int64_t group = c.node().attr_i("group", 1);
  if (group < 1) c.fail("group must be >= 1");
  if (x[1].is_static() && w[0].is_static() && x[1].value != w[0].value)
    c.fail(str_cat("channel mismatch: X has ", x[1].value, " channels, W has ", w[0].value));
  std::vector<Dim> out(rank, Dim::unknown());
  out[0] = x[0];
  if (w[1].is_static()) out[1] = Dim(w[1].value * group);
  std::vector<int64_t> kernel = c.node().attr_ints("kernel_shape", nn::spatial_sizes(w));
  if (kernel.size() != rank - 2) c.fail("kernel_shape does not match the input rank");
  if (std::all_of(kernel.begin(), kernel.end(), [](int64_t v) { return v >= 0; })) {
    TransposeGeom t = transpose_geom(c.node(), nn::spatial_sizes(x), kernel);
    for (size_t i = 0; i < rank - 2; ++i) out[i + 2] = nn::dim_or_unknown(t.out[i]);
  }
  c.set_output(0, c.in_dtype(0), Shape(out));
}

Cost cost_conv_transpose(const CostContext& c) {
  // Every input element meets every weight of its group once.
  const auto& x = c.in_dims[0];
  const auto& w = c.in_dims[1];
  double per_in = w[0] > 0 ? static_cast<double>(numel_of(w)) / static_cast<double>(w[0]) : 0.0;
  Cost k;
  k.flops = 2.0 * static_cast<double>(numel_of(x)) * per_in;
  if (c.node.input(2)) k.flops += static_cast<double>(numel_of(c.out_dims[0]));
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

template <typename T>
Tensor conv_transpose_impl(const KernelContext& c, const Tensor& X, const Tensor& W, const Tensor* B) {
  const Node& n = c.node();
  KILN_CHECK(X.rank() >= 3 && X.rank() <= 5 && W.rank() == X.rank(), n.describe(), ": X ", dims_str(X.dims()),
             " and W ", dims_str(W.dims()), " must have equal rank 3..5");
  int64_t N = X.dim(0), C = X.dim(1), group = n.attr_i("group", 1);
  KILN_CHECK(group >= 1 && C == W.dim(0) && C % group == 0, n.describe(), ": channel mismatch: X has ", C,
             " channels, W has ", W.dim(0), " (group ", group, ")");
  int64_t Mg = W.dim(1), M = Mg * group, Cg = C / group;
  if (B) KILN_CHECK(B->rank() == 1 && B->dim(0) == M, n.describe(), ": bias ", dims_str(B->dims()), " must be [", M, "]");
  std::vector<int64_t> in(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> wk(W.dims().begin() + 2, W.dims().end());
  KILN_CHECK(n.attr_ints("kernel_shape", wk) == wk, n.describe(), ": kernel_shape does not match W");
  TransposeGeom t = transpose_geom(n, in, wk);
  // col2im walks the forward conv whose input is Y and whose output grid is X.
  nn::Window fw{t.kernel, t.strides, t.dilations, t.pad_begin, t.pad_end, in};
  nn::Geom3 g = nn::to_geom3(t.out, fw);
  std::vector<int64_t> ydims = {N, M};
  ydims.insert(ydims.end(), t.out.begin(), t.out.end());
  Tensor Y(X.dtype(), ydims);
  int64_t IS = g.out_size(), OS = g.in_size(), K = g.k_size();
  std::vector<T> col(Mg * K * IS);
  const T* x = X.data<T>();
  const T* w = W.data<T>();
  T* y = Y.data<T>();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t gi = 0; gi < group; ++gi) {
      nn::matmul<T>(true, false, Mg * K, IS, Cg, w + gi * Cg * Mg * K, x + (b * C + gi * Cg) * IS, col.data(), false,
                    c.threads());
      nn::col2im(col.data(), Mg, g, y + (b * M + gi * Mg) * OS);
    }
  if (B) nn::add_channel_bias(y, B->data<T>(), N, M, OS);
  return Y;
}

void conv_transpose_kernel(KernelContext& c) {
  DType dt = c.input(0).dtype();
  nn::ConvOperands o = nn::conv_operands(c);
  KILN_DISPATCH_FLOAT(o.X.dtype(), c.node().describe(),
                      nn::set_result(c, 0, conv_transpose_impl<T>(c, o.X, o.W, o.bias()), dt));
}

}  // namespace

OpDef def_ConvTranspose() {
  return {.name = "ConvTranspose",
          .since = 1,
          .min_inputs = 2,
          .max_inputs = 3,
          .attrs = {{"auto_pad", AttrKind::String},
                    {"dilations", AttrKind::Ints},
                    {"group", AttrKind::Int},
                    {"kernel_shape", AttrKind::Ints},
                    {"output_padding", AttrKind::Ints},
                    {"output_shape", AttrKind::Ints},
                    {"pads", AttrKind::Ints},
                    {"strides", AttrKind::Ints}},
          .infer = infer_conv_transpose,
          .cost = cost_conv_transpose,
          .kernel = conv_transpose_kernel,
          .doc = "transposed convolution of X[N,C,...] with W[C,M/group,k...] plus optional bias B[M]"};
}

}  // namespace kiln::ops

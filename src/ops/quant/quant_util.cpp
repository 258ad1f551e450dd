#include "quant_util.h"

#include <algorithm>

namespace kiln::ops::quant {

QRange qrange(const Node& n, DType dt, const std::string& what) {
  if (dt == DType::u8) return {0, 255};
  if (dt == DType::i8) return {-128, 127};
  throw Error(str_cat(n.describe(), ": ", what, " must be u8 or i8, got ", dtype_name(dt)));
}

void store_q(Tensor& t, int64_t i, int32_t v) {
  if (t.dtype() == DType::u8) t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  else t.data<int8_t>()[i] = static_cast<int8_t>(v);
}

int32_t load_i32(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::u8: return t.data<uint8_t>()[i];
    case DType::i8: return t.data<int8_t>()[i];
    case DType::i32: return t.data<int32_t>()[i];
    default: throw Error(str_cat("quantized tensor: unsupported dtype ", dtype_name(t.dtype())));
  }
}

void check_zp_dtype(const Node& n, const Tensor& zp, DType data, const std::string& what) {
  KILN_CHECK(zp.dtype() == data, n.describe(), ": ", what, " is ", dtype_name(zp.dtype()),
             " but the data it belongs to is ", dtype_name(data), " (they must match)");
}

Param read_param(const Node& n, const Tensor* t, int64_t count, const std::string& what, double dflt) {
  Param p;
  if (t == nullptr) {
    p.values = {dflt};
    return p;
  }
  KILN_CHECK(t->numel() == 1 || (t->rank() == 1 && t->numel() == count), n.describe(), ": ", what,
             " must have one element or shape [", count, "], got ", dims_str(t->dims()));
  for (int64_t i = 0; i < t->numel(); ++i) p.values.push_back(t->as_double(i));
  return p;
}

void gemm_i32(int64_t M, int64_t N, int64_t K, const int32_t* a, const int32_t* bt, int32_t* c) {
  for (int64_t m = 0; m < M; ++m) {
    const int32_t* ar = a + m * K;
    for (int64_t n = 0; n < N; ++n) {
      const int32_t* br = bt + n * K;
      int64_t acc = 0;  // wide, so no signed overflow; wrapped to int32 below like an i32 accumulator
      for (int64_t k = 0; k < K; ++k) acc += static_cast<int64_t>(ar[k]) * br[k];
      c[m * N + n] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(acc)));
    }
  }
}

// ---- convolution -------------------------------------------------------------------

ConvGeom conv_geometry(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  KILN_CHECK(x.size() >= 3, n.describe(), ": input x must be [N, C, spatial...], got ", dims_str(x));
  KILN_CHECK(w.size() == x.size(), n.describe(), ": weight ", dims_str(w), " and input ", dims_str(x),
             " must have the same rank");
  size_t nsp = x.size() - 2;
  ConvGeom g;
  g.batch = x[0];
  g.in_ch = x[1];
  g.out_ch = w[0];
  g.group = n.attr_i("group", 1);
  KILN_CHECK(g.group >= 1 && g.in_ch % g.group == 0 && g.out_ch % g.group == 0, n.describe(), ": group ", g.group,
             " must divide input channels ", g.in_ch, " and output channels ", g.out_ch);
  KILN_CHECK(w[1] == g.in_ch / g.group, n.describe(), ": weight ", dims_str(w), " needs ", g.in_ch / g.group,
             " channels per group (input ", dims_str(x), ", group ", g.group, ")");
  g.kernel.assign(w.begin() + 2, w.end());
  auto ks = n.attr_ints("kernel_shape", g.kernel);
  KILN_CHECK(ks == g.kernel, n.describe(), ": kernel_shape ", dims_str(ks), " does not match weight ", dims_str(w));
  g.stride = n.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  g.dil = n.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  KILN_CHECK(g.stride.size() == nsp && g.dil.size() == nsp && pads.size() == 2 * nsp, n.describe(),
             ": strides/dilations need ", nsp, " entries and pads ", 2 * nsp);
  std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  g.in.assign(x.begin() + 2, x.end());
  for (size_t d = 0; d < nsp; ++d) {
    KILN_CHECK(g.stride[d] >= 1 && g.dil[d] >= 1 && pads[d] >= 0 && pads[d + nsp] >= 0 && g.kernel[d] >= 1,
               n.describe(), ": strides, dilations and kernel must be >= 1 and pads >= 0");
    int64_t dk = (g.kernel[d] - 1) * g.dil[d] + 1;
    int64_t in = g.in[d], s = g.stride[d], out = 0, pb = 0;
    if (auto_pad == "NOTSET" || auto_pad == "VALID") {
      int64_t pe = 0;
      if (auto_pad == "NOTSET") pb = pads[d], pe = pads[d + nsp];
      KILN_CHECK(in + pb + pe >= dk, n.describe(), ": kernel (dilated extent ", dk, ") is larger than the padded input ",
                 in + pb + pe, " in spatial dim ", d);
      out = (in + pb + pe - dk) / s + 1;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + dk - in);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      throw Error(str_cat(n.describe(), ": unknown auto_pad '", auto_pad, "'"));
    }
    g.out.push_back(out);
    g.pad_begin.push_back(pb);
  }
  return g;
}

Shape conv_output_shape(InferContext& c, size_t xi, size_t wi) {
  const Shape& x = c.in_shape(xi);
  const Shape& w = c.in_shape(wi);
  if (!x.rank_known) return Shape::unknown_rank();
  if (x.rank() < 3) c.fail(str_cat("input x must be [N, C, spatial...], got ", x.str()));
  if (x.is_static() && w.is_static()) {
    ConvGeom g = conv_geometry(c.node(), x.static_dims(), w.static_dims());
    std::vector<int64_t> d{g.batch, g.out_ch};
    d.insert(d.end(), g.out.begin(), g.out.end());
    return Shape::of(d);
  }
  // A symbolic batch alone (int8 models exported with a dynamic N): the spatial dims are those
  // of batch 1, the batch dim passes through.
  bool rest_static = w.is_static();
  for (size_t i = 1; i < x.rank(); ++i) rest_static = rest_static && x.dims[i].is_static();
  if (rest_static) {
    std::vector<int64_t> one = {1};
    for (size_t i = 1; i < x.rank(); ++i) one.push_back(x.dims[i].value);
    ConvGeom g = conv_geometry(c.node(), one, w.static_dims());
    Shape out;
    out.dims.push_back(x.dims[0]);
    out.dims.push_back(Dim(g.out_ch));
    for (int64_t o : g.out) out.dims.push_back(Dim(o));
    return out;
  }
  Shape out;
  out.dims.push_back(x.dims[0]);
  out.dims.push_back(w.rank_known && w.rank() > 0 ? w.dims[0] : Dim::unknown());
  for (size_t i = 2; i < x.rank(); ++i) out.dims.push_back(Dim::unknown());
  return out;
}

void im2col(const ConvGeom& geo, const int32_t* x, int64_t img, int64_t g, std::vector<int32_t>& col) {
  size_t nsp = geo.in.size();
  int64_t cg = geo.in_ch / geo.group, ks = geo.kernel_size(), kc = cg * ks, P = geo.out_size();
  col.assign(static_cast<size_t>(P * kc), 0);
  std::vector<int64_t> o(nsp), k(nsp);
  for (int64_t p = 0; p < P; ++p) {
    for (int64_t r = p, d = nsp - 1; d >= 0; --d) o[d] = r % geo.out[d], r /= geo.out[d];
    for (int64_t t = 0; t < ks; ++t) {
      for (int64_t r = t, d = nsp - 1; d >= 0; --d) k[d] = r % geo.kernel[d], r /= geo.kernel[d];
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < nsp && inside; ++d) {
        int64_t i = o[d] * geo.stride[d] - geo.pad_begin[d] + k[d] * geo.dil[d];
        inside = i >= 0 && i < geo.in[d];
        off = off * geo.in[d] + i;
      }
      if (!inside) continue;  // padding reads the zero point, which is 0 after the shift
      for (int64_t c = 0; c < cg; ++c)
        col[p * kc + c * ks + t] = x[(img * geo.in_ch + g * cg + c) * geo.in_size() + off];
    }
  }
}

std::vector<int32_t> conv_i32(const ConvGeom& geo, const std::vector<int32_t>& x, const std::vector<int32_t>& w) {
  int64_t P = geo.out_size(), mg = geo.out_ch / geo.group;
  int64_t kc = geo.in_ch / geo.group * geo.kernel_size();
  std::vector<int32_t> out(static_cast<size_t>(geo.batch * geo.out_ch * P));
  std::vector<int32_t> col;
  for (int64_t img = 0; img < geo.batch; ++img)
    for (int64_t g = 0; g < geo.group; ++g) {
      im2col(geo, x.data(), img, g, col);
      gemm_i32(mg, P, kc, w.data() + g * mg * kc, col.data(), out.data() + (img * geo.out_ch + g * mg) * P);
    }
  return out;
}

Cost cost_conv(const CostContext& c, size_t xi, size_t wi) {
  Cost k = cost_data_movement(c);
  const auto& w = c.in_dims[wi];
  double per_out = w.empty() || w[0] == 0 ? 0 : static_cast<double>(numel_of(w)) / static_cast<double>(w[0]);
  k.flops = 2.0 * static_cast<double>(numel_of(c.out_dims[0])) * per_out;
  return k;
}

// ---- matmul --------------------------------------------------------------------------

namespace {
// Flat index into `sub` (right-aligned, broadcast dims of size 1) for flat index i over `full`.
int64_t map_batch(int64_t i, const std::vector<int64_t>& full, const std::vector<int64_t>& sub) {
  int64_t idx = 0, stride = 1;
  int64_t s = static_cast<int64_t>(sub.size()) - 1;
  for (int64_t d = static_cast<int64_t>(full.size()) - 1; d >= 0; --d, --s) {
    int64_t coord = i % full[d];
    i /= full[d];
    if (s < 0) continue;
    if (sub[s] != 1) idx += coord * stride;
    stride *= sub[s];
  }
  return idx;
}
}  // namespace

int64_t MatMulGeom::a_index(int64_t i) const { return map_batch(i, batch, a_batch); }
int64_t MatMulGeom::b_index(int64_t i) const { return map_batch(i, batch, b_batch); }

MatMulGeom matmul_geometry(const Node& n, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  KILN_CHECK(!a.empty() && !b.empty(), n.describe(), ": matmul operands must have rank >= 1, got ", dims_str(a),
             " and ", dims_str(b));
  std::vector<int64_t> ad = a, bd = b;
  if (a.size() == 1) ad.insert(ad.begin(), 1);
  if (b.size() == 1) bd.push_back(1);
  MatMulGeom g;
  g.M = ad[ad.size() - 2];
  g.K = ad.back();
  g.N = bd.back();
  KILN_CHECK(bd[bd.size() - 2] == g.K, n.describe(), ": matmul shapes ", dims_str(a), " and ", dims_str(b),
             " do not agree on the inner dim");
  g.a_batch.assign(ad.begin(), ad.end() - 2);
  g.b_batch.assign(bd.begin(), bd.end() - 2);
  g.batch = broadcast_dims(g.a_batch, g.b_batch, n);
  g.out = g.batch;
  if (a.size() != 1) g.out.push_back(g.M);
  if (b.size() != 1) g.out.push_back(g.N);
  return g;
}

Shape matmul_output_shape(InferContext& c, size_t ai, size_t bi) {
  Shape a = c.in_shape(ai), b = c.in_shape(bi);
  if (!a.rank_known || !b.rank_known) return Shape::unknown_rank();
  if (a.rank() == 0 || b.rank() == 0) c.fail(str_cat("matmul operands must have rank >= 1, got ", a.str(), " and ", b.str()));
  bool a1 = a.rank() == 1, b1 = b.rank() == 1;
  if (a1) a.dims.insert(a.dims.begin(), Dim(1));
  if (b1) b.dims.push_back(Dim(1));
  const Dim& ka = a.dims.back();
  const Dim& kb = b.dims[b.rank() - 2];
  if (ka.is_static() && kb.is_static() && ka != kb)
    c.fail(str_cat("matmul shapes ", c.in_shape(ai).str(), " and ", c.in_shape(bi).str(), " do not agree on the inner dim"));
  Shape ab(std::vector<Dim>(a.dims.begin(), a.dims.end() - 2));
  Shape bb(std::vector<Dim>(b.dims.begin(), b.dims.end() - 2));
  auto batch = broadcast_shapes(ab, bb);
  if (!batch) c.fail(str_cat("matmul batch dims of ", c.in_shape(ai).str(), " and ", c.in_shape(bi).str(), " do not broadcast"));
  Shape out = *batch;
  if (!a1) out.dims.push_back(a.dims[a.rank() - 2]);
  if (!b1) out.dims.push_back(b.dims.back());
  return out;
}

Cost cost_matmul(const CostContext& c, size_t ai, size_t bi) {
  Cost k = cost_data_movement(c);
  const auto& a = c.in_dims[ai];
  double K = a.empty() ? 0 : static_cast<double>(a.back());
  k.flops = 2.0 * static_cast<double>(numel_of(c.out_dims[0])) * K;
  return k;
}

MatZp read_mat_zp(const Node& n, const Tensor* zp, const std::vector<int64_t>& operand, const MatMulGeom& geo,
                  bool is_a, DType data, const std::string& what) {
  MatZp z;
  if (zp == nullptr) {
    z.values = {0};
    return z;
  }
  check_zp_dtype(n, *zp, data, what);
  for (int64_t i = 0; i < zp->numel(); ++i) z.values.push_back(load_i32(*zp, i));
  if (zp->numel() == 1) return z;
  int64_t len = is_a ? geo.M : geo.N;
  if (zp->rank() == 1 && zp->numel() == len) return z;
  // N-D form: the operand's dims with the reduced dim (K) set to 1.
  std::vector<int64_t> want = operand;
  if (!want.empty()) want[is_a ? want.size() - 1 : (want.size() >= 2 ? want.size() - 2 : 0)] = 1;
  KILN_CHECK(operand.size() >= 2 && zp->dims() == want, n.describe(), ": ", what, " has shape ",
             dims_str(zp->dims()), "; it must have one element, shape [", len, "] or shape ", dims_str(want));
  z.per_batch = len;
  return z;
}

namespace {
template <typename Fn>
void dispatch_q(const Tensor& t, Fn fn) {
  if (t.dtype() == DType::u8) fn(t.data<uint8_t>());
  else if (t.dtype() == DType::i8) fn(t.data<int8_t>());
  else throw Error(str_cat("quantized matmul operand: unsupported dtype ", dtype_name(t.dtype())));
}
}  // namespace

void shifted_a(const Tensor& a, const MatMulGeom& geo, int64_t ab, const MatZp& zp, std::vector<int32_t>& out) {
  out.resize(static_cast<size_t>(geo.M * geo.K));
  dispatch_q(a, [&](const auto* p) {
    const auto* base = p + ab * geo.M * geo.K;
    for (int64_t m = 0; m < geo.M; ++m) {
      int32_t z = zp.get(ab, m);
      for (int64_t k = 0; k < geo.K; ++k) out[m * geo.K + k] = static_cast<int32_t>(base[m * geo.K + k]) - z;
    }
  });
}

void shifted_bt(const Tensor& b, const MatMulGeom& geo, int64_t bb, const MatZp& zp, std::vector<int32_t>& out) {
  out.resize(static_cast<size_t>(geo.N * geo.K));
  dispatch_q(b, [&](const auto* p) {
    const auto* base = p + bb * geo.K * geo.N;
    for (int64_t n = 0; n < geo.N; ++n) {
      int32_t z = zp.get(bb, n);
      for (int64_t k = 0; k < geo.K; ++k) out[n * geo.K + k] = static_cast<int32_t>(base[k * geo.N + n]) - z;
    }
  });
}

}  // namespace kiln::ops::quant

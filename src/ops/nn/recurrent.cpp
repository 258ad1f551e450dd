#include "recurrent.h"

#include <algorithm>
#include <cmath>

#include "kiln/kernels/gemm.h"

namespace kiln::ops::nn {

float Activation::operator()(float x) const {
  // Names and formulas of the ONNX activation functions.
  if (name == "Sigmoid") return 1.f / (1.f + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(0.f, x);
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "ThresholdedRelu") return x > alpha ? x : 0.f;
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  if (name == "HardSigmoid") return std::max(0.f, std::min(1.f, alpha * x + beta));
  if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.f);
  if (name == "Softsign") return x / (1.f + std::fabs(x));
  if (name == "Softplus") return std::log1p(std::exp(x));
  return alpha * x + beta;  // Affine (names are validated in read_activations)
}

std::vector<Activation> read_activations(const Node& n, int64_t dirs, const std::vector<std::string>& dflt) {
  std::vector<std::string> names;
  if (const Attribute* a = n.find_attr("activations")) names = a->strings();
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  KILN_CHECK(names.size() == dflt.size() * static_cast<size_t>(dirs), n.describe(), ": 'activations' has ",
             names.size(), " entries, expected ", dflt.size() * dirs);
  std::vector<float> alphas = n.attr_floats("activation_alpha", {}), betas = n.attr_floats("activation_beta", {});
  size_t ai = 0, bi = 0;
  std::vector<Activation> r;
  for (const std::string& s : names) {
    Activation a{s};
    // Defaults as in the standalone ONNX ops; explicit values are consumed in order.
    float da = 0, db = 0;
    bool uses_a = true, uses_b = false;
    if (s == "LeakyRelu") da = 0.01f;
    else if (s == "ThresholdedRelu" || s == "Elu") da = 1.f;
    else if (s == "ScaledTanh") da = 1.f, db = 1.f, uses_b = true;
    else if (s == "HardSigmoid") da = 0.2f, db = 0.5f, uses_b = true;
    else if (s == "Affine") da = 1.f, db = 0.f, uses_b = true;
    else {
      uses_a = false;
      KILN_CHECK(s == "Sigmoid" || s == "Tanh" || s == "Relu" || s == "Softsign" || s == "Softplus", n.describe(),
                 ": unknown activation '", s, "'");
    }
    a.alpha = uses_a && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = uses_b && bi < betas.size() ? betas[bi++] : db;
    r.push_back(a);
  }
  return r;
}

int64_t num_directions(const Node& n) {
  std::string d = n.attr_s("direction", "forward");
  KILN_CHECK(d == "forward" || d == "reverse" || d == "bidirectional", n.describe(), ": unknown direction '", d, "'");
  return d == "bidirectional" ? 2 : 1;
}

void infer_recurrent(InferContext& c, int64_t gates) {
  const Node& n = c.node();
  if (n.attr_i("layout", 0) != 0) c.fail("layout=1 (batch-major) is not supported");
  int64_t dirs = num_directions(n);
  const Shape& x = c.in_shape(0);
  const Shape& r = c.in_shape(2);
  Dim seq = Dim::unknown(), batch = Dim::unknown(), hidden = Dim::unknown();
  if (x.rank_known) {
    if (x.rank() != 3) c.fail(str_cat("X must be [seq, batch, input], got ", x.str()));
    seq = x[0], batch = x[1];
  }
  int64_t hs = n.attr_i("hidden_size", -1);
  if (hs > 0) hidden = Dim(hs);
  else if (r.rank_known && r.rank() == 3) hidden = r[2];
  const Shape& w = c.in_shape(1);
  if (w.rank_known && (w.rank() != 3 || (w[0].is_static() && w[0].value != dirs)))
    c.fail(str_cat("W ", w.str(), " must be [", dirs, ", ", gates, "*hidden, input]"));
  if (w.rank_known && hidden.is_static() && w[1].is_static() && w[1].value != gates * hidden.value)
    c.fail(str_cat("W ", w.str(), " does not have ", gates, " x hidden_size ", hidden.value, " rows"));
  if (w.rank_known && x.rank_known && w[2].is_static() && x[2].is_static() && w[2].value != x[2].value)
    c.fail(str_cat("input size mismatch: X ", x.str(), ", W ", w.str()));
  DType dt = c.in_dtype(0);
  c.set_output(0, dt, Shape(std::vector<Dim>{seq, Dim(dirs), batch, hidden}));
  for (size_t o = 1; o < c.num_outputs(); ++o) c.set_output(o, dt, Shape(std::vector<Dim>{Dim(dirs), batch, hidden}));
}

Cost cost_recurrent(const CostContext& c, int64_t gates) {
  const auto& x = c.in_dims[0];
  const auto& w = c.in_dims[1];
  double seq = static_cast<double>(x[0]), batch = static_cast<double>(x[1]), input = static_cast<double>(x[2]);
  double dirs = static_cast<double>(w[0]), rows = static_cast<double>(w[1]), hidden = rows / static_cast<double>(gates);
  Cost k;
  // Input and recurrent products per step, plus a handful of elementwise ops per gate.
  k.flops = dirs * seq * (2 * batch * rows * (input + hidden) + 8 * batch * rows);
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

bool RecurrentSetup::reverse(int64_t d) const { return direction == "reverse" || (direction == "bidirectional" && d == 1); }

std::vector<float> RecurrentSetup::xw(int64_t d, int threads) const {
  int64_t G = gates * hidden;
  std::vector<float> out(seq * batch * G);
  const float* b = B.data<float>() + d * 2 * G;
  for (int64_t r = 0; r < seq * batch; ++r)
    for (int64_t j = 0; j < G; ++j) out[r * G + j] = b[j] + b[G + j];
  kernels::sgemm(false, true, seq * batch, G, input, 1.f, X.data<float>(), input, W.data<float>() + d * G * input,
                 input, 1.f, out.data(), G, threads);
  return out;
}

RecurrentSetup setup_recurrent(const KernelContext& c, int64_t gates) {
  const Node& n = c.node();
  RecurrentSetup s;
  KILN_CHECK(n.attr_i("layout", 0) == 0, n.describe(), ": layout=1 (batch-major) is not supported");
  s.dtype = c.input(0).dtype();
  s.gates = gates;
  s.direction = n.attr_s("direction", "forward");
  s.dirs = num_directions(n);
  auto f32 = [](const Tensor& t) { return t.dtype() == DType::f32 ? t : t.cast(DType::f32); };
  s.X = f32(c.input(0));
  s.W = f32(c.input(1));
  s.R = f32(c.input(2));
  KILN_CHECK(s.X.rank() == 3, n.describe(), ": X ", dims_str(s.X.dims()), " must be [seq, batch, input]");
  s.seq = s.X.dim(0), s.batch = s.X.dim(1), s.input = s.X.dim(2);
  KILN_CHECK(s.R.rank() == 3, n.describe(), ": R ", dims_str(s.R.dims()), " must be [dirs, gates*hidden, hidden]");
  s.hidden = n.attr_i("hidden_size", s.R.dim(2));
  int64_t G = gates * s.hidden;
  KILN_CHECK(s.W.dims() == std::vector<int64_t>({s.dirs, G, s.input}), n.describe(), ": W ", dims_str(s.W.dims()),
             " must be [", s.dirs, ",", G, ",", s.input, "]");
  KILN_CHECK(s.R.dims() == std::vector<int64_t>({s.dirs, G, s.hidden}), n.describe(), ": R ", dims_str(s.R.dims()),
             " must be [", s.dirs, ",", G, ",", s.hidden, "]");
  if (c.has_input(3)) {
    s.B = f32(c.input(3));
    KILN_CHECK(s.B.dims() == std::vector<int64_t>({s.dirs, 2 * G}), n.describe(), ": B ", dims_str(s.B.dims()),
               " must be [", s.dirs, ",", 2 * G, "]");
  } else {
    s.B = Tensor(DType::f32, {s.dirs, 2 * G});
  }
  s.lens.assign(s.batch, s.seq);
  if (c.has_input(4)) {
    std::vector<int64_t> l = c.input(4).to_int64_vector();
    KILN_CHECK(static_cast<int64_t>(l.size()) == s.batch, n.describe(), ": sequence_lens has ", l.size(),
               " entries for batch ", s.batch);
    for (int64_t v : l)
      KILN_CHECK(v >= 0 && v <= s.seq, n.describe(), ": sequence length ", v, " is outside [0, ", s.seq, "]");
    s.lens = l;
  }
  if (c.has_input(5)) {
    s.init_h = f32(c.input(5));
    KILN_CHECK(s.init_h.dims() == std::vector<int64_t>({s.dirs, s.batch, s.hidden}), n.describe(), ": initial_h ",
               dims_str(s.init_h.dims()), " must be [", s.dirs, ",", s.batch, ",", s.hidden, "]");
  } else {
    s.init_h = Tensor(DType::f32, {s.dirs, s.batch, s.hidden});
  }
  s.clip = n.has_attr("clip") ? n.attr_f("clip", 0.f) : 0.f;
  KILN_CHECK(s.clip >= 0, n.describe(), ": clip must be positive");
  return s;
}

std::vector<AttrSpec> recurrent_attrs(std::vector<AttrSpec> extra) {
  std::vector<AttrSpec> a = {{"activation_alpha", AttrKind::Floats}, {"activation_beta", AttrKind::Floats},
                             {"activations", AttrKind::Strings},     {"clip", AttrKind::Float},
                             {"direction", AttrKind::String},        {"hidden_size", AttrKind::Int},
                             {"layout", AttrKind::Int}};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace kiln::ops::nn

// RNN, GRU and LSTM against naive per-step loops (double precision, one batch row and one
// direction at a time) over directions, sequence_lens, initial states, biases, peepholes,
// clip and linear_before_reset; hand-checked tiny cases; shapes and errors.
#include "test_nn_support.h"

namespace kiln::nntest {
namespace {

using Ints = std::vector<int64_t>;
using Vec = std::vector<double>;

double sigm(double x) { return 1 / (1 + std::exp(-x)); }
double clipv(double x, double c) { return c > 0 ? std::min(c, std::max(-c, x)) : x; }

// Row r of gate block g of a [dirs, gates*H, cols] weight, dotted with v.
double dot_row(const Tensor& w, int64_t d, int64_t row, const Vec& v) {
  int64_t rows = w.dim(1), cols = w.dim(2);
  double s = 0;
  for (int64_t k = 0; k < cols; ++k) s += w.data<float>()[(d * rows + row) * cols + k] * v[k];
  return s;
}

struct Problem {
  std::string op;
  int64_t seq = 4, batch = 3, input = 3, hidden = 2, dirs = 1;
  std::string direction = "forward";
  Ints lens;  // empty = full
  bool bias = true, init_h = true, init_c = true, peep = true, lbr = false;
  float clip = 0;
};

int64_t gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

// Runs one direction for one batch row naively; writes Y rows and returns final (h, c).
std::pair<Vec, Vec> naive_row(const Problem& p, const Tensor& X, const Tensor& W, const Tensor& R, const Tensor& B,
                              const Tensor& P, Vec h, Vec c, int64_t d, int64_t b, Tensor& Y) {
  int64_t H = p.hidden, G = gates_of(p.op) * H, len = p.lens.empty() ? p.seq : p.lens[b];
  bool rev = p.direction == "reverse" || (p.direction == "bidirectional" && d == 1);
  auto bias = [&](int64_t k) { return static_cast<double>(B.data<float>()[d * 2 * G + k]); };
  for (int64_t s = 0; s < len; ++s) {
    int64_t t = rev ? len - 1 - s : s;
    Vec x(p.input);
    for (int64_t k = 0; k < p.input; ++k) x[k] = X.data<float>()[(t * p.batch + b) * p.input + k];
    Vec hn(H), cn(H);
    for (int64_t j = 0; j < H; ++j) {
      auto pre = [&](int64_t gate) {
        int64_t row = gate * H + j;
        return dot_row(W, d, row, x) + dot_row(R, d, row, h) + bias(row) + bias(G + row);
      };
      if (p.op == "RNN") {
        hn[j] = std::tanh(clipv(pre(0), p.clip));
      } else if (p.op == "GRU") {
        double z = sigm(clipv(pre(0), p.clip)), r = sigm(clipv(pre(1), p.clip));
        double xh = dot_row(W, d, 2 * H + j, x) + bias(2 * H + j);
        double hh;
        if (p.lbr) {
          hh = xh + r * (dot_row(R, d, 2 * H + j, h) + bias(G + 2 * H + j));
        } else {
          Vec rhv(H);
          for (int64_t k = 0; k < H; ++k) {
            // r for every hidden unit k is needed to form r . H.
            double rk = sigm(clipv(dot_row(W, d, H + k, x) + dot_row(R, d, H + k, h) + bias(H + k) + bias(G + H + k),
                                   p.clip));
            rhv[k] = rk * h[k];
          }
          hh = xh + dot_row(R, d, 2 * H + j, rhv) + bias(G + 2 * H + j);
        }
        hn[j] = (1 - z) * std::tanh(clipv(hh, p.clip)) + z * h[j];
      } else {
        const float* pp = P.data<float>() + d * 3 * H;
        double i = sigm(clipv(pre(0) + pp[j] * c[j], p.clip));
        double f = sigm(clipv(pre(2) + pp[2 * H + j] * c[j], p.clip));
        double g = std::tanh(clipv(pre(3), p.clip));
        cn[j] = f * c[j] + i * g;
        double o = sigm(clipv(pre(1) + pp[H + j] * cn[j], p.clip));
        hn[j] = o * std::tanh(cn[j]);
      }
    }
    h = hn;
    if (p.op == "LSTM") c = cn;
    for (int64_t j = 0; j < H; ++j) Y.data<float>()[((t * p.dirs + d) * p.batch + b) * H + j] = static_cast<float>(h[j]);
  }
  return {h, c};
}

void check(const Problem& p, unsigned seed) {
  int64_t G = gates_of(p.op) * p.hidden;
  Tensor X = random_f32({p.seq, p.batch, p.input}, seed), W = random_f32({p.dirs, G, p.input}, seed + 1);
  Tensor R = random_f32({p.dirs, G, p.hidden}, seed + 2);
  Tensor B = p.bias ? random_f32({p.dirs, 2 * G}, seed + 3) : Tensor(DType::f32, {p.dirs, 2 * G});
  Tensor H0 = p.init_h ? random_f32({p.dirs, p.batch, p.hidden}, seed + 4) : Tensor(DType::f32, {p.dirs, p.batch, p.hidden});
  Tensor C0 = p.init_c ? random_f32({p.dirs, p.batch, p.hidden}, seed + 5) : Tensor(DType::f32, {p.dirs, p.batch, p.hidden});
  Tensor P = p.peep ? random_f32({p.dirs, 3 * p.hidden}, seed + 6) : Tensor(DType::f32, {p.dirs, 3 * p.hidden});
  std::vector<Arg> args = {in("x", X), init("w", W), init("r", R), p.bias ? init("b", B) : none(),
                           p.lens.empty() ? none() : in("lens", Tensor::from_vector<int32_t>({p.batch}, std::vector<int32_t>(p.lens.begin(), p.lens.end()))),
                           p.init_h ? in("h0", H0) : none()};
  std::vector<std::string> outs = {"y", "yh"};
  if (p.op == "LSTM") {
    args.push_back(p.init_c ? in("c0", C0) : none());
    args.push_back(p.peep ? init("p", P) : none());
    outs.push_back("yc");
  }
  std::map<std::string, Attribute> attrs = {{"hidden_size", p.hidden}, {"direction", p.direction}};
  if (p.clip > 0) attrs["clip"] = p.clip;
  if (p.op == "GRU") attrs["linear_before_reset"] = static_cast<int64_t>(p.lbr);
  OneNode g(p.op, args, outs, attrs);
  auto got = g.run(2);
  Tensor Y(DType::f32, {p.seq, p.dirs, p.batch, p.hidden}), Yh(DType::f32, {p.dirs, p.batch, p.hidden}), Yc = Yh.clone();
  for (int64_t d = 0; d < p.dirs; ++d)
    for (int64_t b = 0; b < p.batch; ++b) {
      Vec h(p.hidden), c(p.hidden);
      for (int64_t j = 0; j < p.hidden; ++j) {
        h[j] = H0.data<float>()[(d * p.batch + b) * p.hidden + j];
        c[j] = C0.data<float>()[(d * p.batch + b) * p.hidden + j];
      }
      auto [hf, cf] = naive_row(p, X, W, R, B, P, h, c, d, b, Y);
      for (int64_t j = 0; j < p.hidden; ++j) {
        Yh.data<float>()[(d * p.batch + b) * p.hidden + j] = static_cast<float>(hf[j]);
        Yc.data<float>()[(d * p.batch + b) * p.hidden + j] = static_cast<float>(cf[j]);
      }
    }
  std::string what = str_cat(p.op, " ", p.direction, " seed ", seed);
  expect_close(got[0], Y, 1e-4, what + " Y");
  expect_close(got[1], Yh, 1e-4, what + " Y_h");
  if (p.op == "LSTM") expect_close(got[2], Yc, 1e-4, what + " Y_c");
  EXPECT_EQ(g.out(0).shape, Shape::of(Y.dims()));
}

TEST(NnRecurrent, AllCellsAllDirectionsAgainstNaive) {
  unsigned seed = 100;
  for (std::string op : {"RNN", "GRU", "LSTM"})
    for (std::string dir : {"forward", "reverse", "bidirectional"}) {
      Problem p;
      p.op = op, p.direction = dir, p.dirs = dir == "bidirectional" ? 2 : 1;
      check(p, seed += 10);
      p.lens = {4, 2, 0};
      p.init_h = false, p.init_c = false;
      check(p, seed += 10);
      p.bias = false, p.peep = false, p.lens = {1, 3, 4}, p.clip = 0.5f, p.hidden = 5;
      check(p, seed += 10);
    }
}

TEST(NnRecurrent, GruLinearBeforeReset) {
  for (std::string dir : {"forward", "bidirectional"}) {
    Problem p;
    p.op = "GRU", p.lbr = true, p.direction = dir, p.dirs = dir == "bidirectional" ? 2 : 1, p.lens = {3, 4, 1};
    check(p, 7);
  }
}

TEST(NnRecurrent, HandCheckedTinyRnnAndLstm) {
  // RNN, hidden 1: h1 = tanh(1), h2 = tanh(2 + 0.5 h1).
  Tensor x = f32({2, 1, 1}, {1, 2});
  OneNode rnn("RNN", {in("x", x), init("w", f32({1, 1, 1}, {1})), init("r", f32({1, 1, 1}, {0.5f}))}, {"y", "yh"},
              {{"hidden_size", int64_t{1}}});
  double h1 = std::tanh(1.0), h2 = std::tanh(2 + 0.5 * h1);
  auto r = rnn.run();
  expect_values(r[0], {2, 1, 1, 1}, {h1, h2});
  expect_values(r[1], {1, 1, 1}, {h2});
  // LSTM with zero weights except the cell gate: i = f = o = 0.5, c1 = 0.5 tanh(1).
  Tensor w = f32({1, 4, 1}, {0, 0, 0, 1});
  OneNode lstm("LSTM", {in("x", f32({1, 1, 1}, {1})), init("w", w), init("r", Tensor(DType::f32, {1, 4, 1}))},
               {"", "yh", "yc"}, {{"hidden_size", int64_t{1}}});
  double c1 = 0.5 * std::tanh(1.0);
  auto l = lstm.run();
  expect_values(l[0], {1, 1, 1}, {0.5 * std::tanh(c1)});
  expect_values(l[1], {1, 1, 1}, {c1});
}

TEST(NnRecurrent, ActivationsAttribute) {
  // RNN with Relu instead of Tanh: h = relu(x w) with x = -1, 2.
  OneNode g("RNN", {in("x", f32({2, 1, 1}, {-1, 2})), init("w", f32({1, 1, 1}, {1})), init("r", f32({1, 1, 1}, {0}))},
            {"y"}, {{"hidden_size", int64_t{1}}, {"activations", std::vector<std::string>{"Relu"}}});
  expect_values(g.run()[0], {2, 1, 1, 1}, {0, 2});
  // Affine with alpha 2, beta 1.
  OneNode a("RNN", {in("x", f32({1, 1, 1}, {3})), init("w", f32({1, 1, 1}, {1})), init("r", f32({1, 1, 1}, {0}))},
            {"y"},
            {{"hidden_size", int64_t{1}},
             {"activations", std::vector<std::string>{"Affine"}},
             {"activation_alpha", std::vector<float>{2.f}},
             {"activation_beta", std::vector<float>{1.f}}});
  expect_values(a.run()[0], {1, 1, 1, 1}, {7});
}

TEST(NnRecurrent, SymbolicShapesAndErrors) {
  OneNode g("LSTM", {{"x", Tensor(), false, Shape({Dim::sym("T"), Dim::sym("N"), Dim(3)})},
                     init("w", Tensor(DType::f32, {2, 8, 3})), init("r", Tensor(DType::f32, {2, 8, 2}))},
            {"y", "yh", "yc"}, {{"hidden_size", int64_t{2}}, {"direction", "bidirectional"}});
  g.m.graph->inputs[0]->dtype = DType::f32;
  g.infer();
  EXPECT_EQ(g.out(0).shape, Shape({Dim::sym("T"), Dim(2), Dim::sym("N"), Dim(2)}));
  EXPECT_EQ(g.out(2).shape, Shape({Dim(2), Dim::sym("N"), Dim(2)}));
  OneNode bad("GRU", {in("x", Tensor(DType::f32, {2, 1, 3})), init("w", Tensor(DType::f32, {1, 6, 4})),
                      init("r", Tensor(DType::f32, {1, 6, 2}))},
              {"y"}, {{"hidden_size", int64_t{2}}});
  EXPECT_THROW(bad.infer(), Error);
  OneNode layout("RNN", {in("x", Tensor(DType::f32, {2, 1, 3})), init("w", Tensor(DType::f32, {1, 2, 3})),
                         init("r", Tensor(DType::f32, {1, 2, 2}))},
                 {"y"}, {{"layout", int64_t{1}}});
  EXPECT_THROW(layout.infer(), Error);
  OneNode lens("RNN", {in("x", Tensor(DType::f32, {2, 1, 3})), init("w", Tensor(DType::f32, {1, 2, 3})),
                       init("r", Tensor(DType::f32, {1, 2, 2})), none(), in("l", Tensor::from_vector<int32_t>({1}, {5}))},
               {"y"});
  EXPECT_THROW(lens.run(), Error);
}

}  // namespace
}  // namespace kiln::nntest

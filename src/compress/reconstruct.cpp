// reconstruct_pruned: the original and the pruned model stepped side by side over the
// calibration batches; at each layer whose inputs lost channels, its original output (from the
// original inputs) is fitted on the pruned inputs by ridge least squares, and the new weights are
// in place before the pruned model runs that layer, so later layers fit what the earlier fits produce.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <limits>
#include <optional>
#include <random>

#include "kiln/compress/least_squares.h"
#include "kiln/compress/prune.h"
#include "kiln/kernels/gemm.h"
#include "kiln/passes/manager.h"
#include "kiln/passes/rewrite.h"
#include "stepper.h"

namespace kiln::compress {
namespace {

using passes::constant_of;

struct ConvGeometry {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t out_h(int64_t h) const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t out_w(int64_t w) const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
};

ConvGeometry conv_geometry(const Node& n, const Tensor& w, const Tensor& x) {
  ConvGeometry g;
  g.kh = w.dim(2), g.kw = w.dim(3);
  auto s = n.attr_ints("strides", {1, 1}), d = n.attr_ints("dilations", {1, 1}), p = n.attr_ints("pads", {0, 0, 0, 0});
  g.sh = s[0], g.sw = s[1], g.dh = d[0], g.dw = d[1], g.pt = p[0], g.pl = p[1], g.pb = p[2], g.pr = p[3];
  const std::string pad = n.attr_s("auto_pad", "NOTSET");
  if (pad == "SAME_UPPER" || pad == "SAME_LOWER") {
    auto total = [](int64_t in, int64_t k, int64_t st, int64_t di) {
      const int64_t out = (in + st - 1) / st;
      return std::max<int64_t>(0, (out - 1) * st + (k - 1) * di + 1 - in);
    };
    const int64_t th = total(x.dim(2), g.kh, g.sh, g.dh), tw = total(x.dim(3), g.kw, g.sw, g.dw);
    g.pt = pad == "SAME_UPPER" ? th / 2 : th - th / 2;
    g.pl = pad == "SAME_UPPER" ? tw / 2 : tw - tw / 2;
    g.pb = th - g.pt, g.pr = tw - g.pl;
  } else if (pad == "VALID") {
    g.pt = g.pl = g.pb = g.pr = 0;
  }
  return g;
}

// One output position's receptive field, (c, ky, kx) order = the weight's [C, kh, kw] layout.
void unfold(const Tensor& x, const ConvGeometry& g, int64_t n, int64_t oy, int64_t ox, float* out) {
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const float* p = x.data<float>() + n * C * H * W;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
        *out++ = iy >= 0 && iy < H && ix >= 0 && ix < W ? p[(c * H + iy) * W + ix] : 0.f;
      }
    }
}

// A layer as rows: W (outputs x inputs, row-major) and b.
struct Rows {
  std::vector<float> w, b;
  int64_t outputs = 0, inputs = 0;
};

bool weight_is_kn(const Node& n) { return n.op == "MatMul" || (n.op == "Gemm" && !n.attr_i("transB", 0)); }

Rows layer_rows(const Node& n, const std::vector<int64_t>& out_idx) {
  const Tensor& w = *constant_of(n.input(1));
  Rows r;
  const bool kn = weight_is_kn(n);
  const int64_t all_out = kn ? w.dim(1) : w.dim(0);
  r.inputs = w.numel() / all_out;
  r.outputs = static_cast<int64_t>(out_idx.size());
  r.w.resize(static_cast<size_t>(r.outputs * r.inputs));
  const float* p = w.data<float>();
  for (int64_t o = 0; o < r.outputs; ++o)
    for (int64_t i = 0; i < r.inputs; ++i)
      r.w[o * r.inputs + i] = kn ? p[i * all_out + out_idx[o]] : p[out_idx[o] * r.inputs + i];
  r.b.assign(static_cast<size_t>(r.outputs), 0.f);
  if (const Tensor* bt = n.input(2) ? constant_of(n.input(2)) : nullptr)
    for (int64_t o = 0; o < r.outputs; ++o) r.b[o] = bt->data<float>()[bt->numel() == 1 ? 0 : out_idx[o]];
  return r;
}

// The kept output channels of a node (all when its own outputs were not pruned).
std::vector<int64_t> kept_outputs(const PrunePlan* plan, const Node& original) {
  const Tensor& w = *constant_of(original.input(1));
  const int64_t all = weight_is_kn(original) ? w.dim(1) : w.dim(0);
  if (plan)
    for (const auto& e : plan->edits)
      if (e.node == original.name && e.kind == ChannelEdit::Producer && e.input == 1) {
        const auto& g = plan->groups[e.runs[0].group];
        if (g.pruned()) return g.kept;
      }
  std::vector<int64_t> idx(static_cast<size_t>(all));
  for (int64_t i = 0; i < all; ++i) idx[i] = i;
  return idx;
}

// Why a layer cannot be refitted ("" when it can).
std::string refit_refusal(const Node& n) {
  if (n.op == "Conv") {
    if (n.attr_i("group", 1) != 1) return "grouped convolution";
    if (constant_of(n.input(1))->rank() != 4) return "not a 2-D convolution";
    return "";
  }
  if (n.op == "Gemm" && (n.attr_f("alpha", 1.f) != 1.f || n.attr_f("beta", 1.f) != 1.f || n.attr_i("transA", 0)))
    return "Gemm with alpha, beta or transA";
  if (n.op == "Gemm" && n.input(2) && constant_of(n.input(2)) &&
      constant_of(n.input(2))->numel() != constant_of(n.input(2))->dims().back())
    return "Gemm bias not per output";
  return "";
}

// Writes W (outputs x (inputs [+1 bias])) into the node's weight layout and bias.
void write_back(Model& m, Node& n, const std::vector<double>& w, int64_t outputs, int64_t inputs, bool bias) {
  Graph& g = *m.graph;
  const Tensor& old = *constant_of(n.input(1));
  const int64_t d = inputs + (bias ? 1 : 0);
  Tensor nw(DType::f32, old.dims());
  float* p = nw.data<float>();
  const bool kn = weight_is_kn(n);
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t i = 0; i < inputs; ++i)
      p[kn ? i * outputs + o : o * inputs + i] = static_cast<float>(w[o * d + i]);
  n.inputs[1] = g.add_initializer(g.unique_name(n.inputs[1]->name + "_fit"), nw);
  if (!bias) return;
  std::vector<int64_t> bdims = {outputs};
  if (const Value* b = n.input(2))
    if (const Tensor* bt = constant_of(b)) bdims = bt->dims();
  Tensor nb(DType::f32, bdims);
  for (int64_t o = 0; o < outputs; ++o) nb.data<float>()[o] = static_cast<float>(w[o * d + inputs]);
  if (n.inputs.size() < 3) n.inputs.resize(3, nullptr);
  n.inputs[2] = g.add_initializer(g.unique_name(n.name + "_bias_fit"), nb);
}

// Rows of one layer's problem collected in chunks: the pruned inputs, the original inputs, and the
// original output computed from them (y = x_o W^T + b) when a chunk is full.
struct Accumulator {
  NormalEquations ne;
  const Rows& original;
  std::vector<float> xp, xo, y;
  int64_t inputs, filled = 0;
  Accumulator(int64_t pruned_inputs, const Rows& o, bool bias)
      : ne(pruned_inputs, o.outputs, bias), original(o), xp(NormalEquations::kChunk * pruned_inputs),
        xo(NormalEquations::kChunk * o.inputs), y(NormalEquations::kChunk * o.outputs), inputs(pruned_inputs) {}
  float* next_pruned() { return &xp[filled * inputs]; }
  float* next_original() { return &xo[filled * original.inputs]; }
  void commit() {
    if (++filled == NormalEquations::kChunk) flush();
  }
  void flush() {
    if (filled == 0) return;
    const Rows& o = original;
    kernels::sgemm(false, true, filled, o.outputs, o.inputs, 1.f, xo.data(), o.inputs, o.w.data(), o.inputs, 0.f, y.data(),
                   o.outputs, 0);
    for (int64_t i = 0; i < filled; ++i)
      for (int64_t c = 0; c < o.outputs; ++c) y[i * o.outputs + c] += o.b[c];
    ne.add(xp.data(), y.data(), filled);
    filled = 0;
  }
};

}  // namespace

std::vector<LayerFit> reconstruct_pruned(const Model& original, Model& pruned, const PrunePlan& plan,
                                         const BatchSource& calib, const ReconstructOptions& opt, std::ostream* log) {
  std::vector<std::string> readers = pruned_readers(plan);
  std::vector<LayerFit> fits;
  if (readers.empty()) return fits;
  KILN_CHECK(calib.size() > 0, "reconstruction needs calibration data");
  std::map<std::string, size_t> at_o, at_p;
  for (size_t i = 0; i < original.graph->nodes().size(); ++i) at_o[original.graph->nodes()[i]->name] = i;
  for (size_t i = 0; i < pruned.graph->nodes().size(); ++i) at_p[pruned.graph->nodes()[i]->name] = i;
  std::vector<std::unique_ptr<Stepper>> so, sp;
  for (size_t b = 0; b < calib.size(); ++b) {
    Inputs in = calib.batch(b);
    so.push_back(std::make_unique<Stepper>(original, in));
    sp.push_back(std::make_unique<Stepper>(pruned, in));
  }
  for (size_t li = 0; li < readers.size(); ++li) {
    const std::string& name = readers[li];
    const Node& no = *original.graph->nodes()[at_o.at(name)];
    Node& np = *pruned.graph->mutable_nodes()[at_p.at(name)];
    if (std::string why = refit_refusal(no); !why.empty()) {
      if (log) *log << "  " << name << ": not refitted (" << why << ")\n";
      continue;
    }
    for (size_t b = 0; b < calib.size(); ++b) so[b]->run_to(at_o.at(name)), sp[b]->run_to(at_p.at(name));
    const std::vector<int64_t> out_idx = kept_outputs(&plan, no);
    Rows ro = layer_rows(no, out_idx);
    std::vector<int64_t> all_p;
    {
      const Tensor& wp = *constant_of(np.input(1));
      const int64_t n_out = weight_is_kn(np) ? wp.dim(1) : wp.dim(0);
      for (int64_t i = 0; i < n_out; ++i) all_p.push_back(i);
    }
    Rows rp = layer_rows(np, all_p);  // the plainly pruned weights
    KILN_CHECK(rp.outputs == ro.outputs, "reconstruct: ", name, " has ", rp.outputs, " outputs, expected ", ro.outputs);
    const bool bias = np.op != "MatMul";  // MatMul has no bias input to fit
    const bool conv = no.op == "Conv";
    // Rows: output positions (conv) or matrix rows, over every batch, sampled down to max_rows.
    // Every 4th calibration image goes to the validation rows that choose lambda.
    int64_t total = 0, images = 0;
    std::vector<int64_t> per_batch, per_image;
    for (size_t b = 0; b < calib.size(); ++b) {
      const Tensor& x = so[b]->value(no.inputs[0]);
      int64_t n = conv ? x.dim(0) * conv_geometry(no, *constant_of(no.input(1)), x).out_h(x.dim(2)) *
                             conv_geometry(no, *constant_of(no.input(1)), x).out_w(x.dim(3))
                       : x.numel() / ro.inputs;
      const int64_t imgs = x.rank() >= 2 ? x.dim(0) : 1;
      per_batch.push_back(n);
      per_image.push_back(std::max<int64_t>(n / std::max<int64_t>(imgs, 1), 1));
      total += n;
      images += imgs;
    }
    const bool validate = images >= 2;
    Accumulator train(rp.inputs, ro, bias), val(rp.inputs, ro, bias);
    const double keep_p = std::min(1.0, static_cast<double>(opt.max_rows) / static_cast<double>(std::max<int64_t>(total, 1)));
    std::mt19937_64 rng(opt.seed * 1000003 + li);
    std::uniform_real_distribution<double> u01(0, 1);
    int64_t image0 = 0;
    for (size_t b = 0; b < calib.size(); ++b) {
      const Tensor& x_o = so[b]->value(no.inputs[0]);
      const Tensor& x_p = sp[b]->value(np.inputs[0]);
      KILN_CHECK(x_o.dtype() == DType::f32 && x_p.dtype() == DType::f32, "reconstruct: ", name, " reads a non-float input");
      std::optional<ConvGeometry> g;
      if (conv) g = conv_geometry(no, *constant_of(no.input(1)), x_o);
      for (int64_t r = 0; r < per_batch[b]; ++r) {
        if (keep_p < 1 && u01(rng) >= keep_p) continue;
        const int64_t img = r / per_image[b];
        Accumulator& acc = validate && (image0 + img) % 4 == 3 ? val : train;
        if (conv) {
          const int64_t oh = g->out_h(x_o.dim(2)), ow = g->out_w(x_o.dim(3));
          const int64_t oy = (r / ow) % oh, ox = r % ow;
          unfold(x_o, *g, r / (oh * ow), oy, ox, acc.next_original());
          unfold(x_p, *g, r / (oh * ow), oy, ox, acc.next_pruned());
        } else {
          std::copy_n(x_o.data<float>() + r * ro.inputs, ro.inputs, acc.next_original());
          std::copy_n(x_p.data<float>() + r * rp.inputs, rp.inputs, acc.next_pruned());
        }
        acc.commit();
      }
      image0 += x_o.rank() >= 2 ? x_o.dim(0) : 1;
    }
    train.flush();
    val.flush();

    LayerFit fit;
    fit.node = name;
    fit.rows = train.ne.rows() + val.ne.rows();
    fit.validation_rows = val.ne.rows();
    fit.unknowns = train.ne.unknowns();
    const int64_t d = train.ne.unknowns();
    std::vector<double> plain(static_cast<size_t>(ro.outputs * d));
    for (int64_t o = 0; o < ro.outputs; ++o) {
      for (int64_t i = 0; i < rp.inputs; ++i) plain[o * d + i] = rp.w[o * rp.inputs + i];
      if (bias) plain[o * d + rp.inputs] = rp.b[o];
    }
    // lambda = ridge x 10^k, k = 0, 1, ...: the first minimum of the validation error (without
    // validation rows: lambda = ridge, scored on the fitted rows).
    const NormalEquations& judge = validate && val.ne.rows() > 0 ? val.ne : train.ne;
    const double yy = std::max(judge.squared_total(), 1e-300);
    fit.error_plain = judge.squared_error(plain) / yy;
    double best = std::numeric_limits<double>::infinity(), best_ridge = opt.ridge;
    if (train.ne.rows() < train.ne.unknowns()) {
      // Fewer rows than unknowns: the fit would only interpolate the calibration rows.
      fit.note = "underdetermined (" + std::to_string(train.ne.rows()) + " rows for " +
                 std::to_string(train.ne.unknowns()) + " unknowns): more calibration images would refit it";
    } else {
      for (int k = 0; k < (&judge == &val.ne ? opt.ridge_steps : 1); ++k) {
        const double ridge = opt.ridge * std::pow(10.0, k);
        const double e = judge.squared_error(train.ne.solve(ridge)) / yy;
        if (e >= best) break;
        best = e, best_ridge = ridge;
      }
    }
    fit.error_fit = best;
    if (fit.error_fit < fit.error_plain) {
      fit.ridge = best_ridge;
      train.ne.merge(val.ne);  // the final weights use every sampled row
      write_back(pruned, np, train.ne.solve(best_ridge), ro.outputs, rp.inputs, bias);
    } else {
      fit.error_fit = fit.error_plain;  // the fit does not generalise: the plain weights stay
      if (fit.note.empty()) fit.note = "the fit did not beat plain pruning on the validation rows";
    }
    fits.push_back(fit);
    if (log) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "\rreconstructing %zu/%zu  %-40s error %.4f -> %.4f", li + 1, readers.size(),
                    name.c_str(), fit.error_plain, fit.error_fit);
      *log << buf << std::flush;
    }
  }
  if (log) *log << "\n";
  passes::PipelineOptions po;
  po.passes = "dce";
  passes::PassContext ctx;
  passes::PassManager::from_options(po).run(pruned, ctx);
  return fits;
}

}  // namespace kiln::compress

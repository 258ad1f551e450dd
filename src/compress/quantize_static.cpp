// The static quantizer: which nodes and tensors to quantize (plan_static) and the rewrite into
// the standard QDQ form (apply_static). The calibration in between is calibrate.cpp's.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "kiln/compress/quantize.h"
#include "kiln/ops/op.h"
#include "kiln/passes/manager.h"
#include "kiln/passes/rewrite.h"

namespace kiln::compress {
namespace {

using passes::constant_of;
using passes::Decision;

bool is_op(const Node* n, std::string_view op) { return n && n->domain.empty() && n->op == op; }

// Why a Conv/MatMul/Gemm cannot be quantized statically (yes when it can).
Decision quantizable(const Node& n) {
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!x || x->dtype != DType::f32 || x->is_constant()) return Decision::no("the input is not a float activation");
  const Tensor* wt = constant_of(w);
  if (!wt || wt->dtype() != DType::f32) return Decision::no("the weight is not a float constant");
  if (n.op == "Conv") {
    if (wt->rank() < 3) return Decision::no("the weight rank is below 3");
  } else {
    if (wt->rank() != 2) return Decision::no("the weight is not a matrix");
    if (n.op == "Gemm" && (n.attr_i("transA", 0) != 0 || n.attr_f("alpha", 1.f) != 1.f ||
                           (n.input(2) && n.attr_f("beta", 1.f) != 1.f)))
      return Decision::no("Gemm with transA, alpha or beta");
  }
  if (const Value* b = n.input(2)) {
    const Tensor* bt = constant_of(b);
    int64_t channels = n.op == "Conv" || n.attr_i("transB", 0) ? wt->dim(0) : wt->dim(1);
    if (!bt || bt->dtype() != DType::f32 || (bt->numel() != channels && bt->numel() != 1))
      return Decision::no("the bias is not a per-channel float constant");
  }
  return Decision::yes();
}

// The value after the activation that alone reads y (Relu, or Clip), else y.
Value* after_activation(Value* y) {
  if (!passes::has_single_use(y)) return y;
  Node* u = passes::users_of(y)[0];
  return is_op(u, "Relu") || is_op(u, "Clip") ? u->outputs[0] : y;
}

int64_t channel_axis(const Node& n) { return n.op == "Conv" || (n.op == "Gemm" && n.attr_i("transB", 0)) ? 0 : 1; }

Tensor scalar_or_vector(const std::vector<float>& v) {
  if (v.size() == 1) return Tensor::scalar<float>(v[0]);
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}

// (Wq * scale - W) E[x] per output channel: the mean shift weight rounding adds to the output,
// from the calibration means of the input channels. Empty when the means do not fit.
std::vector<double> weight_shift(const Node& n, const Tensor& w, const QuantizedWeight& qw, int64_t axis,
                                 const std::vector<double>& mean) {
  const int64_t channels = w.dim(static_cast<size_t>(axis));
  const float* wf = w.data<float>();
  const int8_t* q = qw.q.data<int8_t>();
  const float* sc = qw.scale.data<float>();
  auto scale = [&](int64_t c) { return qw.scale.numel() == 1 ? sc[0] : sc[c]; };
  std::vector<double> shift(static_cast<size_t>(channels), 0.0);
  if (n.op == "Conv") {
    const int64_t group = n.attr_i("group", 1), per_ch = w.numel() / channels, cg = w.dim(1), taps = per_ch / cg;
    if (static_cast<int64_t>(mean.size()) != cg * group) return {};
    for (int64_t m = 0; m < channels; ++m)
      for (int64_t c = 0; c < cg; ++c) {
        const double e = mean[(m / (channels / group)) * cg + c];
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t i = (m * cg + c) * taps + t;
          shift[m] += (q[i] * static_cast<double>(scale(m)) - wf[i]) * e;
        }
      }
    return shift;
  }
  // Matrices: [K, N] with the channel on axis 1, or [N, K] (Gemm transB) on axis 0.
  const int64_t K = w.dim(axis == 1 ? 0 : 1);
  if (static_cast<int64_t>(mean.size()) != K) return {};
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = axis == 1 ? k * channels + c : c * K + k;
      shift[c] += (q[i] * static_cast<double>(scale(c)) - wf[i]) * mean[k];
    }
  return shift;
}

}  // namespace

QuantizedWeight quantize_weight(const Tensor& w, int64_t axis, bool per_channel, int qmax) {
  KILN_CHECK(w.dtype() == DType::f32, "quantize_weight: the weight must be f32");
  KILN_CHECK(qmax >= 1 && qmax <= 127, "quantize_weight: qmax ", qmax, " is outside 1..127");
  const float top = static_cast<float>(qmax);
  int64_t outer = 1, channels = w.dim(static_cast<size_t>(axis)), inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= w.dim(static_cast<size_t>(d));
  for (size_t d = static_cast<size_t>(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
  const int64_t groups = per_channel ? channels : 1;
  std::vector<float> maxabs(static_cast<size_t>(groups), 0.f);
  const float* src = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    int64_t c = per_channel ? (i / inner) % channels : 0;
    maxabs[c] = std::max(maxabs[c], std::abs(src[i]));
  }
  QuantizedWeight out;
  std::vector<float> scale(maxabs.size());
  for (size_t c = 0; c < scale.size(); ++c) scale[c] = maxabs[c] > 0 ? maxabs[c] / top : 1.f;
  out.q = Tensor(DType::i8, w.dims());
  int8_t* q = out.q.data<int8_t>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    float s = scale[per_channel ? (i / inner) % channels : 0];
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(src[i] / s), -top, top));
  }
  (void)outer;
  out.scale = per_channel ? Tensor::from_vector<float>({channels}, scale) : Tensor::scalar<float>(scale[0]);
  return out;
}

void prepare_float_model(Model& m) {
  passes::PipelineOptions po;
  po.passes = "fold-constants,simplify-shapes,eliminate-identity,fold-batchnorm,cse,dce";
  passes::PassContext ctx;
  passes::PassManager::from_options(po).run(m, ctx);
}

QuantPlan plan_static(const Model& m, const QuantizeOptions& opt) {
  QuantPlan plan;
  const Graph& g = *m.graph;
  std::set<std::string> excluded(opt.exclude.begin(), opt.exclude.end());
  std::set<const Value*> chosen;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    if (!(is_op(&n, "Conv") || is_op(&n, "MatMul") || is_op(&n, "Gemm"))) continue;
    if (excluded.erase(n.name)) {
      plan.skipped.push_back(n.name + ": excluded (--exclude)");
      continue;
    }
    if (Decision d = quantizable(n); !d) {
      plan.skipped.push_back(n.name + ": " + d.reason());
      continue;
    }
    plan.nodes.push_back(n.name);
    plan.channel_axis[n.inputs[0]->name] = n.op == "Conv" ? 1 : -1;
    chosen.insert(n.inputs[0]);
    Value* t = after_activation(n.outputs[0]);
    if (!passes::is_graph_output(t)) chosen.insert(t);
  }
  KILN_CHECK(excluded.empty(), "--exclude ", *excluded.begin(), ": no Conv/MatMul/Gemm node has this name");
  // Residual Adds of two quantized tensors produce a quantized tensor (after their Relu), so the
  // whole block stays int8; repeat while that adds tensors (blocks chain).
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& up : g.nodes()) {
      const Node& n = *up;
      if (!is_op(&n, "Add") || !n.input(0) || !n.input(1) || !chosen.count(n.inputs[0]) || !chosen.count(n.inputs[1]))
        continue;
      Value* t = after_activation(n.outputs[0]);
      if (!passes::is_graph_output(t) && chosen.insert(t).second) grew = true;
    }
  }
  // Data-movement ops (pooling by max, reshapes, transposes) of a quantized tensor give a
  // quantized tensor with the same parameters, so they can run on int8 (fold-qdq).
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    static const char* kMovers[] = {"MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"};
    if (!std::any_of(std::begin(kMovers), std::end(kMovers), [&](const char* op) { return is_op(&n, op); })) continue;
    if (!n.input(0) || !chosen.count(n.inputs[0]) || passes::is_graph_output(n.outputs[0])) continue;
    if (n.outputs.size() > 1 && n.outputs[1]) continue;  // MaxPool's indices
    std::string root = n.inputs[0]->name;
    if (auto it = plan.shared.find(root); it != plan.shared.end()) root = it->second;
    chosen.insert(n.outputs[0]);
    plan.shared[n.outputs[0]->name] = root;
  }
  for (const Value* v : g.inputs)
    if (chosen.count(v)) plan.tensors.push_back(v->name);
  for (const auto& up : g.nodes())
    for (const Value* v : up->outputs)
      if (v && chosen.count(v)) plan.tensors.push_back(v->name);
  return plan;
}

std::vector<std::string> apply_static(Model& m, const QuantPlan& plan, const std::map<std::string, Observer>& observers,
                                      const QuantizeOptions& opt) {
  Graph& g = *m.graph;
  std::vector<std::string> lines;
  const bool per_channel = opt.per_channel && m.opset() >= 13;
  if (opt.per_channel && !per_channel)
    lines.push_back("note: opset " + std::to_string(m.opset()) + " < 13 has no per-axis DequantizeLinear: weights per tensor");
  // Parameters of every planned tensor (shared ones from their root's observer).
  std::map<std::string, QParams> params;
  for (const auto& t : plan.tensors) {
    auto sh = plan.shared.find(t);
    const std::string& root = sh == plan.shared.end() ? t : sh->second;
    auto it = observers.find(root);
    KILN_CHECK(it != observers.end() && !it->second.empty(), "quantize: tensor ", root, " was not calibrated");
    auto [lo, hi] = choose_range(it->second, opt.calibration);
    params[t] = qparams_for_range(lo, hi, opt.activations);
  }
  std::map<std::string, Node*> by_name;
  for (const auto& up : g.nodes()) by_name[up->name] = up.get();
  passes::Rewriter rw(m, g, nullptr);

  // Weights and biases: i8 / i32 initializers read through DequantizeLinear.
  for (const auto& name : plan.nodes) {
    Node* n = by_name.at(name);
    const QParams& px = params.at(n->inputs[0]->name);
    const int64_t axis = channel_axis(*n);
    const Tensor& w = *constant_of(n->inputs[1]);
    QuantizedWeight qw = quantize_weight(w, axis, per_channel, opt.reduce_range ? 63 : 127);
    rw.set_insertion_point(n);
    const std::string& wn = n->inputs[1]->name;
    Value* wq = rw.constant(wn + "_quantized", qw.q);
    Value* ws = rw.constant(wn + "_scale", qw.scale);
    Tensor wz(DType::i8, qw.scale.dims());
    Node* dqw = rw.create("DequantizeLinear", {wq, ws, rw.constant(wn + "_zero_point", wz)},
                          per_channel ? std::map<std::string, Attribute>{{"axis", axis}} : std::map<std::string, Attribute>{});
    n->inputs[1] = dqw->outputs[0];
    std::string line = n->name + ": " + n->op + ", weight " + (per_channel ? "per channel" : "per tensor") + " (" +
                       std::to_string(qw.scale.numel()) + " scales)";
    if (n->op == "Gemm" && !n->input(2)) n->attrs["beta"] = 1.f;  // a bias may be added below
    // The float bias, corrected for the weight rounding's mean shift, then quantized to i32.
    const int64_t channels = w.dim(static_cast<size_t>(axis));
    std::optional<std::vector<double>> bias;
    if (const Value* b = n->input(2)) {
      const Tensor& bt = *constant_of(b);
      bias.emplace(static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c) (*bias)[c] = bt.data<float>()[bt.numel() == 1 ? 0 : c];
    }
    auto obs = observers.find(n->inputs[0]->name);
    if (opt.bias_correction && n->op != "MatMul" && obs != observers.end()) {  // MatMul has no bias input
      std::vector<double> shift = weight_shift(*n, w, qw, axis, obs->second.channel_means());
      if (!shift.empty()) {
        if (!bias) bias.emplace(static_cast<size_t>(channels), 0.0);
        for (int64_t c = 0; c < channels; ++c) (*bias)[c] -= shift[c];
        line += ", bias corrected";
      }
    }
    if (bias) {
      std::vector<float> bs(static_cast<size_t>(per_channel ? channels : 1));
      for (size_t c = 0; c < bs.size(); ++c) bs[c] = px.scale * qw.scale.data<float>()[c];
      Tensor bq(DType::i32, {channels});
      for (int64_t c = 0; c < channels; ++c) {
        double v = std::nearbyint((*bias)[c] / bs[per_channel ? c : 0]);
        bq.data<int32_t>()[c] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
      }
      Tensor bscale = scalar_or_vector(bs);
      Tensor bz(DType::i32, bscale.dims());
      const std::string bn = n->input(2) ? n->inputs[2]->name : n->name + "_bias";
      Node* dqb = rw.create("DequantizeLinear",
                            {rw.constant(bn + "_quantized", bq), rw.constant(bn + "_scale", bscale),
                             rw.constant(bn + "_zero_point", bz)},
                            per_channel ? std::map<std::string, Attribute>{{"axis", int64_t{0}}}
                                        : std::map<std::string, Attribute>{});
      if (n->inputs.size() < 3) n->inputs.resize(3, nullptr);
      n->inputs[2] = dqb->outputs[0];
      line += ", bias i32";
    }
    lines.push_back(line);
  }

  // Activations: t -> QuantizeLinear -> DequantizeLinear, read by every former reader of t.
  for (const auto& t : plan.tensors) {
    Value* v = g.find_local(t);
    KILN_CHECK(v != nullptr, "quantize: tensor ", t, " vanished");
    std::vector<Node*> readers = passes::users_of(v);
    if (readers.empty()) continue;
    std::set<const Node*> reader_set(readers.begin(), readers.end());
    Node* first = nullptr;
    for (const auto& up : g.nodes())
      if (reader_set.count(up.get())) {
        first = up.get();
        break;
      }
    if (!first) continue;  // read only from subgraphs: left in float
    const QParams& p = params.at(t);
    rw.set_insertion_point(first);
    Value* s = rw.constant(t + "_scale", Tensor::scalar<float>(p.scale));
    Tensor zt = p.type == DType::u8 ? Tensor::scalar<uint8_t>(static_cast<uint8_t>(p.zero_point))
                                    : Tensor::scalar<int8_t>(static_cast<int8_t>(p.zero_point));
    Value* z = rw.constant(t + "_zero_point", zt);
    Node* q = rw.create("QuantizeLinear", {v, s, z});
    Node* dq = rw.create("DequantizeLinear", {q->outputs[0], s, z});
    for (Node* r : readers)
      for (auto& in : r->inputs)
        if (in == v) in = dq->outputs[0];
  }
  passes::PipelineOptions po;
  po.passes = "dce";
  passes::PassContext ctx;
  passes::PassManager::from_options(po).run(m, ctx);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return lines;
}

}  // namespace kiln::compress

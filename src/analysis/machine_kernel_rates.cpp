// `kiln machine`: kiln's own kernels timed on one core at fixed calibration shapes (machine.h
// KernelRate). The shapes are mid-network layers of the usual vision and transformer models: a
// 3x3 conv at 56x56 (gemm and direct tactics) and at 14x14 (pixel-gemm), a 1x1 conv (and a thin
// one over 32 images, its operands in DRAM: the overlap of DRAM time with compute), a depthwise
// 3x3 on large and on 7x7 planes, a 128x768x768 weight GEMM, the fast max pool on large and on
// 7x7 planes, and two reference kernels of the op table (a 3x3 max pool and a broadcast
// multiply) for ops the compiled runtime leaves to them. FLOPs and bytes are the op table's for
// the same node, so a rate divides the same numbers the perf model and the profiler use; each
// rate records its geometry as the perf model reads it (tiling rows/columns, vector operations).
#include <algorithm>
#include <chrono>
#include <functional>

#include "kiln/analysis/machine.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/pool.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"
#include "machine_internal.h"
#include "perf_cpu.h"

namespace kiln::analysis {
namespace {

using Clock = std::chrono::steady_clock;

// Best seconds of one call over `reps` repetitions of about `seconds` each (calls repeated
// within a repetition when one is shorter).
double best_call_seconds(const std::function<void()>& call, int reps, double seconds) {
  call();  // warm: caches, page faults, lazily made plans
  auto t0 = Clock::now();
  call();
  double once = std::max(std::chrono::duration<double>(Clock::now() - t0).count(), 1e-7);
  int per_rep = std::max(1, static_cast<int>(seconds / once));
  double best = once;
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    for (int i = 0; i < per_rep; ++i) call();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / per_rep);
  }
  return best;
}

// A one-node model: inputs (random values), the node, shapes inferred.
struct OneNode {
  Model model;
  std::map<std::string, Tensor> inputs;
  ops::Cost cost;
};

OneNode one_node(const std::string& op, const std::vector<std::vector<int64_t>>& input_dims,
                 std::map<std::string, Attribute> attrs) {
  OneNode o;
  o.model.opsets[""] = 17;
  Graph& g = *o.model.graph;
  std::vector<Value*> ins;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    std::vector<Dim> dims(input_dims[i].begin(), input_dims[i].end());
    ins.push_back(g.add_input(name, DType::f32, Shape(dims)));
    Tensor t(DType::f32, input_dims[i]);
    // Pseudo-random values in [-1, 1): a regular pattern would let branchy reference kernels
    // (max pooling) predict every comparison and run faster than on real activations.
    float* p = t.data<float>();
    uint64_t state = 0x9e3779b97f4a7c15ull * (i + 1);
    for (int64_t k = 0; k < t.numel(); ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      p[k] = static_cast<float>(state >> 40) / static_cast<float>(1 << 23) - 1.f;
    }
    o.inputs[name] = t;
  }
  Node* n = g.add_node(op, ins, {"y"}, std::move(attrs), "calibration");
  g.outputs = {n->outputs[0]};
  ops::infer_shapes(o.model);
  auto c = ops::node_cost(*n);
  KILN_CHECK(c.has_value(), "kiln machine: no cost for the calibration ", op);
  o.cost = *c;
  return o;
}

// The calibration's geometry as the perf model reads the same node (perf_cpu.h).
void geometry(KernelRate& r, const Node& n) {
  GemmGeometry g = gemm_geometry(n, cpu_kernel_class(n));
  r.rows = g.rows, r.cols = g.cols;
  r.vector_ops = static_cast<int64_t>(plane_vector_ops(n, kernels::kernel_table().simd_width));
}

KernelRate rate(const std::string& name, const std::string& shape, const ops::Cost& c, double seconds,
                int64_t planes = 0) {
  KernelRate r{name, shape, c.flops / seconds / 1e9, (c.bytes_read + c.bytes_written) / seconds / 1e9, seconds, planes};
  r.bytes_written = c.bytes_written;
  return r;
}

KernelRate conv_rate(const std::string& name, kernels::ConvTactic t, const kernels::Conv2dShape& s,
                     const MeasureOptions& opt) {
  // The op table's cost of the same convolution (an ONNX Conv node of this geometry).
  std::map<std::string, Attribute> attrs = {
      {"kernel_shape", std::vector<int64_t>{s.R, s.S}},
      {"pads", std::vector<int64_t>{s.pad_top, s.pad_left, s.pad_bottom, s.pad_right}},
      {"strides", std::vector<int64_t>{s.stride_h, s.stride_w}},
      {"group", s.group}};
  attrs["tactic"] = std::string(kernels::conv_tactic_name(t));  // the class the perf model reads
  OneNode node = one_node("Conv", {{s.N, s.C, s.H, s.W}, {s.K, s.C / s.group, s.R, s.S}}, attrs);
  std::vector<float> w(static_cast<size_t>(node.inputs["x1"].numel()), 0.01f);
  std::vector<float> packed(kernels::conv_packed_weight_floats(t, s));
  kernels::conv_pack_weight(t, s, w.data(), packed.data());
  std::vector<float> y(static_cast<size_t>(s.N * s.K * s.out_h() * s.out_w()));
  std::vector<float> ws(kernels::conv_workspace_floats(t, s, 1));
  const float* x = node.inputs["x0"].data<float>();
  kernels::Epilogue epi;
  double sec = best_call_seconds([&] { kernels::conv2d(t, s, x, packed.data(), y.data(), epi, ws.data(), 1); },
                                 opt.repetitions, opt.seconds_per_rep);
  KernelRate r = rate(name,
                      str_cat("x[", s.N, ",", s.C, ",", s.H, ",", s.W, "] w[", s.K, ",", s.C / s.group, ",", s.R, ",",
                              s.S, "] group ", s.group),
                      node.cost, sec, s.N * s.K);
  geometry(r, *node.model.graph->nodes()[0]);
  return r;
}

// Fast f32 pooling (kernels/pool.h) on [1, C, H, W], 3x3 window.
KernelRate pool_rate(const std::string& name, int64_t C, int64_t HW, int64_t stride, const MeasureOptions& opt) {
  kernels::Conv2dShape s;
  s.C = s.K = s.group = C, s.H = s.W = HW, s.R = s.S = 3, s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  OneNode node = one_node("MaxPool", {{1, C, HW, HW}},
                          {{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"strides", std::vector<int64_t>{stride, stride}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  std::vector<float> y(static_cast<size_t>(C * s.out_h() * s.out_w())), ws(kernels::pool2d_workspace_floats(s, 1));
  const float* x = node.inputs["x0"].data<float>();
  double sec = best_call_seconds([&] { kernels::pool2d(kernels::PoolKind::Max, s, false, x, y.data(), ws.data(), 1); },
                                 opt.repetitions, opt.seconds_per_rep);
  KernelRate r = rate(name, str_cat("MaxPool 3x3/", stride, " [1,", C, ",", HW, ",", HW, "]"), node.cost, sec, C);
  geometry(r, *node.model.graph->nodes()[0]);
  return r;
}

KernelRate gemm_rate(const std::string& name, int64_t M, int64_t N, int64_t K, const MeasureOptions& opt) {
  OneNode node = one_node("MatMul", {{M, K}, {K, N}}, {});
  std::vector<float> packed(kernels::packed_b_floats(K, N));
  kernels::pack_b(node.inputs["x1"].data<float>(), N, false, K, N, packed.data());
  std::vector<float> c(static_cast<size_t>(M * N));
  const float* a = node.inputs["x0"].data<float>();
  double sec = best_call_seconds([&] { kernels::gemm_packed_b(M, N, K, a, K, packed.data(), c.data(), N, {}, 1); },
                                 opt.repetitions, opt.seconds_per_rep);
  KernelRate r = rate(name, str_cat("[", M, ",", K, "] x packed [", K, ",", N, "]"), node.cost, sec);
  r.rows = M, r.cols = N;
  r.vector_ops = K;  // K steps of each register tile
  return r;
}

// One call of the smallest GEMM-shaped convolution (one input channel, two outputs, so not
// depthwise, one pixel, 1x1): what a conv2d call costs before any arithmetic (tactic dispatch,
// geometry, epilogue set-up).
KernelRate conv_call_rate(const MeasureOptions& opt) {
  kernels::Conv2dShape s;
  s.C = s.H = s.W = 1;
  s.K = 2;
  const kernels::ConvTactic t = kernels::conv_preferred_tactic(s);
  std::vector<float> w(2, 0.5f), packed(kernels::conv_packed_weight_floats(t, s)),
      ws(kernels::conv_workspace_floats(t, s, 1) + 1);
  kernels::conv_pack_weight(t, s, w.data(), packed.data());
  float x = 1.f, y[2] = {0.f, 0.f};
  double sec = best_call_seconds([&] { kernels::conv2d(t, s, &x, packed.data(), y, {}, ws.data(), 1); },
                                 opt.repetitions, opt.seconds_per_rep);
  return {"conv_call", str_cat("x[1,1,1,1] w[2,1,1,1] (", kernels::conv_tactic_name(t), ")"), 0, 0, sec, 2};
}

KernelRate reference_rate(const std::string& name, const std::string& op, const std::vector<std::vector<int64_t>>& dims,
                          std::map<std::string, Attribute> attrs, const MeasureOptions& opt) {
  OneNode node = one_node(op, dims, std::move(attrs));
  RunOptions ro;
  ro.threads = 1;
  double sec = best_call_seconds([&] { run_model(node.model, node.inputs, ro); }, opt.repetitions, opt.seconds_per_rep);
  std::string shape = op;
  for (const auto& d : dims) shape += " " + dims_str(d);
  return rate(name, shape, node.cost, sec);
}

}  // namespace

void measure_kernel_rates(MachinePeaks& m, const MeasureOptions& opt) {
  using kernels::ConvTactic;
  kernels::Conv2dShape c3;  // ResNet's layer1 3x3
  c3.C = c3.K = 64, c3.H = c3.W = 56, c3.R = c3.S = 3, c3.pad_top = c3.pad_left = c3.pad_bottom = c3.pad_right = 1;
  kernels::Conv2dShape c1;  // a bottleneck's 1x1 reduction
  c1.C = 256, c1.K = 64, c1.H = c1.W = 56;
  // A thin 1x1 conv over 32 images: 13 MB read and 51 MB written, far beyond the L3 working
  // set, with compute and DRAM time of the same order. Against conv_pointwise (operands in
  // cache) it tells how much of the DRAM time the kernel hides behind its arithmetic (perf_cpu.h).
  kernels::Conv2dShape c1_dram;
  c1_dram.N = 32, c1_dram.C = 32, c1_dram.K = 128, c1_dram.H = c1_dram.W = 56;
  kernels::Conv2dShape dw = c3;  // MobileNet's expanded depthwise
  dw.C = dw.K = dw.group = 144;
  // The same late in the network (7x7 planes): against the large planes, it tells the fixed
  // cost per plane from the cost per output (perf_cpu.cpp).
  kernels::Conv2dShape dw_small = dw;
  dw_small.C = dw_small.K = dw_small.group = 960;
  dw_small.H = dw_small.W = 7;
  kernels::Conv2dShape c3_14 = c3;  // ResNet's layer3 3x3, where pixel-gemm is chosen
  c3_14.C = c3_14.K = 256;
  c3_14.H = c3_14.W = 14;
  m.kernels.clear();
  m.kernels.push_back(conv_rate("conv_gemm", ConvTactic::Gemm, c3, opt));
  m.kernels.push_back(conv_rate("conv_direct", ConvTactic::Direct, c3, opt));
  m.kernels.push_back(conv_rate("conv_pixel-gemm", ConvTactic::PixelGemm, c3_14, opt));
  m.kernels.push_back(conv_rate("conv_pointwise", ConvTactic::Pointwise, c1, opt));
  m.kernels.push_back(conv_rate("conv_pointwise_dram", ConvTactic::Pointwise, c1_dram, opt));
  m.kernels.push_back(conv_rate("conv_depthwise", ConvTactic::Depthwise, dw, opt));
  m.kernels.push_back(conv_rate("conv_depthwise_small", ConvTactic::Depthwise, dw_small, opt));
  const int64_t nr = kernels::kernel_table().gemm.nr;
  m.kernels.push_back(gemm_rate("gemm", 128, 768, 768, opt));
  // One row against one column panel, a long K: the shortest time a tile's K step takes when
  // its few accumulators each wait for their previous FMA (perf_tiles.h); B (256 KiB) in L2.
  m.kernels.push_back(gemm_rate("gemm_row", 1, nr, 2048, opt));
  // The smallest GEMM and convolution calls: the fixed cost of a call (perf_cpu.h).
  m.kernels.push_back(gemm_rate("gemm_call", 1, 1, 1, opt));
  m.kernels.push_back(conv_call_rate(opt));
  // Pooling like ResNet's stem (large planes) and on 7x7 planes: per-plane cost vs per vector.
  m.kernels.push_back(pool_rate("pool", 64, 112, 2, opt));
  m.kernels.push_back(pool_rate("pool_small", 512, 7, 1, opt));
  m.kernels.push_back(reference_rate("reference_pool", "MaxPool", {{1, 64, 112, 112}},
                                     {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                      {"strides", std::vector<int64_t>{2, 2}},
                                      {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                                     opt));
  m.kernels.push_back(reference_rate("reference_elementwise", "Mul", {{1, 256, 28, 28}, {1, 256, 1, 1}}, {}, opt));
}

const std::vector<std::string>& kernel_rate_names() {
  static const std::vector<std::string> names = {
      "conv_gemm", "conv_direct",  "conv_pixel-gemm", "conv_pointwise", "conv_pointwise_dram", "conv_depthwise",         "conv_depthwise_small",
      "gemm",      "gemm_row",     "gemm_call",       "conv_call",      "pool",
      "pool_small", "reference_pool", "reference_elementwise"};
  return names;
}

const KernelRate* MachinePeaks::kernel(std::string_view name) const {
  for (const auto& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace kiln::analysis

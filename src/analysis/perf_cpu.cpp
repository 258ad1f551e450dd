// kiln's compiled runtime on a measured CPU: kernel time from measured kernel rates (perf_cpu.h).
#include "perf_cpu.h"

#include <algorithm>
#include <array>

#include "kiln/ir/error.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/pool.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/runtime/step.h"
#include "perf_tiles.h"

namespace kiln::analysis {

namespace {

bool is_windowed_pooling(const Node& n) {
  return n.domain.empty() && (n.op == "MaxPool" || n.op == "AveragePool" || n.op == "LpPool");
}

// The tactic lowering chose, or the one it would choose for a plain ONNX Conv (1x1 stride-1
// unpadded: pointwise; one channel per group: depthwise; else implicit GEMM).
std::string conv_tactic(const Node& n) {
  std::string t = n.attr_s("tactic", "");
  if (!t.empty()) return t;
  int64_t group = n.attr_i("group", 1);
  std::vector<int64_t> w = n.attr_ints("w_shape", {});
  if (w.empty() && n.input(1) && n.input(1)->shape.is_static()) w = n.input(1)->shape.static_dims();
  if (group > 1 && w.size() >= 2 && w[1] == 1 && w[0] == group) return "depthwise";
  std::vector<int64_t> k = n.attr_ints("kernel_shape", {});
  if (k.empty() && w.size() > 2) k.assign(w.begin() + 2, w.end());
  std::vector<int64_t> strides = n.attr_ints("strides", {}), pads = n.attr_ints("pads", {});
  bool ones = std::all_of(k.begin(), k.end(), [](int64_t v) { return v == 1; }) &&
              std::all_of(strides.begin(), strides.end(), [](int64_t v) { return v == 1; }) &&
              std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; });
  return group == 1 && ones && !k.empty() ? "pointwise" : "gemm";
}

// Threads scale a one-core rate as they scale the FMA peak.
double thread_scale(const Chip& chip) {
  const MachinePeaks& m = *chip.machine;
  return chip.vector_tflops * 1e3 / m.fp32_gflops_per_core;
}

// Kernel window (R, S) and strides (h, w) of a convolution or pooling node.
struct Window {
  int64_t R = 1, S = 1, stride_h = 1, stride_w = 1;
};
Window window_of(const Node& n) {
  Window w;
  std::vector<int64_t> k = n.attr_ints("kernel_shape", {});
  if (k.empty()) {
    std::vector<int64_t> ws = n.attr_ints("w_shape", {});
    // The window's weight: kiln.ExpandDepthwise's is its depthwise one, W2 (input 3).
    const Value* w = n.input(n.domain == "kiln" && n.op == "ExpandDepthwise" ? 3 : 1);
    if (ws.empty() && w && w->shape.is_static()) ws = w->shape.static_dims();
    if (ws.size() > 2) k.assign(ws.begin() + 2, ws.end());
  }
  if (k.size() == 2) w.R = k[0], w.S = k[1];
  std::vector<int64_t> st = n.attr_ints("strides", {});
  if (st.size() == 2) w.stride_h = st[0], w.stride_w = st[1];
  return w;
}

// Whether a MaxPool / AveragePool node runs the pool's row kernels (kernels/pool.h), on the
// geometry the runtime's fast kernel derives from it.
bool pool_runs_rows(const Node& n) {
  const std::optional<runtime::PoolGeometry> g = runtime::fast_pool_geometry(n);
  return g && kernels::pool2d_runs_rows(g->kind, g->shape);
}

// Static dims of a node's first output (empty if not static).
std::vector<int64_t> out_dims(const Node& n) {
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  return y && y->shape.is_static() ? y->shape.static_dims() : std::vector<int64_t>{};
}

// Seconds of a plane kernel with `planes` output planes issuing `vops` vector operations:
// planes x a + vops x b, a and b solved from the kernel's two calibrations (large and small
// planes); the large-plane calibration's seconds per vector operation alone when they do not
// give a non-negative split (noise).
double plane_kernel_seconds(double planes, double vops, const KernelRate& big, const KernelRate* small) {
  KILN_CHECK(big.seconds > 0 && big.vector_ops > 0, "kiln machine did not measure '", big.name,
             "' with its vector operations (kiln machine --refresh)");
  const double pl = static_cast<double>(big.planes), vl = static_cast<double>(big.vector_ops);
  if (small && small->seconds > 0 && small->vector_ops > 0) {
    const double ps = static_cast<double>(small->planes), vs = static_cast<double>(small->vector_ops);
    const double det = pl * vs - ps * vl;
    if (det != 0) {
      const double a = (big.seconds * vs - small->seconds * vl) / det;
      const double b = (pl * small->seconds - ps * big.seconds) / det;
      if (a >= 0 && b > 0) return planes * a + vops * b;
    }
  }
  return vops * big.seconds / vl;
}

const KernelRate& measured(const MachinePeaks& m, const std::string& name) {
  const KernelRate* r = m.kernel(name);
  KILN_CHECK(r != nullptr && r->seconds > 0, "kiln machine did not measure '", name, "' (kiln machine --refresh)");
  return *r;
}

double output_planes(const Node& n) {
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!y || !y->shape.is_static() || y->shape.rank() < 2) return 0;
  return static_cast<double>(y->shape.dims[0].value * y->shape.dims[1].value);
}

// One core's seconds of node n on the plane kernel calibrated as `big` (and `big`_small).
double plane_node_seconds(const Node& n, const MachinePeaks& m, const std::string& big) {
  return plane_kernel_seconds(output_planes(n), plane_vector_ops(n, kernels::kernel_table().simd_width),
                              measured(m, big), m.kernel(big + "_small"));
}

double constant_input_bytes(const Node& n) {
  double b = 0;
  for (const Value* v : n.inputs)
    if (v && v->initializer) b += static_cast<double>(v->initializer->nbytes());
  return b;
}

// The level (index into m.caches; m.caches.size() for DRAM) of the smallest cache holding `bytes`.
size_t level_holding(double bytes, const MachinePeaks& m) {
  const std::vector<int64_t> caps = cache_capacities(m);
  for (size_t l = 0; l < caps.size(); ++l)
    if (bytes <= static_cast<double>(caps[l])) return l;
  return caps.size();
}

double output_bytes(const Node& n) {
  double b = 0;
  for (const Value* o : n.outputs)
    if (o && o->shape.is_static()) b += static_cast<double>(*o->shape.numel()) * dtype_size(o->dtype);
  return b;
}

// The compute time of a GEMM-shaped kernel of class `cls` with tiling `g`: its calibration's
// rate scaled by register-tile efficiency (perf_tiles.h), capped at the FMA peak; one core.
double gemm_rate_gflops(const MachinePeaks& m, const std::string& cls, const GemmGeometry& g) {
  const KernelRate& r = measured(m, cls);
  KILN_CHECK(r.gflops_one_core > 0, "kiln machine did not measure '", cls, "' (kiln machine --refresh)");
  const MicroKernel mk = micro_kernel(m, cls == "conv_direct");
  const double rel = tile_efficiency(g.rows, g.cols, mk) / tile_efficiency(r.rows, r.cols, mk);
  return std::min(r.gflops_one_core * rel, m.fp32_gflops_per_core);
}

}  // namespace

std::vector<int64_t> cache_capacities(const MachinePeaks& m) {
  std::vector<int64_t> caps;
  for (const auto& c : m.caches) caps.push_back(c.level == "L3" ? c.working_set_bytes : c.cache_bytes);
  if (caps.size() >= static_cast<size_t>(kMaxLevels)) caps.resize(kMaxLevels - 1);
  return caps;
}

double dram_traffic_bytes(double read, double written) { return read + 2 * written; }

double dram_raw_gbs(double triad_gbs) { return triad_gbs * 32.0 / 24.0; }

double overlapped_seconds(double compute_s, double memory_s, double dram_s, double overlap) {
  return std::max(compute_s, memory_s) + (1 - overlap) * std::min(compute_s, dram_s);
}

double dram_overlap(const MachinePeaks& m) {
  const KernelRate& cal = measured(m, "conv_pointwise_dram");
  const double flops = cal.gflops_one_core * cal.seconds * 1e9, bytes = cal.gbs_one_core * cal.seconds * 1e9;
  KILN_CHECK(flops > 0 && cal.bytes_written > 0 && m.dram_gbs_one_core > 0,
             "kiln machine did not measure 'conv_pointwise_dram' with its bytes written (kiln machine --refresh)");
  const double c = flops / (gemm_rate_gflops(m, "conv_pointwise", {cal.rows, cal.cols, 1}) * 1e9);
  const double d = dram_traffic_bytes(bytes - cal.bytes_written, cal.bytes_written) /
                   (dram_raw_gbs(m.dram_gbs_one_core) * 1e9);
  return std::clamp((c + d - cal.seconds) / std::min(c, d), 0.0, 1.0);
}

namespace {

// The direct tactic's tiling of `images` outputs of K channels and OH x OW pixels: rows of OW
// pixels, or all pixels as one row (conv.h).
GemmGeometry direct_geometry(int64_t images, int64_t K, int64_t OH, int64_t OW) {
  const int mr = static_cast<int>(kernels::kernel_table().conv_shape.mr);
  if (kernels::conv_direct_wraps(mr, OH, OW)) return GemmGeometry{OH * OW, K, images};
  // Wide tiles (half the pixels, twice the channels): the accumulators of 2 OW rows by nr.
  if (kernels::conv_direct_wide(mr, OW)) return GemmGeometry{2 * OW, (K + 1) / 2, images * OH};
  return GemmGeometry{OW, K, images * OH};
}

// A kiln.ExpandDepthwise's expand 1x1 (C -> E over N x H x W pixels): its multiply-adds and its
// tiling. Zero FLOPs when the dims are not known.
struct ExpandPart {
  double flops = 0;
  GemmGeometry g;
};
ExpandPart expand_part(const Node& n) {
  ExpandPart e;
  const Value* x = n.input(0);
  std::vector<int64_t> w1 = n.attr_ints("expand_w_shape", {});  // packed: W1's logical dims
  if (w1.empty() && n.input(1) && n.input(1)->shape.is_static()) w1 = n.input(1)->shape.static_dims();
  if (!x || !x->shape.is_static() || x->shape.rank() != 4 || w1.size() != 4) return e;
  const std::vector<int64_t> d = x->shape.static_dims();
  e.flops = 2.0 * static_cast<double>(d[0] * d[1] * w1[0] * d[2] * d[3]);
  e.g = direct_geometry(d[0], w1[0], d[2], d[3]);
  return e;
}

// A kiln.DepthwiseProject's two halves: one core's seconds of its depthwise windows on the plane
// kernel (the depthwise half as a node of its own over an output of the depthwise dims), and the
// projection 1x1's multiply-adds and tiling. Zero when the dims are not known.
struct DepthwiseProjectParts {
  double depthwise_s = 0, project_flops = 0;
  GemmGeometry g;
};
DepthwiseProjectParts depthwise_project_parts(const Node& n, const MachinePeaks& m) {
  DepthwiseProjectParts parts;
  const Value* x = n.input(0);
  const std::vector<int64_t> y = out_dims(n);
  if (!x || !x->shape.is_static() || x->shape.rank() != 4 || y.size() != 4) return parts;
  const std::vector<int64_t> xd = x->shape.static_dims();
  Value mid;
  mid.dtype = DType::f32, mid.shape = Shape::of({xd[0], xd[1], y[2], y[3]});
  Node d = ops::depthwise_half(n);
  d.inputs = {n.inputs[0], n.inputs[1]};
  d.outputs = {&mid};
  parts.depthwise_s = plane_node_seconds(d, m, "conv_depthwise");
  parts.project_flops = 2.0 * static_cast<double>(y[0] * y[1] * xd[1] * y[2] * y[3]);
  parts.g = direct_geometry(y[0], y[1], y[2], y[3]);
  return parts;
}

// A kiln.StemDepthwiseProject's parts: the stem's multiply-adds and tiling (as a direct
// convolution's), and the pair after it as depthwise_project_parts reads a kiln.DepthwiseProject
// over the stem's output. Zero when the dims are not known.
struct StemParts {
  double stem_flops = 0;
  GemmGeometry g;
  DepthwiseProjectParts pair;
};
StemParts stem_depthwise_project_parts(const Node& n, const MachinePeaks& m) {
  StemParts parts;
  const Value* x = n.input(0);
  std::vector<int64_t> ws = n.attr_ints("stem_w_shape", {});  // packed: Ws's logical dims
  if (ws.empty() && n.input(1) && n.input(1)->shape.is_static()) ws = n.input(1)->shape.static_dims();
  if (!x || !x->shape.is_static() || x->shape.rank() != 4 || ws.size() != 4) return parts;
  const std::vector<int64_t> xd = x->shape.static_dims();
  const kernels::Conv2dShape s = ops::fused_conv_shape(ops::stem_half(n), xd, ws);
  parts.stem_flops = 2.0 * static_cast<double>(s.N * s.K * s.out_h() * s.out_w() * s.C * s.R * s.S);
  parts.g = direct_geometry(s.N, s.K, s.out_h(), s.out_w());
  Value stem;
  stem.dtype = DType::f32, stem.shape = Shape::of({s.N, s.K, s.out_h(), s.out_w()});
  Node q;
  q.op = "DepthwiseProject", q.domain = n.domain, q.name = n.name;
  for (const auto& [k, v] : n.attrs)
    if (k.rfind("stem_", 0) != 0) q.attrs[k] = v;
  q.inputs = {&stem};
  for (size_t i = 3; i < n.inputs.size(); ++i) q.inputs.push_back(n.inputs[i]);
  q.outputs = n.outputs;
  parts.pair = depthwise_project_parts(q, m);
  return parts;
}

}  // namespace

bool has_kernel_rates(const Chip& chip) { return chip.machine && !chip.machine->kernels.empty(); }

std::string cpu_kernel_class(const Node& n) {
  bool kiln_op = n.domain == "kiln";
  if ((kiln_op && n.op == "FusedConv") || (n.domain.empty() && n.op == "Conv")) return "conv_" + conv_tactic(n);
  if (kiln_op && n.op == "ExpandDepthwise") return "expand_depthwise";
  if (kiln_op && n.op == "DepthwiseProject") return "depthwise_project";
  if (kiln_op && n.op == "StemDepthwiseProject") return "stem_depthwise_project";
  if ((kiln_op && (n.op == "FusedMatMul" || n.op == "Attention")) ||
      (n.domain.empty() && (n.op == "MatMul" || n.op == "Gemm")))
    return "gemm";
  // The fast f32 pooling kernel (phase planes, like depthwise); int8 pooling is another kernel.
  if (n.domain.empty() && (n.op == "MaxPool" || n.op == "AveragePool") && n.input(0) && n.input(0)->dtype == DType::f32 &&
      runtime::find_fast_kernel(n.domain, n.op))
    return "pool";
  if (runtime::find_fast_kernel(n.domain, n.op)) return "fma_peak";
  return is_windowed_pooling(n) ? "reference_pool" : "reference_elementwise";
}

GemmGeometry gemm_geometry(const Node& n, const std::string& cls) {
  GemmGeometry g;
  const std::vector<int64_t> y = out_dims(n);
  if (cls.rfind("conv_", 0) == 0 && cls != "conv_depthwise") {
    if (y.size() != 4) return g;
    const int64_t N = y[0], K = y[1], OH = y[2], OW = y[3], group = n.attr_i("group", 1);
    if (cls == "conv_pixel-gemm") return {OH * OW, K / group, N * group};
    if (cls == "conv_direct") return direct_geometry(N * group, K / group, OH, OW);
    return {K / group, OH * OW, N * group};  // gemm, pointwise
  }
  if (cls != "gemm" || y.empty()) return g;
  // An attention writing Y through a view (fold-attention-views) has the [B, H, Sq, Dv] products
  // of the plain one, whatever shape its output has.
  if (n.domain == "kiln" && n.op == "Attention" && ops::attention_has_view(n, 3)) {
    const ops::AttentionView v = ops::attention_view(n, 3, y);
    return {v.dims[2], v.dims[3], v.dims[0] * v.dims[1]};
  }
  const int64_t cols = y.back();
  const Value* b = n.input(1);
  const bool weight = b && b->initializer;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < y.size(); ++i) rows *= y[i];
  // A 2-D weight on the right: every leading dim of A is a row of one GEMM. Otherwise (both
  // operands activations: attention's batched products) one GEMM per leading index.
  if (weight || y.size() < 2) return {rows, cols, 1};
  const int64_t per = y[y.size() - 2];
  return {per, cols, per > 0 ? rows / per : 0};
}

double plane_vector_ops(const Node& n, int64_t lanes) {
  const std::vector<int64_t> y = out_dims(n);
  if (y.size() != 4 || lanes <= 0) return 0;
  const Window w = window_of(n);
  const int64_t per_plane = (y[2] * ((y[3] + lanes - 1) / lanes) + 7) / 8 * 8;
  return static_cast<double>(y[0] * y[1]) * static_cast<double>(per_plane * w.R * w.S) * (w.stride_w == 2 ? 2.0 : 1.0);
}

OpTime cpu_kernel_time(const Node& n, double flops, double bytes, double model_weight_bytes, const Chip& chip,
                       const KernelResidency* where) {
  KILN_CHECK(has_kernel_rates(chip), chip.id, ": no measured kernel rates (kiln machine --refresh)");
  const MachinePeaks& m = *chip.machine;
  std::string cls = cpu_kernel_class(n);
  OpTime t;
  t.launch_s = chip.launch_overhead_us * 1e-6;
  double scale = thread_scale(chip);
  bool reference = cls.rfind("reference_", 0) == 0;
  if (n.domain.empty() && (n.op == "Gather" || n.op == "GatherElements" || n.op == "GatherND")) {
    // The op table counts the whole table as read; a gather touches only the rows it copies
    // (read once, written once) and its indices.
    double touched = 0;
    for (const Value* o : n.outputs)
      if (o && o->shape.is_static()) touched += 2.0 * static_cast<double>(*o->shape.numel()) * dtype_size(o->dtype);
    if (const Value* idx = n.input(1); idx && idx->shape.is_static())
      touched += static_cast<double>(*idx->shape.numel()) * dtype_size(idx->dtype);
    bytes = std::min(bytes, touched);
  }
  if (reference) {
    const KernelRate* r = m.kernel(cls);
    KILN_CHECK(r != nullptr && r->gflops_one_core > 0, chip.id, ": kiln machine did not measure '", cls,
               "' (kiln machine --refresh)");
    t.compute_s = flops / (r->gflops_one_core * scale * 1e9);
    t.memory_s = bytes / (r->gbs_one_core * scale * 1e9);
    return t;
  }
  // The fixed cost of entering the kernel (measured on its smallest call), on top of the
  // dispatch: convolutions (any tactic) and GEMMs; one call per node.
  if (cls.rfind("conv_", 0) == 0 || cls == "gemm" || cls == "expand_depthwise" || cls == "depthwise_project" ||
      cls == "stem_depthwise_project")
    if (const KernelRate* call = m.kernel(cls == "gemm" ? "gemm_call" : "conv_call")) t.launch_s += call->seconds;
  if (cls == "fma_peak") {
    t.compute_s = flops / (m.fp32_gflops_per_core * scale * 1e9);
  } else if (cls == "pool" && pool_runs_rows(n)) {
    // The row kernels have no per-plane set-up: the bytes moved at the large calibration's rate
    // (resnet's 3x3/2 pool, one of them). On the plane formula digits_cnn's 2x2 pool over 512
    // planes of 4x4 outputs was predicted at 0.070 ms and ran in 0.006.
    t.compute_s = bytes / (measured(m, "pool").gbs_one_core * scale * 1e9);
  } else if (cls == "expand_depthwise") {
    // Two kernels one after the other on each band (kernels::expand_depthwise): the expand 1x1
    // at the direct tactic's rate for its tiling, then the depthwise windows as the plane
    // kernel runs them. (At the FMA peak, as the other fast kernels, mobilenet_v2's three pairs
    // were predicted at 0.60-0.75 of their measured time at one thread, 0.55-0.66 at two; now
    // 1.01-1.08 and 0.80-1.00: `kiln profile --explain`.) The expanded tensor stays in the
    // thread's L2: the op's bytes leave it out, so the memory time is the pair's input, weights
    // and output.
    const ExpandPart e = expand_part(n);
    t.compute_s = e.flops / (gemm_rate_gflops(m, "conv_direct", e.g) * scale * 1e9) +
                  plane_node_seconds(n, m, "conv_depthwise") / scale;
  } else if (cls == "depthwise_project") {
    // The same two kernels the other way round (kernels::depthwise_project): the depthwise
    // windows on the plane kernel, then the 1x1 at the direct tactic's rate for its tiling. The
    // depthwise output stays in the thread's cache and the op's bytes leave it out.
    const DepthwiseProjectParts dp = depthwise_project_parts(n, m);
    t.compute_s =
        dp.depthwise_s / scale + dp.project_flops / (gemm_rate_gflops(m, "conv_direct", dp.g) * scale * 1e9);
  } else if (cls == "stem_depthwise_project") {
    // The stem at the direct tactic's rate for its tiling, then the pair as above
    // (kernels::stem_depthwise_project): the stem's output and the depthwise rows stay in the
    // thread's L2, and the op's bytes leave them out.
    const StemParts sp = stem_depthwise_project_parts(n, m);
    t.compute_s = sp.stem_flops / (gemm_rate_gflops(m, "conv_direct", sp.g) * scale * 1e9) +
                  sp.pair.depthwise_s / scale +
                  sp.pair.project_flops / (gemm_rate_gflops(m, "conv_direct", sp.pair.g) * scale * 1e9);
  } else if (cls == "conv_depthwise" || cls == "pool") {
    t.compute_s = plane_node_seconds(n, m, cls == "pool" ? "pool" : "conv_depthwise") / scale;
  } else {
    // Register-tile efficiency of this node's tiling against the calibration's (perf_tiles.h).
    t.compute_s = flops / (gemm_rate_gflops(m, cls, gemm_geometry(n, cls)) * scale * 1e9);
  }
  // The op table's bytes by level (perf_residency.h when the plan is known: each category split
  // as the planned tensors' bytes are; else activations at the level holding all of the
  // kernel's, weights at the level holding all of the model's). Cache levels at their read
  // bandwidth; from DRAM, a written line is first read (write-allocate: reads + 2 x writes) at the
  // triad's raw bandwidth, and the part of that time the kernel does not hide behind its
  // arithmetic is added (overlap rule).
  const double weights = std::min(constant_input_bytes(n), bytes), activations = bytes - weights;
  const double written = std::min(output_bytes(n), activations), read = activations - written;
  const size_t dram = std::min(m.caches.size(), static_cast<size_t>(kMaxLevels - 1));
  std::array<double, kMaxLevels> rd{}, wr{};
  auto split = [&](double total, const std::array<double, kMaxLevels>& planned,
                   const std::array<double, kMaxLevels>& fallback, size_t level, std::array<double, kMaxLevels>& into) {
    const std::array<double, kMaxLevels>* by = &planned;
    double sum = 0;
    for (double b : planned) sum += b;
    if (sum <= 0) {
      by = &fallback, sum = 0;
      for (double b : fallback) sum += b;
    }
    if (!where || sum <= 0) {
      into[level] += total;
      return;
    }
    for (size_t l = 0; l <= dram; ++l) into[l] += total * (*by)[l] / sum;
  };
  const KernelResidency none;
  const KernelResidency& w = where ? *where : none;
  const size_t act_level = level_holding(activations, m), weight_level = level_holding(model_weight_bytes, m);
  split(read, w.read, w.written, act_level, rd);
  split(written, w.written, w.read, act_level, wr);
  split(weights, w.weights, w.weights, weight_level, rd);
  double cache_s = 0;
  for (size_t l = 0; l < dram; ++l)
    if (rd[l] + wr[l] > 0) cache_s += (rd[l] + wr[l]) / (m.caches[l].gbs_one_core * std::max(chip.threads, 1) * 1e9);
  const double dram_s = dram_traffic_bytes(rd[dram], wr[dram]) / (dram_raw_gbs(chip.memory_gbs) * 1e9);
  t.memory_s = cache_s + dram_s;
  if (dram_s > 0) t.stall_s = overlapped_seconds(t.compute_s, t.memory_s, dram_s, dram_overlap(m)) -
                               std::max(t.compute_s, t.memory_s);
  return t;
}

}  // namespace kiln::analysis

// kiln's compiled runtime on a measured CPU: kernel time from measured kernel rates (perf_cpu.h).
#include "perf_cpu.h"

#include <algorithm>

#include "kiln/ir/error.h"
#include "kiln/runtime/step.h"

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

// Seconds of a depthwise convolution with `planes` output planes and `flops`: planes x a + flops x b
// from the two calibrations; the large-plane rate alone when they do not give a positive split
// (noise).
double depthwise_seconds(double planes, double flops, const MachinePeaks& m) {
  const KernelRate* big = m.kernel("conv_depthwise");
  const KernelRate* small = m.kernel("conv_depthwise_small");
  KILN_CHECK(big && big->gflops_one_core > 0, "kiln machine did not measure 'conv_depthwise' (kiln machine --refresh)");
  double fl = big->gflops_one_core * 1e9 * big->seconds, fs = small ? small->gflops_one_core * 1e9 * small->seconds : 0;
  if (small && small->seconds > 0 && big->seconds > 0) {
    double pl = static_cast<double>(big->planes), ps = static_cast<double>(small->planes);
    double det = pl * fs - ps * fl;
    if (det != 0) {
      double a = (big->seconds * fs - small->seconds * fl) / det;
      double b = (pl * small->seconds - ps * big->seconds) / det;
      if (a >= 0 && b > 0) return planes * a + flops * b;
    }
  }
  return flops / (big->gflops_one_core * 1e9);
}

double output_planes(const Node& n) {
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!y || !y->shape.is_static() || y->shape.rank() < 2) return 0;
  return static_cast<double>(y->shape.dims[0].value * y->shape.dims[1].value);
}

double constant_input_bytes(const Node& n) {
  double b = 0;
  for (const Value* v : n.inputs)
    if (v && v->initializer) b += static_cast<double>(v->initializer->nbytes());
  return b;
}

double cache_bandwidth_gbs(double bytes, const Chip& chip) {
  const MachinePeaks& m = *chip.machine;
  for (const auto& c : m.caches) {
    int64_t holds = c.level == "L3" ? c.working_set_bytes : c.cache_bytes;
    if (bytes <= static_cast<double>(holds)) return c.gbs_one_core * std::max(chip.threads, 1);
  }
  return chip.memory_gbs;
}

}  // namespace

bool has_kernel_rates(const Chip& chip) { return chip.machine && !chip.machine->kernels.empty(); }

std::string cpu_kernel_class(const Node& n) {
  bool kiln_op = n.domain == "kiln";
  if ((kiln_op && n.op == "FusedConv") || (n.domain.empty() && n.op == "Conv")) return "conv_" + conv_tactic(n);
  if ((kiln_op && (n.op == "FusedMatMul" || n.op == "Attention")) ||
      (n.domain.empty() && (n.op == "MatMul" || n.op == "Gemm")))
    return "gemm";
  if (runtime::find_fast_kernel(n.domain, n.op)) return "fma_peak";
  return is_windowed_pooling(n) ? "reference_pool" : "reference_elementwise";
}

OpTime cpu_kernel_time(const Node& n, double flops, double bytes, double model_weight_bytes, const Chip& chip) {
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
  if (cls == "fma_peak") {
    t.compute_s = flops / (m.fp32_gflops_per_core * scale * 1e9);
  } else if (cls == "conv_depthwise") {
    t.compute_s = depthwise_seconds(output_planes(n), flops, m) / scale;
  } else {
    const KernelRate* r = m.kernel(cls);
    KILN_CHECK(r != nullptr && r->gflops_one_core > 0, chip.id, ": kiln machine did not measure '", cls,
               "' (kiln machine --refresh)");
    t.compute_s = flops / (r->gflops_one_core * scale * 1e9);
  }
  double weights = std::min(constant_input_bytes(n), bytes), activations = bytes - weights;
  t.memory_s = activations / (cache_bandwidth_gbs(activations, chip) * 1e9) +
               weights / (cache_bandwidth_gbs(model_weight_bytes, chip) * 1e9);
  return t;
}

}  // namespace kiln::analysis

// `kiln perf --llm`: the formulas in llm_model.h.
#include "kiln/analysis/llm_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "kiln/ir/error.h"

namespace kiln::analysis {

namespace {
// Kernels a fused serving runtime launches per layer: QKV GEMM, attention, O GEMM, two
// norms (with their residual adds), gate/up GEMM, activation x up, down GEMM.
constexpr int64_t kKernelsPerLayer = 8;
constexpr int64_t kKernelsOutsideLayers = 2;  // final norm, LM head
}  // namespace

double LlmConfig::layer_params() const {
  double h = static_cast<double>(hidden), kv = static_cast<double>(kv_dim());
  return 2 * h * h + 2 * h * kv + (gated_mlp ? 3.0 : 2.0) * h * static_cast<double>(ffn);
}

double LlmConfig::params() const {
  double table = static_cast<double>(vocab) * static_cast<double>(hidden);
  return static_cast<double>(layers) * layer_params() + table + (tied_embeddings ? 0 : table);
}

Bound LlmStep::bound() const {
  if (overhead_ms + comm_ms > std::max(compute_ms, memory_ms)) return Bound::overhead;
  return compute_ms >= memory_ms ? Bound::compute : Bound::memory;
}

double ring_allreduce_bytes(double bytes, int64_t devices) {
  KILN_CHECK(devices >= 1, "all-reduce over ", devices, " devices");
  double n = static_cast<double>(devices);
  return 2 * (n - 1) / n * bytes;
}

namespace {

// Time of one ring all-reduce of `bytes` over n devices: 2(n-1) steps, each paying the link
// latency, and the per-device volume at the link's one-way bandwidth.
double allreduce_ms(double bytes, int64_t n, double link_gbs, double latency_us) {
  if (n <= 1) return 0;
  KILN_CHECK(link_gbs > 0, "tensor parallelism needs a link bandwidth (--link nvlink|pcie|GBPS)");
  return (2.0 * static_cast<double>(n - 1) * latency_us * 1e-6 + ring_allreduce_bytes(bytes, n) / (link_gbs * 1e9)) * 1e3;
}

LlmStep step(double flops, double bytes, int64_t tp, const Chip& chip, double peak, int64_t kernels, double comm_ms) {
  LlmStep s;
  s.flops = flops;
  s.bytes = bytes;
  double n = static_cast<double>(tp);
  s.compute_ms = flops / (n * peak) * 1e3;
  s.memory_ms = bytes / (n * chip.memory_gbs * 1e9) * 1e3;
  s.overhead_ms = static_cast<double>(kernels) * chip.launch_overhead_us * 1e-3;
  s.comm_ms = comm_ms;
  return s;
}

}  // namespace

LlmTpRow llm_estimate(const LlmConfig& c, const Chip& chip, const LlmOptions& opt, int64_t batch, int64_t tp,
                      double link_gbs, double link_latency_us) {
  KILN_CHECK(batch >= 1 && tp >= 1 && opt.context >= 1, "llm: batch, tp and context must be at least 1");
  KILN_CHECK(c.heads % tp == 0, "--tp ", tp, ": does not divide heads=", c.heads, " (each device takes whole heads)");
  double p = precision_bytes(opt.precision);
  double peak = chip.peak_flops(opt.precision);
  double h = static_cast<double>(c.hidden), b = static_cast<double>(batch), T = static_cast<double>(opt.context);
  double L = static_cast<double>(c.layers), V = static_cast<double>(c.vocab);
  double layer_weights = L * c.layer_params() * p;
  double head_weights = h * V * p;  // the LM head reads a full vocab x hidden matrix, tied or not
  double kv_token = 2 * L * static_cast<double>(c.kv_dim()) * p;
  int64_t kernels = c.layers * kKernelsPerLayer + kKernelsOutsideLayers;

  LlmTpRow r;
  r.tp = tp;
  r.batch = batch;
  // Per layer, each GEMM reads its input rows and writes its output rows once.
  double act_per_token = L * p * (6 * h + 2 * static_cast<double>(c.kv_dim()) + (c.gated_mlp ? 3.0 : 2.0) * static_cast<double>(c.ffn));
  double prefill_flops = 2 * L * c.layer_params() * b * T + 2 * L * b * T * T * h + 2 * h * V * b;
  double prefill_bytes = layer_weights + head_weights + b * T * (kv_token + act_per_token);
  double message_prefill = b * T * h * p;
  r.allreduce_bytes_per_layer_prefill = 2 * ring_allreduce_bytes(message_prefill, tp);
  double prefill_comm = L * 2 * allreduce_ms(message_prefill, tp, link_gbs, link_latency_us);
  r.prefill = step(prefill_flops, prefill_bytes, tp, chip, peak, kernels, prefill_comm);

  double decode_flops = 2 * (L * c.layer_params() + h * V) * b + 4 * L * b * T * h;
  double decode_bytes = layer_weights + head_weights + b * T * kv_token + b * kv_token + b * act_per_token;
  double message = b * h * p;
  r.allreduce_bytes_per_layer = 2 * ring_allreduce_bytes(message, tp);
  r.allreduce_ms_per_layer = 2 * allreduce_ms(message, tp, link_gbs, link_latency_us);
  r.decode = step(decode_flops, decode_bytes, tp, chip, peak, kernels, L * r.allreduce_ms_per_layer);

  // Memory per device: weights split n ways (vocab-parallel embedding and head too); K/V
  // split by whole KV heads, replicated when there are fewer KV heads than devices.
  double table_bytes = V * h * p * (c.tied_embeddings ? 1 : 2);
  r.weights_bytes_per_device = (layer_weights + table_bytes) / static_cast<double>(tp);
  double kv_heads_per_device = std::ceil(static_cast<double>(c.kv_heads) / static_cast<double>(tp));
  double kv_seq_device = T * kv_token * kv_heads_per_device / static_cast<double>(c.kv_heads);
  r.kv_bytes_per_device = b * kv_seq_device;
  double free_bytes = static_cast<double>(chip.memory_bytes) - r.weights_bytes_per_device - static_cast<double>(chip.workspace_bytes);
  r.max_batch = free_bytes > 0 ? static_cast<int64_t>(std::floor(free_bytes / kv_seq_device)) : 0;
  r.fits = batch <= r.max_batch;
  return r;
}

LlmReport llm_predict(const LlmConfig& cfg, const Chip& chip, const LlmOptions& opt) {
  KILN_CHECK(!opt.batches.empty() && !opt.tp.empty(), "llm: no batch sizes or TP degrees");
  LlmReport r;
  r.cfg = cfg;
  r.chip = chip;
  r.opt = opt;
  std::string link = opt.link.empty() ? (chip.nvlink_gbs > 0 ? "nvlink" : "pcie") : opt.link;
  r.link_latency_us = chip.link_latency_us;
  if (link == "nvlink") {
    r.link_gbs = chip.nvlink_gbs;
  } else if (link == "pcie") {
    r.link_gbs = chip.pcie_gbs;
  } else {
    char* end = nullptr;
    r.link_gbs = std::strtod(link.c_str(), &end);
    KILN_CHECK(end && *end == '\0' && r.link_gbs > 0, "--link: '", link, "' is not nvlink, pcie or GB/s each way");
    link += " GB/s";
  }
  r.link_name = link;
  bool needs_link = std::any_of(opt.tp.begin(), opt.tp.end(), [](int64_t n) { return n > 1; });
  KILN_CHECK(!needs_link || r.link_gbs > 0, chip.id, " has no ", link, " bandwidth: give --link GBPS");
  double p = precision_bytes(opt.precision);
  r.weight_bytes = cfg.params() * p;
  r.kv_bytes_per_token = 2.0 * static_cast<double>(cfg.layers) * static_cast<double>(cfg.kv_dim()) * p;
  r.kv_bytes_per_sequence = r.kv_bytes_per_token * static_cast<double>(opt.context);
  for (int64_t b : opt.batches) r.by_batch.push_back(llm_estimate(cfg, chip, opt, b, opt.tp.front(), r.link_gbs, r.link_latency_us));
  for (int64_t n : opt.tp) r.by_tp.push_back(llm_estimate(cfg, chip, opt, opt.batches.front(), n, r.link_gbs, r.link_latency_us));
  return r;
}

}  // namespace kiln::analysis

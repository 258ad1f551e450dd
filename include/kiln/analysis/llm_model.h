// `kiln perf --llm`: a decoder-only transformer on a chip, from its shape alone (or counted
// from an ONNX decoder): prefill time (GEMMs over the context, compute-bound) against decode
// time per token (every weight and the KV cache read per step, memory-bound at small batch),
// KV-cache bytes, the largest batch that fits, and tensor parallelism: weights and KV per
// device and the two ring all-reduces per layer over a link.
//
// Formulas (h = hidden, d = h / heads, kv = kv_heads * d, L = layers, T = context, b = batch,
// p = bytes per element at the precision, n = TP degree):
//   params/layer = 2 h^2 + 2 h kv (Q, O; K, V) + (3 if gated else 2) h ffn
//   KV bytes/token = 2 L kv p;  per sequence = T x that
//   prefill FLOPs = 2 (L params/layer) b T + 2 L b T^2 h (causal attention) + 2 h vocab b (last logits)
//   decode FLOPs/token = 2 (L params/layer + h vocab) b + 4 L b T h
//   decode bytes/token = all weights read once + b KV sequences read + b tokens of KV written
//   time = max(FLOPs / (n peak), bytes / (n bandwidth)) + kernels x launch + all-reduces
//   all-reduce per layer (decode): 2 x ring all-reduce of b h p bytes; each moves 2(n-1)/n of
//   the message per device, in 2(n-1) steps: time = 2(n-1) latency + volume / link bandwidth
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/analysis/chip.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/ir/graph.h"

namespace kiln::analysis {

struct LlmConfig {
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  bool gated_mlp = true;         // SwiGLU (gate, up, down); false: GELU MLP (up, down) as GPT-2
  bool tied_embeddings = false;  // the LM head reuses the embedding table (stored once)
  std::string source;            // "--llm" or the model it was counted from

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  double layer_params() const;
  double params() const;         // layers + embedding + LM head (unless tied); norms left out
};

// "layers=32,hidden=4096,heads=32,kv_heads=8,ffn=11008,vocab=32000[,mlp=gated|plain][,tied=0|1]";
// kv_heads defaults to heads. Errors name the key.
LlmConfig parse_llm_spec(const std::string& spec);
// Counts layers (Softmax nodes), hidden and vocab (the largest embedding table feeding a
// Gather), heads (the Softmax input's head dim), kv_heads and ffn (widths of the weight
// matrices) from an ONNX decoder. Errors say what could not be found.
LlmConfig llm_config_from_model(const Model& m);

struct LlmOptions {
  int64_t context = 2048;
  std::vector<int64_t> batches = {1};
  std::vector<int64_t> tp = {1};
  Precision precision = Precision::bf16;
  std::string link = "";          // "nvlink", "pcie", or GB/s each way; "" = nvlink if the chip has it, else pcie
};

struct LlmStep {                  // one prefill or one decode step
  double flops = 0, bytes = 0;
  double compute_ms = 0, memory_ms = 0, overhead_ms = 0, comm_ms = 0;
  double ms() const { return std::max(compute_ms, memory_ms) + overhead_ms + comm_ms; }
  Bound bound() const;
};

struct LlmTpRow {
  int64_t tp = 1;
  int64_t batch = 1;
  double weights_bytes_per_device = 0;
  double kv_bytes_per_device = 0;          // b sequences at the full context
  double allreduce_bytes_per_layer = 0;    // decode step: per device, both all-reduces
  double allreduce_ms_per_layer = 0;
  double allreduce_bytes_per_layer_prefill = 0;
  LlmStep prefill, decode;
  int64_t max_batch = 0;                   // sequences at the full context that fit per device
  bool fits = true;
};

struct LlmReport {
  LlmConfig cfg;
  Chip chip;
  LlmOptions opt;
  std::string link_name;
  double link_gbs = 0, link_latency_us = 0;
  double weight_bytes = 0;
  double kv_bytes_per_token = 0, kv_bytes_per_sequence = 0;
  std::vector<LlmTpRow> by_batch;          // first TP degree, every batch
  std::vector<LlmTpRow> by_tp;             // first batch, every TP degree
};

// Ring all-reduce: bytes each device sends (and receives) for a message of `bytes`.
double ring_allreduce_bytes(double bytes, int64_t devices);

LlmTpRow llm_estimate(const LlmConfig& cfg, const Chip& chip, const LlmOptions& opt, int64_t batch, int64_t tp,
                      double link_gbs, double link_latency_us);
LlmReport llm_predict(const LlmConfig& cfg, const Chip& chip, const LlmOptions& opt);

std::string llm_to_text(const LlmReport& r);
std::string llm_to_json(const LlmReport& r);

}  // namespace kiln::analysis

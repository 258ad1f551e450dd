// `kiln perf --llm` against hand calculations: parameter and KV-cache bytes of a
// Llama-2-7B-shaped model, batch-1 decode on an A100 (memory-bound: ~weights / bandwidth),
// prefill (compute-bound), ring all-reduce volume and time, the largest batch that fits,
// KV replication under wide TP, spec errors, and the shape counted from GPT-2's ONNX.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/analysis/llm_model.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/error.h"

namespace kiln::analysis {
namespace {

namespace fs = std::filesystem;

Chip shipped(const std::string& name) { return resolve_chip(name, {std::string(KILN_SOURCE_DIR) + "/data/chips"}); }

LlmConfig llama2_7b() { return parse_llm_spec("layers=32,hidden=4096,heads=32,kv_heads=32,ffn=11008,vocab=32000"); }

LlmOptions fp16(int64_t context) {
  LlmOptions o;
  o.context = context;
  o.precision = Precision::fp16;
  return o;
}

TEST(LlmModel, Llama2ParamsAndKvBytes) {
  LlmConfig c = llama2_7b();
  // 32 x (2*4096^2 + 2*4096*4096 + 3*4096*11008) + 2 * 32000*4096: Llama-2-7B's 6,738,415,616
  // less its 266,240 norm weights.
  EXPECT_DOUBLE_EQ(c.params(), 6738149376.0);
  LlmReport r = llm_predict(c, shipped("a100"), fp16(4096));
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 2.0 * 32 * 32 * 128 * 2);  // 512 KiB
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_sequence, 524288.0 * 4096);        // 2 GiB
  EXPECT_DOUBLE_EQ(r.weight_bytes, 6738149376.0 * 2);
  // Grouped-query attention with 8 KV heads keeps a quarter of that.
  LlmConfig gqa = parse_llm_spec("layers=32,hidden=4096,heads=32,kv_heads=8,ffn=11008,vocab=32000");
  EXPECT_DOUBLE_EQ(llm_predict(gqa, shipped("a100"), fp16(4096)).kv_bytes_per_token, 131072.0);
}

// Batch-1 decode of a 7B model on an A100 reads every weight once per token:
// 13.48 GB / 2039 GB/s = 6.6 ms; its 13.5 GFLOP take 0.04 ms at 312 TFLOP/s.
TEST(LlmModel, Decode7BOnA100IsMemoryBoundAtWeightsOverBandwidth) {
  LlmConfig c = llama2_7b();
  Chip a100 = shipped("a100");
  LlmTpRow row = llm_estimate(c, a100, fp16(1), 1, 1, 0, 0);
  EXPECT_EQ(row.decode.bound(), Bound::memory);
  double weights_over_bw_ms = c.params() * 2 / 2039e9 * 1e3;
  EXPECT_NEAR(weights_over_bw_ms, 6.609, 0.001);
  // The decode reads the layers and the LM head (the input embedding is a lookup of one row),
  // so the memory term sits just under all-weights / bandwidth.
  double read = (32 * c.layer_params() + 4096.0 * 32000) * 2;
  EXPECT_GT(row.decode.memory_ms, read / 2039e9 * 1e3);
  EXPECT_NEAR(row.decode.memory_ms, weights_over_bw_ms, 0.02 * weights_over_bw_ms);
  EXPECT_LT(row.decode.compute_ms, 0.01 * row.decode.memory_ms);
  // 258 kernels at 4 us of launch each come on top.
  EXPECT_NEAR(row.decode.overhead_ms, (32 * 8 + 2) * 4e-3, 1e-12);
  EXPECT_NEAR(row.decode.ms(), row.decode.memory_ms + row.decode.overhead_ms, 1e-12);
  EXPECT_EQ(row.decode.comm_ms, 0);
}

// Prefill of 2048 tokens: 2 * 6.48e9 * 2048 + 2 * 32 * 2048^2 * 4096 (causal attention)
// + the last token's logits = 27.6 TFLOP: 88.5 ms at 312 TFLOP/s, compute-bound.
TEST(LlmModel, PrefillIsComputeBound) {
  LlmConfig c = llama2_7b();
  LlmTpRow row = llm_estimate(c, shipped("a100"), fp16(2048), 1, 1, 0, 0);
  double flops = 2 * 32 * c.layer_params() * 2048 + 2.0 * 32 * 2048 * 2048 * 4096 + 2.0 * 4096 * 32000;
  EXPECT_DOUBLE_EQ(row.prefill.flops, flops);
  EXPECT_EQ(row.prefill.bound(), Bound::compute);
  EXPECT_NEAR(row.prefill.compute_ms, flops / 312e12 * 1e3, 1e-9);
  EXPECT_NEAR(row.prefill.compute_ms, 88.5, 0.5);
}

TEST(LlmModel, RingAllReduceVolumeAndTime) {
  EXPECT_DOUBLE_EQ(ring_allreduce_bytes(1000, 1), 0);
  EXPECT_DOUBLE_EQ(ring_allreduce_bytes(1000, 2), 1000);
  EXPECT_DOUBLE_EQ(ring_allreduce_bytes(1000, 4), 1500);
  EXPECT_DOUBLE_EQ(ring_allreduce_bytes(1000, 8), 1750);
  // Decode at batch 8, TP 4, fp16: each all-reduce carries 8 x 4096 x 2 = 64 KiB; per device
  // 2 x 3/4 x 64 KiB per layer. On the H100's NVLink (450 GB/s each way, 1 us per ring step):
  // 2 x (6 x 1 us + 49152 B / 450 GB/s).
  LlmConfig c = llama2_7b();
  Chip h100 = shipped("h100");
  LlmTpRow row = llm_estimate(c, h100, fp16(1024), 8, 4, h100.nvlink_gbs, h100.link_latency_us);
  EXPECT_DOUBLE_EQ(row.allreduce_bytes_per_layer, 2 * 1.5 * 65536);
  EXPECT_NEAR(row.allreduce_ms_per_layer, 2 * (6e-6 + 98304.0 / 450e9) * 1e3, 1e-12);
  EXPECT_NEAR(row.decode.comm_ms, 32 * row.allreduce_ms_per_layer, 1e-12);
  EXPECT_DOUBLE_EQ(row.weights_bytes_per_device, c.params() * 2 / 4);
  // PCIe instead (128 GB/s both ways -> 64 each way) takes longer.
  LlmOptions pcie = fp16(1024);
  pcie.batches = {8};
  pcie.tp = {1, 4};
  pcie.link = "pcie";
  LlmReport r = llm_predict(c, h100, pcie);
  EXPECT_EQ(r.link_gbs, 64);
  EXPECT_GT(r.by_tp[1].allreduce_ms_per_layer, row.allreduce_ms_per_layer);
  EXPECT_EQ(r.by_tp[0].allreduce_ms_per_layer, 0);
}

TEST(LlmModel, LargestBatchThatFits) {
  LlmConfig c = llama2_7b();
  Chip h100 = shipped("h100");
  LlmTpRow row = llm_estimate(c, h100, fp16(4096), 1, 1, 0, 0);
  // (80 GiB - 13.48 GB of weights - 32 MiB of workspace) / 2 GiB per sequence = 33.7
  double free_bytes = 80.0 * (1 << 30) - c.params() * 2 - 32.0 * (1 << 20);
  EXPECT_EQ(row.max_batch, static_cast<int64_t>(std::floor(free_bytes / (2.0 * (1 << 30)))));
  EXPECT_EQ(row.max_batch, 33);
  EXPECT_FALSE(llm_estimate(c, h100, fp16(4096), 34, 1, 0, 0).fits);
  // TP 2 halves weights and KV per device: more than twice the sequences fit.
  EXPECT_GT(llm_estimate(c, h100, fp16(4096), 1, 2, 450, 1).max_batch, 2 * row.max_batch);
}

TEST(LlmModel, FewerKvHeadsThanDevicesAreReplicated) {
  LlmConfig c = parse_llm_spec("layers=2,hidden=1024,heads=16,kv_heads=2,ffn=4096,vocab=1000");
  Chip h100 = shipped("h100");
  LlmTpRow tp2 = llm_estimate(c, h100, fp16(100), 1, 2, 450, 1);
  LlmTpRow tp8 = llm_estimate(c, h100, fp16(100), 1, 8, 450, 1);
  double kv_seq = 2.0 * 2 * 2 * 64 * 2 * 100;  // 2 layers x (K,V) x 2 heads x 64 x fp16 x 100 tokens
  EXPECT_DOUBLE_EQ(tp2.kv_bytes_per_device, kv_seq / 2);
  EXPECT_DOUBLE_EQ(tp8.kv_bytes_per_device, kv_seq / 2);  // still one whole KV head per device
  EXPECT_THROW(llm_estimate(c, h100, fp16(100), 1, 3, 450, 1), Error);  // 3 does not divide 16 heads
}

std::string spec_error(const std::string& spec) {
  try {
    parse_llm_spec(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LlmModel, SpecErrors) {
  EXPECT_EQ(spec_error("layers=2,hidden=64,heads=4,ffn=128"), "--llm: missing vocab=");
  EXPECT_EQ(spec_error("layers=2,hidden=64,heads=4,ffn=128,vocab=10,experts=8"),
            "--llm: unknown key 'experts' (layers, hidden, heads, kv_heads, ffn, vocab, mlp, tied)");
  EXPECT_EQ(spec_error("layers=2,hidden=64,heads=4,kv_heads=3,ffn=128,vocab=10"), "--llm: kv_heads=3 must divide heads=4");
  EXPECT_EQ(spec_error("layers=two"), "--llm layers: 'two' is not a positive integer");
  EXPECT_EQ(spec_error("layers=2,hidden=66,heads=4,ffn=128,vocab=10"), "--llm: hidden=66 is not a multiple of heads=4");
  LlmConfig c = parse_llm_spec("layers=2,hidden=64,heads=4,ffn=128,vocab=10,mlp=plain,tied=1");
  EXPECT_EQ(c.kv_heads, 4);
  EXPECT_FALSE(c.gated_mlp);
  EXPECT_DOUBLE_EQ(c.params(), 2 * (2.0 * 64 * 64 + 2.0 * 64 * 64 + 2.0 * 64 * 128) + 10 * 64);
}

TEST(LlmModel, CountsGpt2FromItsOnnx) {
  fs::path path = fs::path(KILN_BINARY_DIR) / "zoo" / "gpt2" / "model.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << "zoo not prepared (scripts/zoo/prepare.sh)";
  Model m = import_onnx(path.string());
  m.source_path = path.string();
  LlmConfig c = llm_config_from_model(m);
  EXPECT_EQ(c.layers, 12);
  EXPECT_EQ(c.hidden, 768);
  EXPECT_EQ(c.heads, 12);
  EXPECT_EQ(c.kv_heads, 12);
  EXPECT_EQ(c.ffn, 3072);
  EXPECT_EQ(c.vocab, 50257);
  EXPECT_FALSE(c.gated_mlp);
  // The file stores the LM head as its own [768, 50257] matrix next to the token table.
  EXPECT_FALSE(c.tied_embeddings);
}

}  // namespace
}  // namespace kiln::analysis

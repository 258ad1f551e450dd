// `kiln perf --llm` output: text tables and JSON.
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "json_writer.h"
#include "kiln/analysis/llm_model.h"

namespace kiln::analysis {

std::string llm_to_text(const LlmReport& r) {
  const LlmConfig& c = r.cfg;
  std::ostringstream o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "kiln perf --llm: layers=%lld hidden=%lld heads=%lld kv_heads=%lld (head_dim %lld) ffn=%lld (%s) vocab=%lld%s\n",
                static_cast<long long>(c.layers), static_cast<long long>(c.hidden), static_cast<long long>(c.heads),
                static_cast<long long>(c.kv_heads), static_cast<long long>(c.head_dim()), static_cast<long long>(c.ffn),
                c.gated_mlp ? "gated" : "plain", static_cast<long long>(c.vocab), c.tied_embeddings ? " tied" : "");
  o << buf << "  from " << c.source << "\n";
  std::snprintf(buf, sizeof buf, "  %.3f B parameters: %s of weights at %s\n", c.params() / 1e9, human_bytes(r.weight_bytes).c_str(),
                std::string(precision_name(r.opt.precision)).c_str());
  o << buf;
  std::snprintf(buf, sizeof buf, "on %s: peak %.1f TFLOP/s, %.0f GB/s, %s, launch %.1f us; link %s (%.0f GB/s each way)\n",
                r.chip.name.c_str(), r.chip.peak_flops(r.opt.precision) / 1e12, r.chip.memory_gbs,
                human_bytes(static_cast<double>(r.chip.memory_bytes)).c_str(), r.chip.launch_overhead_us,
                r.link_name.c_str(), r.link_gbs);
  o << buf;
  std::snprintf(buf, sizeof buf, "KV cache: %s per token, %s per sequence of %lld tokens\n\n",
                human_bytes(r.kv_bytes_per_token).c_str(), human_bytes(r.kv_bytes_per_sequence).c_str(),
                static_cast<long long>(r.opt.context));
  o << buf;
  std::snprintf(buf, sizeof buf, "tp=%lld %7s %12s %8s %16s %8s %12s %11s %6s\n", static_cast<long long>(r.opt.tp.front()),
                "batch", "prefill_ms", "bound", "decode_ms/token", "bound", "tokens/s", "memory", "fits");
  o << buf;
  for (const auto& row : r.by_batch) {
    double mem = row.weights_bytes_per_device + row.kv_bytes_per_device + static_cast<double>(r.chip.workspace_bytes);
    std::snprintf(buf, sizeof buf, "     %7lld %12.3f %8s %16.4f %8s %12.1f %11s %6s\n", static_cast<long long>(row.batch),
                  row.prefill.ms(), std::string(bound_name(row.prefill.bound())).c_str(), row.decode.ms(),
                  std::string(bound_name(row.decode.bound())).c_str(),
                  static_cast<double>(row.batch) / (row.decode.ms() * 1e-3), human_bytes(mem).c_str(), row.fits ? "yes" : "no");
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "\nbatch=%lld %4s %15s %13s %10s %18s %14s %12s %16s\n",
                static_cast<long long>(r.opt.batches.front()), "tp", "weights/device", "kv/device", "max_batch",
                "allreduce/layer", "ms/layer", "prefill_ms", "decode_ms/token");
  o << buf;
  for (const auto& row : r.by_tp) {
    std::snprintf(buf, sizeof buf, "        %4lld %15s %13s %10lld %18s %14.4f %12.3f %16.4f\n", static_cast<long long>(row.tp),
                  human_bytes(row.weights_bytes_per_device).c_str(), human_bytes(row.kv_bytes_per_device).c_str(),
                  static_cast<long long>(row.max_batch), human_bytes(row.allreduce_bytes_per_layer).c_str(),
                  row.allreduce_ms_per_layer, row.prefill.ms(), row.decode.ms());
    o << buf;
  }
  o << "\nprefill: the whole context in one pass; decode: one token per sequence with the cache full to the context.\n"
       "all-reduce per layer: the two ring all-reduces of a decode step (per device).\n";
  return o.str();
}

namespace {
void write_step(JsonWriter& w, const char* key, const LlmStep& s) {
  w.key(key).begin_object();
  w.key("ms").value(s.ms());
  w.key("bound").value(bound_name(s.bound()));
  w.key("flops").value(s.flops);
  w.key("bytes").value(s.bytes);
  w.key("compute_ms").value(s.compute_ms);
  w.key("memory_ms").value(s.memory_ms);
  w.key("overhead_ms").value(s.overhead_ms);
  w.key("comm_ms").value(s.comm_ms);
  w.end_object();
}

void write_row(JsonWriter& w, const LlmTpRow& row) {
  w.begin_object();
  w.key("tp").value(row.tp);
  w.key("batch").value(row.batch);
  w.key("prefill_ms").value(row.prefill.ms());
  w.key("decode_ms_per_token").value(row.decode.ms());
  w.key("tokens_per_s").value(static_cast<double>(row.batch) / (row.decode.ms() * 1e-3));
  w.key("weights_bytes_per_device").value(row.weights_bytes_per_device);
  w.key("kv_bytes_per_device").value(row.kv_bytes_per_device);
  w.key("allreduce_bytes_per_layer").value(row.allreduce_bytes_per_layer);
  w.key("allreduce_ms_per_layer").value(row.allreduce_ms_per_layer);
  w.key("allreduce_bytes_per_layer_prefill").value(row.allreduce_bytes_per_layer_prefill);
  w.key("max_batch").value(row.max_batch);
  w.key("fits").value(row.fits);
  write_step(w, "prefill", row.prefill);
  write_step(w, "decode", row.decode);
  w.end_object();
}
}  // namespace

std::string llm_to_json(const LlmReport& r) {
  const LlmConfig& c = r.cfg;
  const LlmTpRow& first = r.by_batch.front();
  JsonWriter w;
  w.begin_object();
  w.key("config").begin_object();
  w.key("layers").value(c.layers);
  w.key("hidden").value(c.hidden);
  w.key("heads").value(c.heads);
  w.key("kv_heads").value(c.kv_heads);
  w.key("head_dim").value(c.head_dim());
  w.key("ffn").value(c.ffn);
  w.key("vocab").value(c.vocab);
  w.key("mlp").value(c.gated_mlp ? "gated" : "plain");
  w.key("tied_embeddings").value(c.tied_embeddings);
  w.key("params").value(c.params());
  w.key("source").value(c.source);
  w.end_object();
  w.key("chip").value(r.chip.id);
  w.key("precision").value(precision_name(r.opt.precision));
  w.key("context").value(r.opt.context);
  w.key("link").value(r.link_name);
  w.key("link_gbs").value(r.link_gbs);
  w.key("weight_bytes").value(r.weight_bytes);
  w.key("kv_bytes_per_token").value(r.kv_bytes_per_token);
  w.key("kv_bytes_per_sequence").value(r.kv_bytes_per_sequence);
  w.key("batch").value(first.batch);
  w.key("prefill_ms").value(first.prefill.ms());
  w.key("decode_ms_per_token").value(first.decode.ms());
  w.key("max_batch").value(first.max_batch);
  w.key("rows").begin_array();
  for (const auto& row : r.by_batch) write_row(w, row);
  w.end_array();
  w.key("tp").begin_array();
  for (const auto& row : r.by_tp) write_row(w, row);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace kiln::analysis

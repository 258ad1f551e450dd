// `kiln perf --llm` output: text tables and JSON.
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "kiln/analysis/llm_model.h"
#include "kiln/plan/json.h"

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
json::Value step_json(const LlmStep& s) {
  json::Value o;
  o.set("ms", s.ms());
  o.set("bound", bound_name(s.bound()));
  o.set("flops", s.flops);
  o.set("bytes", s.bytes);
  o.set("compute_ms", s.compute_ms);
  o.set("memory_ms", s.memory_ms);
  o.set("overhead_ms", s.overhead_ms);
  o.set("comm_ms", s.comm_ms);
  return o;
}

json::Value row_json(const LlmTpRow& row) {
  json::Value o;
  o.set("tp", row.tp);
  o.set("batch", row.batch);
  o.set("prefill_ms", row.prefill.ms());
  o.set("decode_ms_per_token", row.decode.ms());
  o.set("tokens_per_s", static_cast<double>(row.batch) / (row.decode.ms() * 1e-3));
  o.set("weights_bytes_per_device", row.weights_bytes_per_device);
  o.set("kv_bytes_per_device", row.kv_bytes_per_device);
  o.set("allreduce_bytes_per_layer", row.allreduce_bytes_per_layer);
  o.set("allreduce_ms_per_layer", row.allreduce_ms_per_layer);
  o.set("allreduce_bytes_per_layer_prefill", row.allreduce_bytes_per_layer_prefill);
  o.set("max_batch", row.max_batch);
  o.set("fits", row.fits);
  o.set("prefill", step_json(row.prefill));
  o.set("decode", step_json(row.decode));
  return o;
}
}  // namespace

std::string llm_to_json(const LlmReport& r) {
  const LlmConfig& c = r.cfg;
  const LlmTpRow& first = r.by_batch.front();
  json::Value j;
  json::Value& config = j.set("config", json::Object{});
  config.set("layers", c.layers);
  config.set("hidden", c.hidden);
  config.set("heads", c.heads);
  config.set("kv_heads", c.kv_heads);
  config.set("head_dim", c.head_dim());
  config.set("ffn", c.ffn);
  config.set("vocab", c.vocab);
  config.set("mlp", c.gated_mlp ? "gated" : "plain");
  config.set("tied_embeddings", c.tied_embeddings);
  config.set("params", c.params());
  config.set("source", c.source);
  j.set("chip", r.chip.id);
  j.set("precision", precision_name(r.opt.precision));
  j.set("context", r.opt.context);
  j.set("link", r.link_name);
  j.set("link_gbs", r.link_gbs);
  j.set("weight_bytes", r.weight_bytes);
  j.set("kv_bytes_per_token", r.kv_bytes_per_token);
  j.set("kv_bytes_per_sequence", r.kv_bytes_per_sequence);
  j.set("batch", first.batch);
  j.set("prefill_ms", first.prefill.ms());
  j.set("decode_ms_per_token", first.decode.ms());
  j.set("max_batch", first.max_batch);
  json::Value& rows = j.set("rows", json::Array{});
  for (const auto& row : r.by_batch) rows.push(row_json(row));
  json::Value& tp = j.set("tp", json::Array{});
  for (const auto& row : r.by_tp) tp.push(row_json(row));
  return j.dump() + "\n";
}

}  // namespace kiln::analysis

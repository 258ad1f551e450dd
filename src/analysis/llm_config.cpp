// `kiln perf --llm`: the transformer's shape, from a spec string or counted in an ONNX decoder.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "kiln/analysis/llm_model.h"
#include "kiln/ir/error.h"

namespace kiln::analysis {

namespace {
void check_config(const LlmConfig& c, const std::string& where) {
  KILN_CHECK(c.layers > 0 && c.hidden > 0 && c.heads > 0 && c.ffn > 0 && c.vocab > 0, where,
             ": layers, hidden, heads, ffn and vocab must all be positive");
  KILN_CHECK(c.hidden % c.heads == 0, where, ": hidden=", c.hidden, " is not a multiple of heads=", c.heads);
  KILN_CHECK(c.kv_heads > 0 && c.kv_heads <= c.heads && c.heads % c.kv_heads == 0, where, ": kv_heads=", c.kv_heads,
             " must divide heads=", c.heads);
}
}  // namespace

LlmConfig parse_llm_spec(const std::string& spec) {
  LlmConfig c;
  c.source = "--llm " + spec;
  std::map<std::string, int64_t*> ints = {{"layers", &c.layers}, {"hidden", &c.hidden}, {"heads", &c.heads},
                                          {"kv_heads", &c.kv_heads}, {"ffn", &c.ffn}, {"vocab", &c.vocab}};
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto eq = item.find('=');
    KILN_CHECK(eq != std::string::npos, "--llm: expected KEY=VALUE, got '", item, "'");
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "mlp") {
      KILN_CHECK(value == "gated" || value == "plain", "--llm mlp: 'gated' (SwiGLU) or 'plain' (GELU), got '", value, "'");
      c.gated_mlp = value == "gated";
      continue;
    }
    if (key == "tied") {
      KILN_CHECK(value == "0" || value == "1", "--llm tied: 0 or 1, got '", value, "'");
      c.tied_embeddings = value == "1";
      continue;
    }
    auto it = ints.find(key);
    KILN_CHECK(it != ints.end(), "--llm: unknown key '", key, "' (layers, hidden, heads, kv_heads, ffn, vocab, mlp, tied)");
    char* end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    KILN_CHECK(!value.empty() && end && *end == '\0' && v > 0, "--llm ", key, ": '", value, "' is not a positive integer");
    *it->second = v;
  }
  for (const char* k : {"layers", "hidden", "heads", "ffn", "vocab"})
    KILN_CHECK(*ints[k] > 0, "--llm: missing ", k, "=");
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  check_config(c, "--llm");
  return c;
}

namespace {

const Value* constant_source(const Value* v) {
  // Weights may reach a MatMul through a Transpose (tied LM heads) or a Cast.
  while (v && !v->is_constant() && v->producer && (v->producer->op == "Transpose" || v->producer->op == "Cast") &&
         v->producer->input(0))
    v = v->producer->input(0);
  return v && v->is_constant() ? v : nullptr;
}

void walk(const Graph& g, const std::function<void(const Node&)>& f) {
  for (const auto& n : g.nodes()) {
    f(*n);
    for (Graph* sg : n->subgraphs()) walk(*sg, f);
  }
}

}  // namespace

LlmConfig llm_config_from_model(const Model& m) {
  const std::string where = m.source_path.empty() ? "llm model" : m.source_path;
  LlmConfig c;
  c.source = where;
  const Value* table = nullptr;
  int64_t softmaxes = 0;
  std::vector<const Value*> weights;  // constant float matrices feeding MatMul/Gemm
  walk(*m.graph, [&](const Node& n) {
    if (n.op == "Gather" && n.input(0) && n.input(0)->is_constant() && n.input(0)->initializer->dims().size() == 2 &&
        dtype_is_float(n.input(0)->dtype)) {
      const Value* t = n.input(0);
      if (!table || t->initializer->dims()[0] > table->initializer->dims()[0]) table = t;
    }
    if (n.op == "Softmax") {
      ++softmaxes;
      const Value* s = n.input(0);
      if (c.heads == 0 && s && s->shape.rank() == 4 && s->shape.dims[1].is_static()) c.heads = s->shape.dims[1].value;
    }
    if ((n.op == "MatMul" || n.op == "Gemm") && n.input(1))
      if (const Value* w = constant_source(n.input(1)); w && w->initializer->dims().size() == 2) weights.push_back(w);
  });
  KILN_CHECK(table != nullptr, where, ": no embedding table (a constant [vocab, hidden] matrix feeding a Gather)");
  c.vocab = table->initializer->dims()[0];
  c.hidden = table->initializer->dims()[1];
  KILN_CHECK(softmaxes > 0, where, ": no Softmax, so no attention layers to count");
  c.layers = softmaxes;
  KILN_CHECK(c.heads > 0, where, ": cannot read the head count (no Softmax over a [batch, heads, q, k] tensor)");
  KILN_CHECK(c.hidden % c.heads == 0, where, ": hidden=", c.hidden, " is not a multiple of heads=", c.heads);
  int64_t d = c.hidden / c.heads;
  // Widths of the projections that read the hidden state ([hidden, width] weights).
  std::map<int64_t, int64_t> widths;
  bool head_found = false;
  for (const Value* w : weights) {
    const auto& dims = w->initializer->dims();
    int64_t width = dims[0] == c.hidden ? dims[1] : dims[1] == c.hidden ? dims[0] : -1;
    if (width == c.vocab) {
      head_found = true;
      continue;
    }
    if (width > 0) ++widths[width];
  }
  c.tied_embeddings = !head_found || std::any_of(weights.begin(), weights.end(), [&](const Value* w) { return w == table; });
  // K/V: a fused QKV projection of width h + 2 kv, or separate K and V projections narrower than h.
  c.kv_heads = c.heads;
  for (const auto& [w, count] : widths) {
    if (w > c.hidden && w < 3 * c.hidden + 1 && (w - c.hidden) % (2 * d) == 0 && (w - c.hidden) / 2 <= c.hidden &&
        count >= c.layers && count < 2 * c.layers) {  // one fused QKV per layer
      c.kv_heads = (w - c.hidden) / (2 * d);
      break;
    }
    if (w < c.hidden && w % d == 0 && count >= 2 * c.layers) {
      c.kv_heads = w / d;
      break;
    }
  }
  // The MLP width: the most frequent remaining width other than h and the attention widths.
  int64_t best = 0, best_count = 0;
  for (const auto& [w, count] : widths) {
    if (w == c.hidden || w == c.hidden + 2 * c.kv_dim() || w == c.kv_dim() || w == 2 * c.kv_dim()) continue;
    if (count > best_count) {
      best = w;
      best_count = count;
    }
  }
  KILN_CHECK(best > 0, where, ": cannot find the MLP width (no [hidden, ffn] weight matrices)");
  c.ffn = best;
  // GELU MLPs hold one [h, ffn] matrix per layer (plus [ffn, h], counted under the same key);
  // gated ones two more (gate and up).
  c.gated_mlp = best_count >= 3 * c.layers;
  check_config(c, where);
  return c;
}

}  // namespace kiln::analysis

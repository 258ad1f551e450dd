#include "perf_graph.h"

#include <algorithm>

#include <optional>

#include "kiln/ops/op.h"

namespace kiln::analysis::perf_graph {

bool is_view(const Node& n) {
  if (!n.domain.empty()) return false;
  static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  return views.count(n.op) != 0;
}

bool is_matrix(const Node& n) {
  static const std::set<std::string> matrix = {"Conv",   "ConvTranspose", "ConvInteger",   "QLinearConv", "MatMul",
                                               "Gemm",   "MatMulInteger", "QLinearMatMul", "Einsum",      "LSTM",
                                               "GRU",    "RNN"};
  if (matrix.count(n.op)) return true;
  // kiln's fused forms (domain "kiln") keep the matrix op in their name.
  return !n.domain.empty() && (n.op.find("Conv") != std::string::npos || n.op.find("MatMul") != std::string::npos ||
                               n.op.find("Gemm") != std::string::npos);
}

bool is_layout(const Node& n) { return n.domain.empty() && n.op == "Transpose"; }

bool is_elementwise(const Node& n) {
  // Ops whose output has the broadcast shape of their inputs but whose elements depend on
  // other positions (normalising, scanning, windowed or index-driven).
  static const std::set<std::string> not_elementwise = {
      "Softmax", "LogSoftmax", "Hardmax", "LayerNormalization", "InstanceNormalization", "LpNormalization",
      "LRN", "CumSum", "MaxPool", "AveragePool", "LpPool", "Resize", "Pad", "Slice", "Tile", "Expand",
      "Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "TopK", "DepthToSpace",
      "SpaceToDepth", "ReverseSequence", "Compress", "NonZero", "Unique", "Range", "Concat", "Split"};
  if (!n.domain.empty() || not_elementwise.count(n.op) || is_view(n) || is_layout(n) || is_matrix(n)) return false;
  if (n.outputs.size() != 1 || !n.outputs[0] || !n.outputs[0]->shape.is_static() || !n.subgraphs().empty()) return false;
  std::optional<Shape> shape;
  for (const Value* v : n.inputs) {
    if (!v) continue;
    if (!v->shape.is_static()) return false;
    shape = shape ? broadcast_shapes(*shape, v->shape) : std::optional<Shape>(v->shape);
    if (!shape) return false;
  }
  return shape && *shape == n.outputs[0]->shape;
}

namespace {
void collect_constants(const Graph& g, std::set<const Value*>& known) {
  for (const Value* v : g.initializers)
    if (v) known.insert(v);
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    for (Graph* sg : n.subgraphs()) collect_constants(*sg, known);
    bool all_known = n.subgraphs().empty();
    for (const Value* v : n.inputs)
      if (v && !known.count(v)) all_known = false;
    if ((n.op == "Shape" || n.op == "Size") && n.domain.empty() && n.input(0) && n.input(0)->shape.is_static())
      all_known = true;
    if (n.op == "RandomNormal" || n.op == "RandomUniform" || n.op == "RandomNormalLike" || n.op == "RandomUniformLike" ||
        n.op == "Multinomial" || n.op == "Bernoulli")
      all_known = false;
    if (all_known)
      for (const Value* o : n.outputs)
        if (o) known.insert(o);
  }
}

// FLOPs plus bytes of every node of g whose cost is known, subgraphs included: which of an If's
// branches weighs more.
double graph_weight(const Graph& g) {
  double w = 0;
  for (const auto& n : g.nodes()) {
    if (const auto c = ops::node_cost(*n)) w += c->flops + c->bytes_read + c->bytes_written;
    if (n->domain != "kiln")
      for (const Graph* sg : n->subgraphs()) w += graph_weight(*sg);
  }
  return w;
}

void collect_nodes(const Graph& g, const std::string& prefix, size_t top, bool is_top, std::vector<NodeRef>& out) {
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    size_t t = is_top ? i : top;
    out.push_back({&n, prefix + n.name, t});
    // A kiln op's body (kiln.FusedElementwise) is the code of its one kernel: the op's own
    // cost covers it, and its nodes launch nothing. Other bodies (If, Loop) run node by node.
    if (n.domain == "kiln") continue;
    // Only one branch of an If runs, and its condition is a run-time value in general (Silero
    // VAD's sample rate): the heavier branch stands for the node (an upper bound). Counting both
    // predicted silero_vad_legacy at 1.77x its compiled time.
    if (const std::vector<Graph*> br = ops::compiled_branches(n); !br.empty()) {
      const size_t pick = graph_weight(*br[0]) >= graph_weight(*br[1]) ? 0 : 1;
      collect_nodes(*br[pick], prefix + n.name + (pick == 0 ? "/then_branch/" : "/else_branch/"), t, false, out);
      continue;
    }
    for (const auto& [attr, a] : n.attrs)
      if (a.kind() == AttrKind::Graph && a.g()) collect_nodes(*a.g(), prefix + n.name + "/" + attr + "/", t, false, out);
  }
}
}  // namespace

std::set<const Value*> constant_values(const Graph& g) {
  std::set<const Value*> known;
  collect_constants(g, known);
  return known;
}

double model_bytes(const Value& v) {
  auto n = v.shape.numel();
  return n ? static_cast<double>(*n) * static_cast<double>(dtype_size(v.dtype)) : 0.0;
}

double value_bytes(const Value& v, Precision p) {
  auto n = v.shape.numel();
  if (!n) return 0;
  double width = dtype_is_float(v.dtype) ? precision_bytes(p) : static_cast<double>(dtype_size(v.dtype));
  return static_cast<double>(*n) * width;
}

std::vector<NodeRef> all_nodes(const Graph& g) {
  std::vector<NodeRef> out;
  collect_nodes(g, "", 0, true, out);
  return out;
}

}  // namespace kiln::analysis::perf_graph

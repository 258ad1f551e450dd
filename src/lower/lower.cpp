#include "kiln/lower/lower.h"

#include <map>
#include <set>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/int8.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// Ops the compiled runtime runs with a kernel of its own rather than the reference one.
KernelChoice choice_for_other(const Node& n) {
  if (n.domain == ops::kKilnDomain) {
    if (n.op == "FusedElementwise") return {n.name, "kiln::FusedElementwise", "generated", "one generated loop nest"};
    if (n.op == "Attention") return {n.name, "kiln::Attention", "flash", "tiled, online softmax"};
    if (n.op == "LayerNorm") return {n.name, "kiln::LayerNorm", "rows", "one pass per row"};
    if (n.op == "QConv" || n.op == "QMatMul") return {n.name, "kiln::" + n.op, "int8", "INT8 kernels (kernels/int8.h)"};
    if (n.op == "QLookup") return {n.name, "kiln::QLookup", "table", "a 256-entry table per 8-bit element"};
    if (n.op == "HalfConv" || n.op == "HalfMatMul")
      return {n.name, "kiln::" + n.op, "bf16", "16-bit weights: AVX512-BF16 or f32 kernels (kernels/bf16.h)"};
  }
  if (n.op == "Softmax") return {n.name, n.op, "rows", "one pass per row"};
  if (n.domain.empty() && n.op == "MaxPool" && n.input(0) &&
      (n.input(0)->dtype == DType::u8 || n.input(0)->dtype == DType::i8))
    return {n.name, n.op, "pool", "int8 windows, separable and exact (2-D, static, no Indices output; else reference)"};
  if (n.domain.empty() && (n.op == "MaxPool" || n.op == "AveragePool"))
    return {n.name, n.op, "pool", "vector windows on stride-phase planes (2-D, f32, no Indices output; else reference)"};
  if (n.domain.empty() && n.op == "GlobalAveragePool") return {n.name, n.op, "rows", "one vector sum per plane"};
  if (n.op == "Reshape" || n.op == "Flatten" || n.op == "Squeeze" || n.op == "Unsqueeze" || n.op == "Identity")
    return {n.name, n.op, "view", "aliases its input (no copy)"};
  return {n.name, n.op, "reference", "no fast kernel for " + n.op + ": the op table's reference kernel runs it"};
}

// The INT8 path a QConv takes on this CPU (kernels/int8.h, qconv_tactic_name) as its `tactic`
// attribute, which profiles show; named after the layouts (pixel-major: "nhwc"). The path does
// not depend on the batch: a symbolic one counts as 1. Left unset when the other dims or the
// weight are not known.
void name_qconv_tactic(Node& n) {
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!x || !w || !w->is_constant()) return;
  const Tensor& wt = *w->initializer;
  const std::optional<std::vector<int64_t>> dims = ops::dims_batch_as_one(x->shape);
  if (wt.dtype() != DType::i8 || wt.dims().size() != 4 || !dims || dims->size() != 4) return;
  const kernels::Conv2dShape s = ops::fused_conv_shape(n, *dims, wt.dims());
  const auto& k = kernels::int8::qkernels_for_signed(wt.data<int8_t>(), wt.numel());
  n.attrs["tactic"] = std::string(kernels::int8::qconv_tactic_name(k, s, x->dtype == DType::i8));
}

// Every value the nodes of `g` read, their subgraphs' reads included (at any depth).
void collect_reads(const Graph& g, std::set<const Value*>& used) {
  for (const auto& n : g.nodes()) {
    for (const Value* v : n->inputs) used.insert(v);
    for (const Graph* sg : n->subgraphs()) {
      collect_reads(*sg, used);
      used.insert(sg->outputs.begin(), sg->outputs.end());
    }
  }
}

// Initializers no node reads any more (weights replaced by their packed form).
void drop_unused_initializers(Graph& g) {
  std::set<const Value*> used;
  collect_reads(g, used);
  for (const Value* v : g.outputs) used.insert(v);
  for (const Value* v : g.inputs) used.insert(v);
  std::vector<Value*> keep;
  for (Value* v : g.initializers) {
    if (used.count(v)) keep.push_back(v);
    else v->initializer.reset();  // frees the bytes; the dangling Value has no users
  }
  g.initializers = std::move(keep);
}

// Lowers one graph, then the If branches in it (ops::compiled_branches), which the compiled
// runtime plans and runs like the main graph. Loop and Scan bodies keep their plain ops: the
// reference kernels that run them read unpacked weights.
void lower_graph(Model& m, Graph& g, const LowerOptions& opt, LowerReport& r) {
  std::vector<KernelChoice> notes;
  const int canonical = conv1d_as_2d(g) + canonicalize(g, notes);
  if (canonical + wrap_lone_elementwise(g) > 0) m.opsets[std::string(ops::kKilnDomain)] = ops::kKilnOpsetVersion;
  std::map<std::string, KernelChoice> declined;
  for (auto& c : notes) declined[c.node] = c;
  const std::set<const Node*> to_direct = pointwise_between_blocks(g);
  const size_t first = r.kernels.size();
  std::map<const Node*, const Value*> conv_weights;  // the ONNX weights, for assign_winograd
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    KernelChoice c;
    if (n.domain == ops::kKilnDomain && n.op == "FusedConv") {
      conv_weights[&n] = n.input(1);
      c = lower_conv(g, n, opt.pack_weights, r.packed_bytes, to_direct.count(&n) > 0);
    } else if (n.domain == ops::kKilnDomain && n.op == "FusedMatMul")
      c = lower_matmul(g, n, opt.pack_weights, r.packed_bytes);
    else if (auto it = declined.find(n.name); it != declined.end())
      c = it->second;
    else
      c = choice_for_other(n);
    if (c.tactic == "reference") ++r.reference_nodes;
    r.kernels.push_back(std::move(c));
  }
  if (opt.pack_weights) {
    int wide = 0;
    r.blocked_tensors += assign_blocked_layout(g, &wide);
    r.wide_tensors += wide;
    r.padded_tensors += assign_padded_planes(g);
    r.nhwc_tensors += assign_int8_nhwc_layout(g);
    mark_in_place_convs(g);
    r.folded_means += fold_channel_means(g, r.kernels);
    r.winograd_convs += assign_winograd(g, conv_weights, r.kernels, r.packed_bytes);
    r.expand_depthwise += fuse_expand_depthwise(g, r.kernels);
    r.depthwise_project += fuse_depthwise_project(g, r.kernels);
    r.stem_depthwise_project += fuse_stem_depthwise_project(g, r.kernels);
    drop_unused_initializers(g);  // the ONNX weights, and direct panels assign_winograd replaced
    std::map<std::string, const Node*> by_name;
    for (const auto& n : g.nodes()) by_name[n->name] = n.get();
    for (size_t i = first; i < r.kernels.size(); ++i) {
      KernelChoice& c = r.kernels[i];
      const auto it = by_name.find(c.node);
      if (it == by_name.end()) continue;
      const Node* n = it->second;
      // A fused elementwise node marks only y: its full-size inputs share the output's layout.
      const bool y = n->attr_i("y_blocked", 0) != 0;
      const bool x = n->attr_i("x_blocked", 0) != 0 || (y && n->op == "FusedElementwise");
      if (x || y)
        c.why += std::string("; channel-blocked ") + (x && y ? "input and output" : x ? "input" : "output") +
                 " (NCHW8c, shared with the direct convolutions and pools next to it)";
      const int64_t wide = kernels::kConvBlockWide;
      const bool xw = n->attr_i("x_block", 0) == wide, yw = n->attr_i("y_block", 0) == wide;
      if (xw || yw)
        c.why += std::string("; ") + (xw && yw ? "input and output" : xw ? "input" : "output") +
                 " in 16-channel blocks (NCHW16c: a pixel's block one vector, between direct and small depthwise "
                 "convolutions)";
      if (n->attr_i("x_padded", 0) != 0) c.why += "; reads its input in place from padded planes (no padded copy)";
      if (n->has_attr("y_pad")) c.why += "; writes into the next convolution's padded planes";
      const bool xn = n->attr_i("x_nhwc", 0) != 0, yn = n->attr_i("y_nhwc", 0) != 0;
      if (xn || yn)
        c.why += std::string("; pixel-major ") + (xn && yn ? "input and output" : xn ? "input" : "output") +
                 " (NHWC, shared with the INT8 convolutions next to it)";
    }
  }
  for (const auto& n : g.nodes())
    if (n->domain == ops::kKilnDomain && n->op == "QConv") name_qconv_tactic(*n);
  for (const auto& n : g.nodes())
    for (Graph* sg : ops::compiled_branches(*n)) lower_graph(m, *sg, opt, r);
}

}  // namespace

std::string node_tactic(const Node& n) { return n.attr_s("tactic", ""); }

LowerReport lower_model(Model& m, const LowerOptions& opt) {
  LowerReport r;
  r.isa = std::string(kernels::gemm_isa());
  lower_graph(m, *m.graph, opt, r);
  return r;
}

}  // namespace kiln::lower

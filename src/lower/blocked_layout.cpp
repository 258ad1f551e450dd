// Channel-blocked activations between direct and depthwise convolutions (kernels/conv.h,
// Conv2dShape::x_blocked / y_blocked). The direct tactic computes pixel-major register tiles: writing NCHW
// costs a transpose of every output, and the next direct convolution transposes its input
// back into blocks of 8 channels for its padded copy. A tensor that only direct convolutions
// produce and read skips both: its producer writes [N][C/8][H][W][8] and its readers copy
// rows (padded) or read it in place (unpadded). In resnet18 at 2 threads those transposes were
// ~10% of the time.
//
// A tensor is blocked when
//   - a packed direct kiln.FusedConv produces it, with output channels a multiple of 8, a
//     depthwise one (C == K a multiple of 8, on tables whose blocked depthwise kernel reads and
//     writes blocks), or a 2-D f32 MaxPool the fast kernels run (kernels::max_pool_blocked);
//   - it is not a graph output, and every reader is a packed direct kiln.FusedConv (group 1,
//     input channels a multiple of 8) reading it as X or as the residual Z, such a depthwise
//     one, such a MaxPool, a GlobalAveragePool (whose [N, C, 1, 1] output is the same floats
//     in either layout), or a kiln.FusedElementwise reading it at its output's shape (its
//     generated kernel then runs on blocks: efficientnet_b0's excitation products, which scale
//     a depthwise output per channel);
//   - a fused elementwise node writes blocks when its outputs and full-size inputs all do;
//   - a convolution's residual and output agree: the epilogue reads Z in the output's layout,
//     so a residual that must stay NCHW keeps the output NCHW, and the other way round; a
//     MaxPool writes blocks only from blocks (it may read blocks and write NCHW: digits_cnn's
//     pool before its Flatten); a fused elementwise node's outputs and full-size inputs agree.
// The last rule is solved by dropping tensors until nothing changes (the largest set that
// keeps it). A tensor a subgraph reads (Graph::users looks inside bodies) is not blocked: no
// node in a body is a packed convolution.
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// Input and output channels of a convolution that counts as direct for the layout, or nullopt.
using DirectChannels = std::function<std::optional<std::pair<int64_t, int64_t>>(const Node&)>;

// Channels of a lowered (packed) direct kiln.FusedConv.
std::optional<std::pair<int64_t, int64_t>> lowered_direct(const Node& n) {
  if (n.domain != ops::kKilnDomain || n.op != "FusedConv" || !n.has_attr("packed") ||
      n.attr_s("tactic", "") != kernels::conv_tactic_name(kernels::ConvTactic::Direct) || n.attr_i("group", 1) != 1)
    return std::nullopt;
  const std::vector<int64_t> w = n.attr_ints("w_shape", {});
  if (w.size() != 4) return std::nullopt;
  return std::pair{w[1], w[0]};
}

// Whether the residual Z (input 3) has the output's shape: a broadcast one cannot be blocked.
bool residual_matches(const Node& n) {
  const Value* z = n.input(3);
  return z && z->shape == n.outputs[0]->shape;
}

// A depthwise kiln.FusedConv (group == C == K, a multiple of 8 channels) whose blocked kernel
// this CPU has (KernelTable::depthwise_block reads and writes blocks on tables of 8 or more
// lanes; conv_tactic_unsupported says so): its channels. Before lowering from the weight, after
// from `w_shape` and the depthwise tactic. `one_channel` instead: one input channel into K
// (digits_cnn's 1 -> 16), which writes blocks but reads its one plane.
std::optional<int64_t> blocked_depthwise(const Node& n, bool one_channel = false) {
  if (n.domain != ops::kKilnDomain || n.op != "FusedConv") return std::nullopt;
  if (n.has_attr("tactic") && n.attr_s("tactic", "") != kernels::conv_tactic_name(kernels::ConvTactic::Depthwise))
    return std::nullopt;
  std::vector<int64_t> w;
  if (n.has_attr("packed")) w = n.attr_ints("w_shape", {});
  else if (n.input(1) && n.input(1)->is_constant()) w = n.input(1)->initializer->dims();
  const int64_t group = n.attr_i("group", 1);
  if (w.size() != 4 || w[1] != 1 || w[0] % kernels::kConvBlock != 0 || group != (one_channel ? 1 : w[0]))
    return std::nullopt;
  kernels::Conv2dShape s = ops::fused_conv_shape(n, {1, one_channel ? 1 : w[0], 8, 8}, w);
  s.x_blocked = !one_channel, s.y_blocked = true;
  if (!kernels::conv_tactic_unsupported(kernels::ConvTactic::Depthwise, s).empty()) return std::nullopt;
  return w[0];
}

// A MaxPool the channel-blocked kernel runs (kernels::max_pool_blocked): blocked in and out.
// A symbolic batch counts as 1: the layout does not depend on it.
bool blocked_max_pool(const Node& n) {
  if (!n.domain.empty() || n.op != "MaxPool") return false;
  const std::optional<ops::PoolGeometry> g = ops::pool_geometry(n, /*any_batch=*/true);
  return g && g->kind == kernels::PoolKind::Max && g->shape.C % kernels::kConvBlock == 0;
}

// Dims of a rank-4 f32 value with the batch as 1, or nullopt.
std::optional<std::vector<int64_t>> dims4(const Value* v) {
  if (!v || v->dtype != DType::f32) return std::nullopt;
  std::optional<std::vector<int64_t>> d = ops::dims_batch_as_one(v->shape);
  if (!d || d->size() != 4) return std::nullopt;
  return d;
}

// A GlobalAveragePool over a static f32 NCHW input (a symbolic batch allowed: the runtime plans
// each batch's shapes) with a multiple of 8 channels: its output [N, C, 1, 1] is the same floats
// in either layout, so it only reads blocks.
bool blocked_global_average(const Node& n) {
  if (!n.domain.empty() || n.op != "GlobalAveragePool") return false;
  const std::optional<std::vector<int64_t>> d = dims4(n.input(0));
  return d && (*d)[1] % kernels::kConvBlock == 0;
}

// Body ops of a kiln.FusedElementwise that may run on blocks: elementwise by index, with
// emitters in codegen (which the lowering cannot ask: codegen comes after it; a blocked node
// codegen refused would fail the compile, emit_graph_kernels).
bool blockable_body_op(const Node& b) {
  static const std::set<std::string> kOps = {"Add",     "Sub",         "Mul",       "Div",       "Max",  "Min",
                                             "Sum",     "Relu",        "Sigmoid",   "Tanh",      "Exp",  "Neg",
                                             "Abs",     "Sqrt",        "Erf",       "Reciprocal", "Clip", "LeakyRelu",
                                             "HardSigmoid", "HardSwish", "Identity"};
  if (!b.domain.empty()) return false;
  if (b.op == "Constant") {  // one value: the same in every lane
    const Attribute* v = b.find_attr("value");
    return v && v->kind() == AttrKind::Tensor && v->t().numel() == 1;
  }
  return kOps.count(b.op) > 0;
}

// Whether a fused elementwise node reads x at its output's shape (in the output's layout).
bool full_size(const Node& n, const Value* x) { return x && x->shape == n.outputs[0]->shape; }

// A kiln.FusedElementwise the generated kernel runs on blocks (codegen's blocked path, the
// node's y_blocked): f32 outputs [N, C, H, W] with C a multiple of 8; each input either the
// output's shape (read in the output's layout) or a value per channel or a single value
// ([N|1, C|1, 1, 1], aligned to the right: efficientnet_b0's excitation scale), never one
// broadcast over channels but not over pixels; a body of blockable_body_op ops.
bool blocked_elementwise(const Node& n) {
  if (n.domain != ops::kKilnDomain || n.op != "FusedElementwise" || n.outputs.empty()) return false;
  const std::optional<std::vector<int64_t>> out = dims4(n.outputs[0]);
  if (!out || (*out)[1] % kernels::kConvBlock != 0) return false;
  for (const Value* o : n.outputs)
    if (!o || o->dtype != DType::f32 || !(o->shape == n.outputs[0]->shape)) return false;
  for (const Value* x : n.inputs) {
    if (!x || full_size(n, x)) continue;
    const std::optional<std::vector<int64_t>> d = ops::dims_batch_as_one(x->shape);
    if (!d || d->size() > 4) return false;
    std::vector<int64_t> a(4 - d->size(), 1);
    a.insert(a.end(), d->begin(), d->end());
    if (a[2] != 1 || a[3] != 1 || (a[1] != 1 && a[1] != (*out)[1])) return false;
  }
  const Attribute* body = n.find_attr("body");
  if (!body || body->kind() != AttrKind::Graph || !body->g()) return false;
  for (const auto& b : body->g()->nodes())
    if (!blockable_body_op(*b)) return false;
  for (const Value* c : body->g()->initializers)  // baked into the kernel: one value each
    if (!c->initializer || c->initializer->numel() != 1) return false;
  return true;
}

// Tensors that must share a layout: a convolution's residual and output; a fused elementwise
// node's outputs and full-size inputs (its kernel reads them all at one index).
std::vector<std::pair<const Value*, const Value*>> tied(const Node& n, const DirectChannels& direct) {
  std::vector<std::pair<const Value*, const Value*>> t;
  if ((direct(n) || blocked_depthwise(n) || blocked_depthwise(n, true)) && n.input(3))
    t.emplace_back(n.input(3), n.outputs[0]);
  if (blocked_elementwise(n)) {
    for (const Value* x : n.inputs)
      if (full_size(n, x)) t.emplace_back(x, n.outputs[0]);
    for (size_t k = 1; k < n.outputs.size(); ++k) t.emplace_back(n.outputs[k], n.outputs[0]);
  }
  return t;
}

// Drops from `set` each tensor tied to one outside it; whether any went.
bool drop_untied(const Graph& g, const DirectChannels& direct, std::set<const Value*>& set) {
  bool changed = false;
  for (const auto& up : g.nodes())
    for (const auto& [first, second] : tied(*up, direct)) {
      const bool a = set.count(first) > 0, b = set.count(second) > 0;
      if (a == b) continue;
      set.erase(a ? first : second);
      changed = true;
    }
  return changed;
}

// Whether v has readers and `reads(u, i)` holds wherever a reader u takes it as input i.
template <class Reads>
bool every_read(const Graph& g, const Value* v, Reads reads) {
  const std::vector<Node*> users = g.users(v);
  bool ok = !users.empty();
  for (const Node* u : users)
    for (size_t i = 0; ok && i < u->inputs.size(); ++i)
      if (u->inputs[i] == v) ok = reads(*u, i);
  return ok;
}

// The tensors to block when `direct` says which convolutions run direct (the rules above).
std::set<const Value*> solve(const Graph& g, const DirectChannels& direct) {
  auto writes_blocks = [&](const Node& p) {
    if (const auto c = direct(p)) return c->second % kernels::kConvBlock == 0 && (!p.input(3) || residual_matches(p));
    if (blocked_depthwise(p) || blocked_depthwise(p, true)) return !p.input(3) || residual_matches(p);
    return blocked_max_pool(p) || blocked_elementwise(p);
  };
  auto reads_blocks = [&](const Node& u, size_t i) {
    if (const auto c = direct(u)) return (i == 0 && c->first % kernels::kConvBlock == 0) || (i == 3 && residual_matches(u));
    if (blocked_depthwise(u)) return i == 0 || (i == 3 && residual_matches(u));
    if (blocked_elementwise(u)) return full_size(u, u.inputs[i]);
    return i == 0 && (blocked_max_pool(u) || blocked_global_average(u));
  };
  const std::set<const Value*> outputs(g.outputs.begin(), g.outputs.end());
  std::set<const Value*> blocked;
  for (const auto& up : g.nodes()) {
    const Node& p = *up;
    if (p.outputs.empty() || !p.outputs[0] || !writes_blocks(p)) continue;
    for (const Value* v : p.outputs) {  // a fused elementwise node may have several (all tied)
      if (v && !outputs.count(v) && every_read(g, v, reads_blocks)) blocked.insert(v);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& up : g.nodes()) {
      // A pool writes blocks only from blocks (it may read blocks and write NCHW).
      if (blocked_max_pool(*up) && blocked.count(up->outputs[0]) && !blocked.count(up->input(0))) {
        blocked.erase(up->outputs[0]);
        changed = true;
      }
    }
    if (drop_untied(g, direct, blocked)) changed = true;
  }
  return blocked;
}

// The blocked tensors to hold in 16-channel blocks (kConvBlockWide): those a direct
// convolution or a depthwise one writes and only such convolutions read, each side able to take
// them (kernels::conv_tactic_unsupported with the wide block: AVX-512, channels a multiple of 16,
// a direct one's wide input only at stride_w 1; a depthwise one with no residual and no channel
// means, wide on both sides or neither), and a residual wide exactly when its convolution's
// output is (solved as solve() does). The other blocked readers (pools, averages, generated
// elementwise kernels) keep 8-channel blocks. Depthwise layers between wide tensors
// (mobilenet_v2's expand -> depthwise -> projection) let the expand store one vector a pixel:
// into 8-channel blocks it took 1.04-1.10 of the time (conv_bench ExpandOut8vs16).
std::set<const Value*> solve_wide(const Graph& g, const std::set<const Value*>& blocked) {
  // The node's shape with a wide input (x) or output (y), if the direct tactic takes it.
  auto direct_takes = [](const Node& n, bool x) {
    if (!lowered_direct(n)) return false;
    const std::optional<std::vector<int64_t>> d = dims4(n.input(0));
    if (!d) return false;
    kernels::Conv2dShape s = ops::fused_conv_shape(n, *d, n.attr_ints("w_shape", {}));
    if (x) s.x_blocked = true, s.x_block = kernels::kConvBlockWide;
    else s.y_blocked = true, s.y_block = kernels::kConvBlockWide;
    return kernels::conv_tactic_unsupported(kernels::ConvTactic::Direct, s).empty();
  };
  // A depthwise node whose 16-channel kernel takes wide blocks in and out.
  const bool depthwise_wide = wide_depthwise_enabled();
  auto depthwise_takes = [&](const Node& n) {
    if (!depthwise_wide || !blocked_depthwise(n) || n.input(3) || n.outputs.size() != 1) return false;
    const std::optional<std::vector<int64_t>> d = dims4(n.input(0));
    if (!d) return false;
    kernels::Conv2dShape s = ops::fused_conv_shape(n, *d, n.attr_ints("w_shape", {}));
    s.x_blocked = s.y_blocked = true, s.x_block = s.y_block = kernels::kConvBlockWide;
    return kernels::conv_tactic_unsupported(kernels::ConvTactic::Depthwise, s).empty();
  };
  std::set<const Value*> wide;
  for (const Value* v : blocked) {
    const Node* p = v->producer;
    // A second output (the channel means) is read by kernels that take 8-channel blocks.
    if (!p || p->outputs.size() != 1 || !(direct_takes(*p, false) || depthwise_takes(*p))) continue;
    auto reads_wide = [&](const Node& u, size_t i) {
      return (i == 0 && (direct_takes(u, true) || depthwise_takes(u))) || (i == 3 && lowered_direct(u));
    };
    if (every_read(g, v, reads_wide)) wide.insert(v);
  }
  // A residual is wide only with its convolution's output (the other ties join tensors that are
  // never wide: a generated kernel reads or writes them), and a depthwise node's input only with
  // its output.
  for (bool changed = true; changed;) {
    changed = drop_untied(g, lowered_direct, wide);
    for (const auto& up : g.nodes()) {
      if (!depthwise_takes(*up)) continue;
      const Value* x = up->input(0);
      const Value* y = up->outputs[0];
      if (wide.count(x) == wide.count(y)) continue;
      wide.erase(x), wide.erase(y);
      changed = true;
    }
  }
  return wide;
}

}  // namespace

bool blocked_layout_enabled() { return env_switch_on("KILN_BLOCKED_LAYOUT"); }

bool wide_blocks_enabled() { return env_switch_on("KILN_WIDE_BLOCKS"); }

bool wide_depthwise_enabled() { return env_switch_on("KILN_WIDE_DEPTHWISE"); }

std::set<const Node*> pointwise_between_blocks(const Graph& g) {
  std::set<const Node*> out;
  if (!blocked_layout_enabled()) return out;
  // The direct tiles fuse only the clamps into the blocked store (ConvTileOut::fused_act); any
  // other activation costs a pass over the stored blocks. AVX-512 takes the 1x1s whatever their
  // activation (its choice, not re-measured since). On AVX2 (Zen 3, in-process pairs, all such
  // 1x1s direct against pointwise): mobilenet_v2 (Clip) 0.94-0.955 at one thread, 0.79 at two;
  // efficientnet_b0 (SiLU) 1.02-1.10 at one, its 1x1s 0.16-0.5 ms slower each. So there only
  // the 1x1s whose activation the tile fuses.
  const bool any_act = std::string(kernels::gemm_isa()) == "avx512";
  // Before lowering: each convolution's tactic by cost; 1x1s (pointwise or pixel-gemm) that
  // direct can run are candidates.
  std::map<const Node*, std::pair<int64_t, int64_t>> direct;  // by cost, or a candidate
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    if (n.domain != ops::kKilnDomain || n.op != "FusedConv") continue;
    std::string why, others;
    const auto t = choose_conv_tactic(n, why, others);
    if (!t || (*t != kernels::ConvTactic::Direct && *t != kernels::ConvTactic::Pointwise &&
               *t != kernels::ConvTactic::PixelGemm))
      continue;
    const Tensor& w = *n.input(1)->initializer;
    const kernels::Conv2dShape s = ops::fused_conv_shape(n, {1, w.dim(1) * n.attr_i("group", 1), 8, 8}, w.dims());
    if (*t == kernels::ConvTactic::Direct) {
      if (s.group == 1) direct[&n] = {s.C, s.K};
      continue;
    }
    const auto act = static_cast<kernels::Act>(ops::activation_of(n).act);
    if (kernels::conv_tactic_unsupported(kernels::ConvTactic::Pointwise, s).empty() &&
        kernels::conv_tactic_unsupported(kernels::ConvTactic::Direct, s).empty() &&
        (any_act || kernels::ConvTileOut::fused_act(act)))
      direct[&n] = {s.C, s.K}, out.insert(&n);
  }
  // Keep the candidates whose input and output both end up blocked: one on either side in NCHW
  // runs direct slower than pointwise (conv_bench, Zen 5, one thread, us: 64->256 at 56x56
  // pointwise 603, direct NCHW 676, direct blocked 580; 256->64 586 / 563 / 519).
  auto dims = [&](const Node& n) -> std::optional<std::pair<int64_t, int64_t>> {
    auto it = direct.find(&n);
    if (it == direct.end()) return std::nullopt;
    return it->second;
  };
  for (bool changed = true; changed;) {
    changed = false;
    const std::set<const Value*> blocked = solve(g, dims);
    for (auto it = out.begin(); it != out.end();) {
      if (blocked.count((*it)->input(0)) && blocked.count((*it)->outputs[0])) {
        ++it;
        continue;
      }
      direct.erase(*it);
      it = out.erase(it);
      changed = true;
    }
  }
  return out;
}

int assign_blocked_layout(Graph& g, int* wide_tensors) {
  if (!blocked_layout_enabled()) return 0;
  const std::set<const Value*> blocked = solve(g, lowered_direct);
  const std::set<const Value*> wide = wide_blocks_enabled() ? solve_wide(g, blocked) : std::set<const Value*>{};
  if (wide_tensors) *wide_tensors = static_cast<int>(wide.size());
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (blocked_elementwise(n)) {  // solve() blocks all its outputs and full-size inputs or none
      if (blocked.count(n.outputs[0])) n.attrs["y_blocked"] = int64_t{1};
      continue;
    }
    if (!lowered_direct(n) && !blocked_depthwise(n) && !blocked_depthwise(n, true) && !blocked_max_pool(n) &&
        !blocked_global_average(n))
      continue;
    if (blocked.count(n.input(0))) n.attrs["x_blocked"] = int64_t{1};
    if (blocked.count(n.outputs[0])) n.attrs["y_blocked"] = int64_t{1};
    if (wide.count(n.input(0))) n.attrs["x_block"] = kernels::kConvBlockWide;
    if (wide.count(n.outputs[0])) n.attrs["y_block"] = kernels::kConvBlockWide;
  }
  return static_cast<int>(blocked.size());
}

}  // namespace kiln::lower

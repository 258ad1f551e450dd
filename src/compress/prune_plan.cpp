// plan_pruning: channel groups followed through the graph (union-find over groups joined by
// element-wise ops), the reasons groups are skipped, and the channels each pruned group keeps.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <unordered_map>

#include "kiln/compress/prune.h"
#include "kiln/passes/rewrite.h"

namespace kiln::compress {
namespace {

using passes::constant_of;

// Where a tensor's channels come from: `axis` of the tensor holds the runs end to end.
struct Layout {
  int64_t axis = 1;
  std::vector<ChannelRun> runs;
  bool has_groups() const {
    return std::any_of(runs.begin(), runs.end(), [](const ChannelRun& r) { return r.group >= 0; });
  }
  bool unit_one() const {
    return std::all_of(runs.begin(), runs.end(), [](const ChannelRun& r) { return r.unit == 1; });
  }
};

bool is(const Node& n, std::string_view op) { return n.domain.empty() && n.op == op; }

bool one_of(const Node& n, std::initializer_list<std::string_view> ops) {
  return n.domain.empty() && std::find(ops.begin(), ops.end(), n.op) != ops.end();
}

// Element-wise ops of one activation input that leave channels where they are.
bool keeps_channels(const Node& n) {
  return one_of(n, {"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu",
                    "Softplus", "Gelu", "Identity", "Dropout", "Neg", "Abs", "Erf", "Exp", "Sqrt", "Reciprocal"});
}

bool is_pool(const Node& n) {
  return one_of(n, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"}) &&
         (n.outputs.size() < 2 || !n.outputs[1]);
}

class Analysis {
 public:
  Analysis(const Model& m, const PruneOptions& opt) : m_(m), opt_(opt) {}

  PrunePlan run() {
    for (const auto& up : m_.graph->nodes()) visit(*up);
    for (const Value* o : m_.graph->outputs)
      if (const Layout* l = layout(o)) block(*l, "reaches the graph output " + o->name);
    return finish();
  }

 private:
  struct GroupInfo {
    int parent;
    int64_t channels;
    std::vector<const Node*> producers;
    std::vector<std::string> readers, joins, blocked;
  };

  int find(int g) {
    while (groups_[g].parent != g) g = groups_[g].parent = groups_[groups_[g].parent].parent;
    return g;
  }
  void unite(int a, int b, const Node& why) {
    a = find(a), b = find(b);
    if (a == b) {
      groups_[a].joins.push_back(why.name);
      return;
    }
    groups_[b].parent = a;
    auto& A = groups_[a];
    auto& B = groups_[b];
    A.producers.insert(A.producers.end(), B.producers.begin(), B.producers.end());
    A.readers.insert(A.readers.end(), B.readers.begin(), B.readers.end());
    A.joins.insert(A.joins.end(), B.joins.begin(), B.joins.end());
    A.blocked.insert(A.blocked.end(), B.blocked.begin(), B.blocked.end());
    A.joins.push_back(why.name);
  }
  void block(const Layout& l, const std::string& why) {
    for (const auto& r : l.runs)
      if (r.group >= 0) groups_[find(r.group)].blocked.push_back(why);
  }
  const Layout* layout(const Value* v) const {
    auto it = layouts_.find(v);
    return it == layouts_.end() ? nullptr : &it->second;
  }
  void block_inputs(const Node& n, const std::string& why) {
    for (const Value* v : n.inputs)
      if (const Layout* l = layout(v)) block(*l, why);
  }
  void edit(const Node& n, int input, int64_t axis, const std::vector<ChannelRun>& runs, ChannelEdit::Kind kind) {
    edits_.push_back({n.name, input, axis, runs, kind});
  }
  static std::string who(const Node& n) { return n.op + " '" + n.name + "'"; }

  // A layer reading a channel-carrying tensor loses the matching weight rows/columns.
  bool read_by_layer(const Node& n, const Layout& l, int64_t k_axis) {
    for (const auto& r : l.runs)
      if (r.group >= 0) groups_[find(r.group)].readers.push_back(n.name);
    edit(n, 1, k_axis, l.runs, ChannelEdit::Reader);
    return true;
  }

  void new_group(const Node& n, int64_t channels, int64_t out_axis, int64_t w_axis) {
    int g = static_cast<int>(groups_.size());
    groups_.push_back({g, channels, {&n}, {}, {}, {}});
    if (std::find(opt_.exclude.begin(), opt_.exclude.end(), n.name) != opt_.exclude.end())
      groups_[g].blocked.push_back(n.name + " is excluded (--exclude)");
    if (channels < 2) groups_[g].blocked.push_back(n.name + " has one output channel");
    std::vector<ChannelRun> runs = {{g, channels, 1}};
    edit(n, 1, w_axis, runs, ChannelEdit::Producer);
    if (const Value* b = n.input(2)) {
      const Tensor* bt = constant_of(b);
      if (!bt) groups_[g].blocked.push_back(n.name + "'s bias is not a constant");
      else if (bt->numel() == channels) edit(n, 2, static_cast<int64_t>(bt->rank()) - 1, runs, ChannelEdit::Producer);
      else if (bt->numel() != 1) groups_[g].blocked.push_back(n.name + "'s bias is not per channel");
    }
    layouts_[n.outputs[0]] = Layout{out_axis, runs};
  }

  void visit(const Node& n) {
    const Value* x = n.input(0);
    const Layout* lx = x ? layout(x) : nullptr;
    if (is(n, "Conv") && constant_of(n.input(1)) && constant_of(n.input(1))->rank() >= 3) {
      const Tensor& w = *constant_of(n.input(1));
      const int64_t group = n.attr_i("group", 1);
      if (group == 1) {
        if (lx) {
          if (lx->axis == 1 && lx->unit_one()) read_by_layer(n, *lx, 1);
          else block(*lx, "read by " + who(n) + " along another axis");
        }
        new_group(n, w.dim(0), 1, 0);
        return;
      }
      // Depthwise (one filter per channel): channels pass through, its filters go with them.
      const bool depthwise = w.dim(1) == 1 && w.dim(0) == group;
      if (lx && depthwise && lx->axis == 1 && lx->unit_one()) {
        edit(n, 1, 0, lx->runs, ChannelEdit::PerChannel);
        if (n.input(2)) edit(n, 2, 0, lx->runs, ChannelEdit::PerChannel);
        if (n.input(2) && !constant_of(n.input(2))) block(*lx, who(n) + " has a computed bias");
        layouts_[n.outputs[0]] = *lx;
        return;
      }
      if (lx) block(*lx, "read by the grouped " + who(n));
      return;
    }
    if ((is(n, "Gemm") || is(n, "MatMul")) && constant_of(n.input(1)) && constant_of(n.input(1))->rank() == 2 && x &&
        x->shape.rank_known) {
      const Tensor& w = *constant_of(n.input(1));
      const bool gemm = is(n, "Gemm");
      if (gemm && n.attr_i("transA", 0)) {
        if (lx) block(*lx, "read by " + who(n) + " with transA");
        return;
      }
      const bool transB = gemm && n.attr_i("transB", 0);
      const int64_t rank = static_cast<int64_t>(x->shape.rank());
      if (lx) {
        if (lx->axis == rank - 1) read_by_layer(n, *lx, transB ? 1 : 0);
        else block(*lx, "read by " + who(n) + " along another axis");
      }
      if (!gemm && rank < 2) return;
      new_group(n, transB ? w.dim(0) : w.dim(1), rank - 1, transB ? 0 : 1);
      return;
    }
    if (keeps_channels(n)) {
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (const Layout* l = layout(n.inputs[i])) block(*l, "a parameter of " + who(n));
      if (lx && n.outputs[0]) layouts_[n.outputs[0]] = *lx;
      return;
    }
    if (is_pool(n)) {
      if (!lx) return;
      if (lx->axis == 1) layouts_[n.outputs[0]] = *lx;
      else block(*lx, "pooled by " + who(n) + " across channels");
      return;
    }
    if (is(n, "Flatten")) {
      if (!lx) return;
      const int64_t rank = static_cast<int64_t>(x->shape.rank());
      int64_t f = n.attr_i("axis", 1);
      if (f < 0) f += rank;
      bool ok = lx->axis == f && x->shape.rank_known;
      int64_t inner = 1;
      for (int64_t d = f + 1; ok && d < rank; ++d) {
        ok = x->shape.dims[d].is_static();
        if (ok) inner *= x->shape.dims[d].value;
      }
      if (!ok || f != 1) {
        block(*lx, "flattened by " + who(n) + " across the channel axis");
        return;
      }
      Layout out{1, lx->runs};
      for (auto& r : out.runs) r.unit *= inner;
      layouts_[n.outputs[0]] = out;
      return;
    }
    if (is(n, "Concat")) {
      bool any = false;
      for (const Value* v : n.inputs) any |= layout(v) != nullptr;
      if (!any) return;
      const int64_t rank = x && x->shape.rank_known ? static_cast<int64_t>(x->shape.rank()) : -1;
      int64_t axis = n.attr_i("axis", 0);
      if (axis < 0) axis += rank;
      Layout out{axis, {}};
      for (const Value* v : n.inputs) {
        const Layout* l = layout(v);
        if (l && l->axis == axis) {
          out.runs.insert(out.runs.end(), l->runs.begin(), l->runs.end());
        } else if (!l && v->shape.rank_known && v->shape.dims[axis].is_static()) {
          out.runs.push_back({-1, v->shape.dims[axis].value, 1});
        } else {
          block_inputs(n, "concatenated by " + who(n) + " along another axis");
          return;
        }
      }
      layouts_[n.outputs[0]] = out;
      return;
    }
    if (one_of(n, {"Add", "Sub", "Mul", "Div"}) && n.inputs.size() == 2 && n.input(0) && n.input(1)) {
      binary(n);
      return;
    }
    block_inputs(n, "read by " + who(n));
  }

  // Element-wise binary op: two channel-carrying tensors join their groups; a constant is sliced
  // per channel when it has the channel axis, or ignored when it broadcasts over it.
  void binary(const Node& n) {
    const Value* a = n.inputs[0];
    const Value* b = n.inputs[1];
    const Layout* la = layout(a);
    const Layout* lb = layout(b);
    if (!la && !lb) return;
    const Value* y = n.outputs[0];
    if (!y || !y->shape.rank_known || !a->shape.rank_known || !b->shape.rank_known) {
      block_inputs(n, who(n) + " has unknown ranks");
      return;
    }
    const int64_t R = static_cast<int64_t>(y->shape.rank());
    auto aligned = [&](const Value* v, const Layout& l) { return l.axis + R - static_cast<int64_t>(v->shape.rank()); };
    if (la && lb) {
      const int64_t axis = aligned(a, *la);
      bool same = axis == aligned(b, *lb) && la->runs.size() == lb->runs.size();
      for (size_t i = 0; same && i < la->runs.size(); ++i)
        same = la->runs[i].channels == lb->runs[i].channels && la->runs[i].unit == lb->runs[i].unit &&
               (la->runs[i].group >= 0) == (lb->runs[i].group >= 0);
      if (!same) {
        block_inputs(n, who(n) + " joins channels of different layouts");
        return;
      }
      for (size_t i = 0; i < la->runs.size(); ++i)
        if (la->runs[i].group >= 0) unite(la->runs[i].group, lb->runs[i].group, n);
      layouts_[y] = Layout{axis, la->runs};
      return;
    }
    const Layout& l = la ? *la : *lb;
    const Value* with = la ? a : b;
    const Value* other = la ? b : a;
    const int64_t axis = aligned(with, l);
    int64_t elements = 0;
    for (const auto& r : l.runs) elements += r.channels * r.unit;
    const int64_t orank = static_cast<int64_t>(other->shape.rank());
    const int64_t oaxis = axis - (R - orank);  // the channel axis in `other`'s dims (< 0: absent)
    const bool broadcast = oaxis < 0 || (other->shape.dims[oaxis].is_static() && other->shape.dims[oaxis].value == 1);
    if (broadcast) {
      layouts_[y] = Layout{axis, l.runs};
      return;
    }
    if (constant_of(other) && other->shape.dims[oaxis].is_static() && other->shape.dims[oaxis].value == elements) {
      edit(n, la ? 1 : 0, oaxis, l.runs, ChannelEdit::PerChannel);
      layouts_[y] = Layout{axis, l.runs};
      return;
    }
    block(l, who(n) + " combines the channels with a tensor no pruned layer produces");
  }

  static double channel_norm(const Tensor& w, int64_t axis, int64_t c, ChannelNorm norm) {
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
    const int64_t channels = w.dim(static_cast<size_t>(axis)), outer = w.numel() / (channels * inner);
    const float* p = w.data<float>();
    double s = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const double v = p[(o * channels + c) * inner + i];
        s += norm == ChannelNorm::L1 ? std::abs(v) : v * v;
      }
    return norm == ChannelNorm::L1 ? s : std::sqrt(s);
  }

  std::vector<int64_t> choose_kept(const GroupInfo& g) {
    std::vector<double> score(static_cast<size_t>(g.channels), 0.0);
    for (const Node* p : g.producers) {
      const Tensor& w = *constant_of(p->input(1));
      const bool gemm_kn = (is(*p, "Gemm") && !p->attr_i("transB", 0)) || is(*p, "MatMul");
      const int64_t axis = gemm_kn ? 1 : 0;
      std::vector<double> nrm(score.size());
      double mean = 0;
      for (int64_t c = 0; c < g.channels; ++c) mean += nrm[c] = channel_norm(w, axis, c, opt_.norm);
      mean /= static_cast<double>(g.channels);
      for (int64_t c = 0; c < g.channels; ++c) score[c] += mean > 0 ? nrm[c] / mean : 0.0;
    }
    int64_t keep = g.channels - static_cast<int64_t>(std::llround(opt_.ratio * static_cast<double>(g.channels)));
    if (opt_.multiple > 1) keep = (keep + opt_.multiple - 1) / opt_.multiple * opt_.multiple;
    keep = std::clamp<int64_t>(keep, 1, g.channels);
    std::vector<int64_t> idx(static_cast<size_t>(g.channels));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
    idx.resize(static_cast<size_t>(keep));
    std::sort(idx.begin(), idx.end());
    return idx;
  }

  PrunePlan finish() {
    PrunePlan plan;
    std::unordered_map<int, int> index;  // root -> plan group
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      const int r = find(g);
      if (index.count(r)) continue;
      const GroupInfo& info = groups_[r];
      index[r] = static_cast<int>(plan.groups.size());
      ChannelGroup cg;
      for (const Node* p : info.producers) cg.producers.push_back(p->name);
      std::set<std::string> seen;
      for (const auto& s : info.readers)
        if (seen.insert(s).second) cg.readers.push_back(s);
      cg.joins = info.joins;
      cg.channels = info.channels;
      if (!info.blocked.empty()) {
        cg.skipped = info.blocked.front();
        if (info.blocked.size() > 1) cg.skipped += " (and " + std::to_string(info.blocked.size() - 1) + " more)";
      } else if (!info.joins.empty() && !opt_.residuals) {
        cg.skipped = std::to_string(info.producers.size()) + " layers joined by " + info.joins.front() +
                     (info.joins.size() > 1 ? " and " + std::to_string(info.joins.size() - 1) + " more" : "") +
                     " (residual): pruned together only with --residuals";
      } else if (opt_.ratio > 0) {
        cg.kept = choose_kept(info);
        if (static_cast<int64_t>(cg.kept.size()) == cg.channels) cg.skipped = "too few channels to remove any";
      } else {
        cg.skipped = "ratio 0";
      }
      plan.groups.push_back(std::move(cg));
    }
    for (auto& e : edits_) {
      for (auto& r : e.runs)
        if (r.group >= 0) r.group = index.at(find(r.group));
      plan.edits.push_back(e);
    }
    return plan;
  }

  const Model& m_;
  const PruneOptions& opt_;
  std::vector<GroupInfo> groups_;
  std::unordered_map<const Value*, Layout> layouts_;
  std::vector<ChannelEdit> edits_;
};

}  // namespace

PrunePlan plan_pruning(const Model& m, const PruneOptions& opt) {
  KILN_CHECK(opt.ratio >= 0 && opt.ratio < 1, "--ratio ", opt.ratio, ": expected a share in [0, 1)");
  KILN_CHECK(opt.multiple >= 1, "--multiple ", opt.multiple, ": expected a positive count");
  for (const auto& name : opt.exclude) {
    bool found = false;
    for (const auto& n : m.graph->nodes()) found |= n->name == name;
    KILN_CHECK(found, "--exclude ", name, ": no node has this name");
  }
  return Analysis(m, opt).run();
}

std::vector<std::string> pruned_readers(const PrunePlan& plan) {
  std::vector<std::string> out;
  for (const auto& e : plan.edits) {
    if (e.kind != ChannelEdit::Reader) continue;
    bool changed = false;
    for (const auto& r : e.runs) changed |= r.group >= 0 && plan.groups[r.group].pruned();
    if (changed && std::find(out.begin(), out.end(), e.node) == out.end()) out.push_back(e.node);
  }
  return out;
}

}  // namespace kiln::compress

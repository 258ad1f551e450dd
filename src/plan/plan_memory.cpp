// The planner: kinds, live ranges, views, in-place reuse and arena offsets (see plan.h).
#include <algorithm>
#include <unordered_set>

#include "plan_internal.h"

namespace kiln::plan {
namespace {

bool has_static_bytes(const Value* v) {
  return v->dtype != DType::undefined && dtype_size(v->dtype) > 0 && v->shape.rank_known && v->shape.is_static();
}

// A block of arena bytes shared by one value, the views of it, and the values written in place
// over it; it lives from its first definition to the last read of any of them.
struct Block {
  int first = 0, last = 0;
  int64_t bytes = 0;
};

class Planner {
 public:
  Planner(const Graph& g, const PlanOptions& opt) : g_(g), opt_(opt) {}

  Plan run() {
    KILN_CHECK(opt_.alignment > 0 && (opt_.alignment & (opt_.alignment - 1)) == 0, "memory plan: alignment ",
               opt_.alignment, " is not a power of two");
    p_.alignment = opt_.alignment;
    make_steps();
    add_values();
    live_ranges();
    for (size_t s = 0; s < p_.steps.size(); ++s) place_outputs(static_cast<int>(s));
    add_scratch();
    assign();
    return std::move(p_);
  }

 private:
  // A value with static bytes: dtype size x elements, or more when stored_bytes says so.
  int64_t value_bytes(const Value* v) const {
    const int64_t plain = static_cast<int64_t>(dtype_size(v->dtype)) * *v->shape.numel();
    const int64_t stored = opt_.stored_bytes ? opt_.stored_bytes(v) : 0;
    return std::max(plain, stored);
  }

  int idx(const Value* v) const {
    auto it = p_.index.find(v);
    return it == p_.index.end() ? -1 : it->second;
  }

  void make_steps() {
    std::vector<int> order;
    if (opt_.order == Order::MemoryAware) {
      std::unordered_map<const Value*, int64_t> sizes;
      for (const auto& n : g_.nodes())
        for (const Value* o : n->outputs)
          if (o && has_static_bytes(o)) sizes[o] = round_up(value_bytes(o), opt_.alignment);
      order = memory_aware_order(g_, sizes);
    } else {
      order = graph_order(g_);
    }
    for (int i : order) {
      const Node* n = g_.nodes()[i].get();
      StepPlan st;
      st.node = n;
      st.name = n->name;
      st.op = n->domain.empty() ? n->op : n->domain + "." + n->op;
      p_.steps.push_back(std::move(st));
    }
  }

  int add(const Value* v, ValueKind kind, int first) {
    ValuePlan vp;
    vp.name = v->name;
    vp.value = v;
    vp.kind = kind;
    vp.dtype = v->dtype;
    vp.first = first;
    vp.last = first;
    if (has_static_bytes(v)) {
      vp.dims = v->shape.static_dims();
      vp.bytes = value_bytes(v);
    }
    int i = static_cast<int>(p_.values.size());
    p_.index.emplace(v, i);
    p_.values.push_back(std::move(vp));
    storage_.push_back(kind);
    block_.push_back(-1);
    return i;
  }

  void add_values() {
    for (const Value* v : g_.inputs) add(v, ValueKind::Input, -1);
    for (const Value* v : g_.initializers)
      if (idx(v) < 0) add(v, ValueKind::Weight, -1);
    for (size_t s = 0; s < p_.steps.size(); ++s)
      for (const Value* o : p_.steps[s].node->outputs)
        if (o) add(o, ValueKind::Arena, static_cast<int>(s));
  }

  void live_ranges() {
    std::vector<const Value*> reads;
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      reads.clear();
      collect_reads(*p_.steps[s].node, reads);
      for (const Value* v : reads) {
        int i = idx(v);
        if (i < 0) {
          // Outer values (when planning a body) belong to the enclosing graph's plan.
          KILN_CHECK(v->owner != &g_, p_.steps[s].node->describe(), ": reads '", v->name, "', which nothing defines");
          continue;
        }
        ValuePlan& vp = p_.values[i];
        KILN_CHECK(vp.first < static_cast<int>(s), p_.steps[s].node->describe(), ": reads '", v->name,
                   "' before it is computed (the order is not topological)");
        vp.last = std::max(vp.last, static_cast<int>(s));
      }
    }
    const int end = static_cast<int>(p_.steps.size());
    for (const Value* v : g_.outputs) {
      int i = idx(v);
      KILN_CHECK(i >= 0 || v->owner != &g_, "graph '", g_.name, "': output '", v->name, "' is never computed");
      if (i >= 0) {
        p_.values[i].last = end;
        outputs_.insert(v);
      }
    }
  }

  // The kind and bytes of each output of the node at step s.
  void place_outputs(int s) {
    const Node& n = *p_.steps[s].node;
    const MemoryEffect effect = memory_effect(n);
    std::vector<int> claimed;  // blocks already written in place by an earlier output of this node
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value* o = n.outputs[k];
      if (!o) continue;
      const int oi = idx(o);
      ValuePlan& vp = p_.values[oi];
      if (!has_static_bytes(o)) {
        set_kind(oi, ValueKind::Dynamic);
        continue;
      }
      if (outputs_.count(o)) {
        set_kind(oi, ValueKind::Output);
        continue;
      }
      if (effect == MemoryEffect::View && k == 0 && opt_.views && try_view(n, oi)) continue;
      if (effect == MemoryEffect::InPlace && opt_.in_place && try_in_place(n, s, oi, claimed)) continue;
      block_[oi] = new_block(vp.first, vp.last, vp.bytes);
    }
  }

  void set_kind(int i, ValueKind k) {
    p_.values[i].kind = k;
    storage_[i] = k;
  }

  int new_block(int first, int last, int64_t bytes) {
    blocks_.push_back(Block{first, last, round_up(bytes, opt_.alignment)});
    return static_cast<int>(blocks_.size()) - 1;
  }

  bool try_view(const Node& n, int oi) {
    const Value* x = n.input(0);
    if (!x) return false;
    int xi = idx(x);
    if (xi < 0) return try_outer_view(*x, oi);
    const ValuePlan& xp = p_.values[xi];
    ValuePlan& vp = p_.values[oi];
    ValueKind st = storage_[xi];
    if (st != ValueKind::Input && st != ValueKind::Weight && st != ValueKind::Arena) return false;
    if (!has_static_bytes(x) || xp.dtype != vp.dtype || xp.bytes != vp.bytes) return false;
    vp.kind = ValueKind::View;
    vp.alias = xp.name;
    storage_[oi] = st;
    block_[oi] = block_[xi];
    if (block_[oi] >= 0) blocks_[block_[oi]].last = std::max(blocks_[block_[oi]].last, vp.last);
    return true;
  }

  // A view of a value of the enclosing graph: its bytes, not this plan's (storage Input: never in
  // the arena, never overwritten in place).
  bool try_outer_view(const Value& x, int oi) {
    ValuePlan& vp = p_.values[oi];
    if (!opt_.outer_view_ok || x.owner == &g_ || !has_static_bytes(&x) || x.dtype != vp.dtype) return false;
    const int64_t bytes = static_cast<int64_t>(dtype_size(x.dtype)) * numel_of(x.shape.static_dims());
    if (bytes != vp.bytes || !opt_.outer_view_ok(&x)) return false;
    vp.kind = ValueKind::View;
    vp.alias = x.name;
    storage_[oi] = ValueKind::Input;
    return true;
  }

  bool try_in_place(const Node& n, int s, int oi, std::vector<int>& claimed) {
    ValuePlan& vp = p_.values[oi];
    // A kernel that keeps the promise for one input only names it (a convolution's residual).
    const int64_t only = n.attr_i("in_place_input", -1);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* x = n.inputs[i];
      if (!x || (only >= 0 && static_cast<int64_t>(i) != only)) continue;
      int xi = idx(x);
      if (xi < 0 || storage_[xi] != ValueKind::Arena) continue;
      const ValuePlan& xp = p_.values[xi];
      int b = block_[xi];
      if (xp.dtype != vp.dtype || xp.dims != vp.dims || blocks_[b].last != s) continue;
      if (std::find(claimed.begin(), claimed.end(), b) != claimed.end()) continue;
      // Another input in the same bytes under other dims would be read after being overwritten;
      // with a named input, so would the same value as another input (an elementwise op reads
      // x[i] at each of its inputs before writing i; a convolution reads all of X).
      bool shared = false;
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const Value* y = n.inputs[j];
        if (!y || j == i || (y == x && only < 0)) continue;
        if (y == x || (idx(y) >= 0 && block_[idx(y)] == b)) shared = true;
      }
      if (shared) continue;
      vp.in_place = true;
      vp.alias = xp.name;
      block_[oi] = b;
      blocks_[b].last = std::max(blocks_[b].last, vp.last);
      claimed.push_back(b);
      return true;
    }
    return false;
  }

  void add_scratch() {
    scratch_block_.assign(p_.steps.size(), -1);
    if (!opt_.scratch_bytes) return;
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      int64_t bytes = opt_.scratch_bytes(*p_.steps[s].node);
      KILN_CHECK(bytes >= 0, p_.steps[s].node->describe(), ": negative workspace size ", bytes);
      if (bytes == 0) continue;
      p_.steps[s].scratch_bytes = bytes;
      scratch_block_[s] = new_block(static_cast<int>(s), static_cast<int>(s), bytes);
    }
  }

  void assign() {
    std::vector<Interval> iv;
    for (const Block& b : blocks_) iv.push_back(Interval{b.first, b.last, b.bytes, -1});
    p_.arena_bytes = assign_offsets(iv, opt_.reuse);
    for (size_t i = 0; i < p_.values.size(); ++i) {
      if (block_[i] >= 0) p_.values[i].offset = iv[block_[i]].offset;
      if (p_.values[i].kind == ValueKind::Arena) p_.intermediate_bytes += round_up(p_.values[i].bytes, opt_.alignment);
    }
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      if (scratch_block_[s] < 0) continue;
      p_.steps[s].scratch_offset = iv[scratch_block_[s]].offset;
      p_.intermediate_bytes += iv[scratch_block_[s]].bytes;
    }
    // Bytes live at each step: +bytes where a block starts, -bytes after it ends.
    std::vector<int64_t> delta(p_.steps.size() + 2, 0);
    for (const Block& b : blocks_) {
      delta[b.first] += b.bytes;
      delta[std::min<size_t>(b.last + 1, p_.steps.size() + 1)] -= b.bytes;
    }
    int64_t live = 0;
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      live += delta[s];
      if (live > p_.lower_bound_bytes) {
        p_.lower_bound_bytes = live;
        p_.lower_bound_step = static_cast<int>(s);
      }
    }
  }

  const Graph& g_;
  const PlanOptions& opt_;
  Plan p_;
  std::vector<ValueKind> storage_;  // per value: whose bytes it uses (Input, Weight, Arena, Dynamic, Output)
  std::vector<int> block_;          // per value: its arena block, or -1
  std::vector<Block> blocks_;
  std::vector<int> scratch_block_;  // per step
  std::unordered_set<const Value*> outputs_;
};

}  // namespace

const ValuePlan* Plan::find(std::string_view name) const {
  for (const ValuePlan& v : values)
    if (v.name == name) return &v;
  return nullptr;
}

int Plan::index_of(const Value* v) const {
  auto it = index.find(v);
  return it == index.end() ? -1 : it->second;
}

Plan plan_memory(const Graph& g, const PlanOptions& opt) { return Planner(g, opt).run(); }

}  // namespace kiln::plan

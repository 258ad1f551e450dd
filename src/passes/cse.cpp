// cse: merges nodes that compute the same thing — same op, domain, inputs (in any order for
// commutative ops) and attributes — and equal small constants (up to 4096 elements), in the
// main graph and in each subgraph. Later readers use the first copy.
//
// Deliberately does not: merge nodes holding subgraphs, random ops, constants that are graph
// inputs or outputs, or large weights (hashing them costs more than it saves); it does not
// reason about algebra beyond commutativity (a+b vs b+a, not (a+b)+c vs a+(b+c)).
#include <cstring>
#include <unordered_map>

#include "builtin_passes.h"
#include "kiln/passes/rewrite.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr int64_t kMaxMergedConstantElements = 4096;

bool commutative(const Node& n) {
  static const char* ops[] = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal"};
  if (!n.domain.empty()) return false;
  for (const char* o : ops)
    if (n.op == o) return true;
  return false;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Text that is equal for equal attributes (tensors by content; floats by bits).
std::string attr_key(const Attribute& a) {
  std::string k = str_cat(static_cast<int>(a.kind()), ":");
  switch (a.kind()) {
    case AttrKind::Int: return k + std::to_string(a.i());
    case AttrKind::Float: {
      float f = a.f();
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return k + std::to_string(bits);
    }
    case AttrKind::String: return str_cat(k, a.s().size(), ":", a.s());
    case AttrKind::Ints:
      for (int64_t v : a.ints()) k += std::to_string(v) + ",";
      return k;
    case AttrKind::Floats:
      for (float f : a.floats()) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        k += std::to_string(bits) + ",";
      }
      return k;
    case AttrKind::Strings:
      for (const auto& s : a.strings()) k += str_cat(s.size(), ":", s);
      return k;
    case AttrKind::Tensor: {
      const Tensor& t = a.t();
      k += str_cat(dtype_name(t.dtype()), dims_str(t.dims()), ":");
      return k + std::string(static_cast<const char*>(t.raw()), t.nbytes());
    }
    case AttrKind::Graph: break;
  }
  return k;
}

std::string node_key(const Node& n) {
  std::vector<const Value*> ins(n.inputs.begin(), n.inputs.end());
  if (commutative(n)) std::sort(ins.begin(), ins.end());
  std::string k = str_cat(n.domain, "::", n.op, "(");
  for (const Value* v : ins) k += str_cat(static_cast<const void*>(v), ",");
  k += str_cat(")", n.outputs.size(), "{");
  for (const auto& [name, a] : n.attrs) k += str_cat(name, "=", attr_key(a), ";");
  return k + "}";
}

bool mergeable(const Node& n) {
  if (!n.subgraphs().empty() || n.outputs.empty()) return false;
  return n.op.rfind("Random", 0) != 0 && n.op != "Multinomial" && n.op != "Bernoulli";
}

// Merges equal small initializers; returns how many went.
size_t merge_constants(Graph& g, Rewriter& rw) {
  std::unordered_map<std::string, Value*> first;
  std::vector<Value*> dups;
  for (Value* v : g.initializers) {
    const Tensor* t = constant_of(v);
    if (!t || t->numel() > kMaxMergedConstantElements || is_graph_output(v)) continue;
    std::string key = str_cat(dtype_name(t->dtype()), dims_str(t->dims()), ":") +
                      std::string(static_cast<const char*>(t->raw()), t->nbytes());
    auto [it, fresh] = first.emplace(std::move(key), v);
    if (!fresh && same_tensor(*t, *constant_of(it->second))) {
      rw.replace(v, it->second);
      dups.push_back(v);
    }
  }
  for (Value* v : dups) g.remove_value(v);
  return dups.size();
}

class CommonSubexpressionElimination : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  std::string_view summary() const override {
    return "merge nodes with the same op, inputs and attributes, and equal small constants";
  }
  bool run(Model& m, PassContext& ctx) override {
    size_t merged = 0;
    for_each_graph(*m.graph, [&](Graph& g) {
      Rewriter rw(m, g, nullptr);
      merged += merge_constants(g, rw);
      std::unordered_map<std::string, Node*> seen;
      for (Node* n : node_list(g)) {
        if (rw.was_erased(n) || !mergeable(*n)) continue;
        std::string key = node_key(*n);
        auto [it, fresh] = seen.emplace(key, n);
        if (fresh) continue;
        Node* keep = it->second;
        // Keys hold value addresses; one freed by an earlier merge may have been reused.
        if (node_key(*keep) != key) {
          it->second = n;
          continue;
        }
        bool outputs_match = true;
        for (size_t i = 0; i < n->outputs.size(); ++i)
          if (n->outputs[i] && !keep->outputs[i]) outputs_match = false;
        if (!outputs_match) continue;  // the first copy omits an output this one makes
        ctx.applied(name(), *n, str_cat("same as ", keep->describe()));
        rw.set_insertion_point(n);
        for (size_t i = 0; i < n->outputs.size(); ++i)
          if (n->outputs[i]) rw.replace(n->outputs[i], keep->outputs[i]);
        rw.erase_if_dead(n);
        ++merged;
      }
    });
    return merged > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse() { return std::make_unique<CommonSubexpressionElimination>(); }

}  // namespace kiln::passes

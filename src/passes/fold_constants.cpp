// fold-constants: evaluates nodes whose inputs are all constants with the reference kernels
// and replaces their outputs by initializers of the same names (the Constant op included).
//
// Deliberately does not: fold results over 64 MiB (a Tile or ConstantOfShape can blow weights
// up; the reason is recorded), fold random ops, nodes with subgraphs, or DequantizeLinear of
// weights (quantized models keep int8 weights). It leaves the now-unused input initializers
// for dce, and does not look at shapes (simplify-shapes does).
#include "builtin_passes.h"
#include "constant_eval.h"
#include "walk.h"

namespace kiln::passes {
namespace {

constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;

bool reads_only_constants(const Node& n) {
  for (const Value* v : n.inputs)
    if (v && !constant_of(v)) return false;
  return true;
}

class FoldConstants : public Pass {
 public:
  std::string_view name() const override { return "fold-constants"; }
  std::string_view summary() const override {
    return "evaluate nodes whose inputs are all constants into initializers (results up to 64 MiB)";
  }
  bool run(Model& m, PassContext& ctx) override {
    bool changed = false;
    for_each_graph(*m.graph, [&](Graph& g) {
      Rewriter rw(m, g, nullptr);
      for (Node* n : node_list(g)) {
        if (rw.was_erased(n)) continue;
        // Only refusals of nodes that read nothing but constants are interesting to --explain.
        if (!reads_only_constants(*n)) continue;
        std::string what = n->describe();
        Decision d = fold_node(*n, rw, kMaxFoldedBytes);
        if (!d) {
          ctx.decline(name(), *n, d);
          continue;
        }
        ctx.remarks.push_back(Remark{std::string(name()), what, true, "folded into a constant"});
        changed = true;
      }
    });
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_constants() { return std::make_unique<FoldConstants>(); }

}  // namespace kiln::passes

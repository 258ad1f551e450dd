// GlobalAveragePools of a depthwise convolution's output folded into it, as its second output
// (kiln.FusedConv's M, Epilogue::channel_means): the blocked depthwise kernel sums each part of
// its output right after writing it, while the part is in cache, on the threads that wrote it,
// and the separate pass over the whole output goes (efficientnet_b0's 16 squeeze-excitation
// averages; the small ones ran on one thread at 2, reading half their input from the other
// core). After the layouts and the in-place marks: neither reads the averages, and the rule
// needs the tactic. The pool's output value becomes the convolution's, so its name, its readers
// and the profile's mapping to the source nodes stay as they were.
#include <set>
#include <string>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// The packed depthwise kiln.FusedConv whose only output the pool averages, or nullptr (why not
// in `why`).
Node* depthwise_producer(const Graph& g, const Node& pool, std::string& why) {
  const Value* x = pool.input(0);
  const Value* m = pool.outputs.empty() ? nullptr : pool.outputs[0];
  Node* p = x ? x->producer : nullptr;
  if (!m || !p || p->owner != &g) return why = "its input is not a node's output in this graph", nullptr;
  if (p->domain != ops::kKilnDomain || p->op != "FusedConv" || !p->has_attr("packed") ||
      p->attr_s("tactic", "") != kernels::conv_tactic_name(kernels::ConvTactic::Depthwise))
    return why = "its input does not come from a packed depthwise convolution", nullptr;
  if (p->outputs.size() != 1) return why = "the convolution already has a second output", nullptr;
  if (x->dtype != DType::f32 || m->dtype != DType::f32 || !x->shape.rank_known || x->shape.rank() != 4)
    return why = "not an f32 4-D average", nullptr;
  return p;
}

}  // namespace

bool fold_means_enabled() {
  return env_switch_on("KILN_FOLD_MEANS");
}

int fold_channel_means(Graph& g, std::vector<KernelChoice>& kernels) {
  if (!fold_means_enabled()) return 0;
  std::vector<std::pair<Node*, Node*>> folds;  // (pool, convolution)
  std::set<const Node*> taken;                  // a convolution takes one pool's average
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (!n.domain.empty() || n.op != "GlobalAveragePool") continue;
    std::string why;
    Node* p = depthwise_producer(g, n, why);
    if (p && taken.insert(p).second) {
      folds.emplace_back(&n, p);
      continue;
    }
    if (p) why = "its convolution already averages its output for another pool";
    for (KernelChoice& c : kernels)
      if (c.node == n.name) c.why += "; not folded into the convolution before it: " + why;
  }
  for (auto [pool, conv] : folds) {
    Value* m = pool->outputs[0];
    const std::string pool_name = pool->name;
    pool->outputs.clear();  // m survives the pool: it becomes the convolution's output
    conv->outputs.push_back(m);
    m->producer = conv;
    g.remove_node(pool);
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (kernels[i].node == conv->name)
        kernels[i].why += "; averages its output for GlobalAveragePool '" + pool_name +
                          "' as it writes it (the pool's pass over the output folded in)";
    }
    std::erase_if(kernels, [&](const KernelChoice& c) { return c.node == pool_name; });
  }
  return static_cast<int>(folds.size());
}

}  // namespace kiln::lower

// Node-by-node execution of a flat model with the op table's reference kernels, stoppable
// between nodes: the pruning reconstruction runs the original and the pruned model up to a
// layer, reads that layer's input, changes the layer's weights, and goes on from there, so the
// whole reconstruction costs one pass over each model instead of one per layer.
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::compress {

class Stepper {
 public:
  // `m` must outlive the stepper and have no subgraphs; its constants are read when a node
  // runs, so a weight replaced before its node runs is the one used.
  Stepper(const Model& m, const std::map<std::string, Tensor>& inputs, int threads = 0);
  // Runs the nodes before index `node` (in graph order) not run yet.
  void run_to(size_t node);
  void run_all() { run_to(nodes_.size()); }
  size_t position() const { return next_; }
  // A value computed so far (or a constant / input); throws when it is gone or not yet made.
  const Tensor& value(const Value* v) const;

 private:
  const Model& model_;
  const std::vector<std::unique_ptr<Node>>& nodes_;
  std::unordered_map<const Value*, Tensor> values_;
  std::vector<std::vector<const Value*>> dies_after_;
  size_t next_ = 0;
  int threads_;
};

}  // namespace kiln::compress

// Memory planning: for a graph whose shapes are concrete, the execution order, the live range of
// every value, and the placement of every intermediate in ONE arena at a fixed byte offset.
//
//   - Order: the graph's topological order, or a memory-aware greedy order (Order::MemoryAware).
//   - Live ranges: a value lives from the step that makes it to the last step that reads it
//     (reads inside If/Loop/Scan bodies count at the step of their node).
//   - Views: Reshape / Flatten / Squeeze / Unsqueeze / Identity outputs are their input's bytes
//     under other dims; they cost nothing and keep their root alive as long as they are read.
//   - In place: an elementwise op may write an output into an input with the same dtype and dims
//     whose bytes die at that very step (no other live value shares them).
//   - Offsets: greedy by size (largest buffer first, each into the smallest gap that fits among
//     the buffers it overlaps in time), every offset a multiple of `alignment`.
//   - Graph inputs, weights and graph outputs are not in the arena (the caller and the artifact own
//     them); values whose shape is not static are Dynamic (allocated when they are computed).
//
// The plan is plain data: names, kinds, offsets, sizes and ranges, printable as JSON (plan.json
// in the artifact) and as a text report (`kiln compile --report`). Value pointers are kept
// for the runtime that binds tensors to the plan; they are valid while the planned graph lives.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::plan {

// How an op's outputs may share memory with its inputs.
enum class MemoryEffect : uint8_t {
  None,     // outputs need bytes of their own
  InPlace,  // elementwise: an output may overwrite an input of equal dtype and dims that dies here
  View,     // output 0 is input 0's bytes under other dims: no copy, no kernel
};
// From a small table (ONNX elementwise ops are InPlace, reshape-like ops are View); unknown ops None.
// The node overload also honours a node's own `in_place` attribute (set by the lowering where
// its kernel keeps the InPlace promise: lower/in_place_convs.cpp).
MemoryEffect memory_effect(std::string_view domain, std::string_view op);
MemoryEffect memory_effect(const Node& n);
// Declares or overrides the effect of an op (the lowering registers its own ops); later calls win.
void set_memory_effect(std::string_view domain, std::string_view op, MemoryEffect e);

enum class ValueKind : uint8_t {
  Input,    // graph input: the caller's tensor
  Weight,   // initializer: the artifact's bytes (mapped, or their huge-page copy)
  Arena,    // intermediate at a fixed offset in the arena
  View,     // another value's bytes (see ValuePlan::alias) under its own dims
  Dynamic,  // shape known only at run time: allocated when computed
  Output,   // graph output: a buffer of its own, handed to the caller
};
std::string_view value_kind_name(ValueKind k);  // "input", "weight", "arena", "view", "dynamic", "output"

struct ValuePlan {
  std::string name;
  const Value* value = nullptr;  // the planned value (valid while the graph lives)
  ValueKind kind = ValueKind::Arena;
  DType dtype = DType::undefined;
  std::vector<int64_t> dims;  // concrete dims (empty for Dynamic)
  int64_t bytes = 0;          // dtype size x elements, or more (PlanOptions::stored_bytes); 0 for Dynamic
  int64_t offset = -1;        // arena offset: Arena values and views of arena values; else -1
  int first = -1;             // step that makes it; -1 for inputs and weights
  int last = -1;              // last step that reads it (its defining step when unread);
                              // the number of steps for graph outputs (they outlive the run)
  std::string alias;          // View: the value it views; in-place Arena: the input it overwrites
  bool in_place = false;
};

struct StepPlan {
  const Node* node = nullptr;
  std::string name, op;        // node name and "op" or "domain.op"
  int64_t scratch_offset = -1; // workspace in the arena for this step's kernel
  int64_t scratch_bytes = 0;
};

enum class Order : uint8_t {
  Graph,        // the graph's node order (topological)
  MemoryAware,  // greedy: among ready nodes, the one that frees most / allocates least first
};

struct PlanOptions {
  int64_t alignment = 64;  // every arena offset (and size) is a multiple of this
  bool reuse = true;       // false: no two intermediates share bytes (for comparison and debugging)
  bool in_place = true;
  bool views = true;
  Order order = Order::Graph;
  // Workspace bytes a node's kernel needs while it runs (e.g. convolution panels); nullptr = none.
  std::function<int64_t(const Node&)> scratch_bytes;
  // Planning a body (an If branch): whether an outer value's bytes stay where they are for the
  // whole run of the body, so that a Reshape-like op of it can be a view (the view's alias is then
  // a name of the enclosing plan). nullptr: outer values are always copied.
  std::function<bool(const Value*)> outer_view_ok;
  // Bytes a value takes when more than its dtype and dims say (a convolution's output written
  // into padded planes: ops::padded_planes_bytes); 0 or nullptr: dtype size x elements.
  std::function<int64_t(const Value*)> stored_bytes;
};

struct Plan {
  std::vector<StepPlan> steps;    // in execution order
  std::vector<ValuePlan> values;  // graph inputs, weights, then node outputs in step order
  int64_t alignment = 64;
  int64_t arena_bytes = 0;         // the arena's size (peak offset + size)
  int64_t intermediate_bytes = 0;  // every arena value and workspace with bytes of its own (no reuse)
  int64_t lower_bound_bytes = 0;   // max over steps of arena bytes live at that step
  int lower_bound_step = -1;       // the step where that maximum is reached

  // nullptr / -1 when the value is not in the plan.
  const ValuePlan* find(std::string_view name) const;
  int index_of(const Value* v) const;

  std::string to_json() const;  // plan.json
  std::string report() const;   // human-readable summary with the largest buffers

  std::unordered_map<const Value*, int> index;  // value -> position in `values`
};

// Every value a node reads: its inputs and the outer values its subgraphs read (appended to out,
// with repeats). The interpreter frees values by the same rule.
void collect_reads(const Node& n, std::vector<const Value*>& out);

// Plans the graph as its shapes are now (bind dims and infer shapes first). Values whose shape is
// not static become Dynamic. Throws kiln::Error when the graph reads a value nothing defines.
Plan plan_memory(const Graph& g, const PlanOptions& opt = {});

}  // namespace kiln::plan

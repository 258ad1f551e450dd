// Fixing a model's dynamic dims from user flags (`--dim N=8`, `--shape x=1,3,640,640`).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::ops {

struct InputSpec {
  DimBindings dims;                                     // --dim NAME=VALUE
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape INPUT=d0,d1,...
};

// Symbolic dim names used by the graph inputs, in first-seen order.
std::vector<std::string> input_dim_symbols(const Graph& g);

// Checks the spec against the graph inputs (unknown dim names or inputs, wrong rank,
// conflicts with a static dim or between two bindings are errors naming both sides),
// rewrites the input shapes, derives bindings of symbols that a --shape fixes, and
// re-runs shape inference with all bindings. Returns the bindings used.
DimBindings specialize_inputs(Model& m, const InputSpec& spec);

}  // namespace kiln::ops

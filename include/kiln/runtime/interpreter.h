// The reference interpreter: runs a Model node by node with the op table's reference
// kernels. It is the oracle every optimized path is tested against.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln {

struct RunOptions {
  int threads = 0;  // 0 = all cores
};

// Checks each input against the graph's declared dtype and shape (rank, static dims, and
// symbolic dims consistently bound; ranges from `ranges`), then runs. Errors name the
// input, the expected and the actual shape. Missing inputs are an error; unknown names too.
struct DimRange {
  int64_t min = 0, max = INT64_MAX;
};
using DimRanges = std::map<std::string, DimRange>;

std::map<std::string, Tensor> run_model(const Model& m, const std::map<std::string, Tensor>& inputs,
                                        const RunOptions& opt = {}, const DimRanges& ranges = {});

// Same, returning outputs in graph-output order.
std::vector<Tensor> run_graph(const Model& m, const std::vector<Tensor>& inputs, const RunOptions& opt = {});

// Checks one input tensor against its declaration: dtype, rank, static dims, and symbolic dims
// within `ranges` and bound consistently across inputs (`bound` collects them). Throws kiln::Error
// naming the input, the expected and the actual shape. Shared by run_model and the compiled runtime.
void check_input(const Value& decl, const Tensor& t, DimBindings& bound, const DimRanges& ranges);

// Runs a subgraph of `m` (an If branch, a Loop or Scan body) with the reference kernels, its
// formal inputs bound to `inputs`; values of enclosing graphs are found with `outer`. For a
// runtime that keeps the enclosing graph's values itself (the compiled runtime's fallback).
using ValueLookup = std::function<const Tensor*(const Value*)>;
std::vector<Tensor> run_subgraph(const Model& m, const Graph& g, const std::vector<Tensor>& inputs,
                                 const ValueLookup& outer, int threads);

}  // namespace kiln

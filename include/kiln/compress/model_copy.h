// Copies of a model for the compress tools, which rewrite many variants of one float model
// (one per layer for the sensitivity analysis, one per candidate plan, the pruned model).
#pragma once
#include "kiln/ir/graph.h"

namespace kiln::compress {

// A structural copy of `m`: new graph, values and nodes; initializer tensors share their
// storage with `m` (a rewrite replaces a constant, it never writes into one). Models whose
// nodes hold subgraphs (If, Loop, Scan) are refused with a kiln::Error: their inner values point
// into the outer graph, so the callers re-import those instead.
Model copy_model(const Model& m);
// True when copy_model accepts `m`.
bool copyable(const Model& m);

}  // namespace kiln::compress

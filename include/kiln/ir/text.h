// kiln's textual IR: prints a Model and parses it back.
//
//   kiln.model ir=8 opset=17
//   graph main(%x: f32[N,3,8,8]) -> (%y) {
//     %w = init f32[4,3,3,3] dense<...>          weights may be elided: elided<min=..,max=..>
//     %y = Conv(%x, %w, _) {kernel_shape=[3,3], pads=[1,1,1,1]} : f32[N,4,8,8] @conv1
//   }
//
// The full grammar is in docs/textual-ir.md. Printing then parsing gives back the same
// graph (names, ops, attributes, dtypes, shapes); with PrintOptions::elide_weights the
// weight data is summarised and parses back as zero-filled tensors of the right shape.
#pragma once
#include <string>

#include "kiln/ir/graph.h"

namespace kiln {

struct PrintOptions {
  bool elide_weights = false;    // replace initializer/tensor-attribute data by a summary
  size_t elide_over = 16;        // with elide_weights: only tensors with more elements than this
  bool show_shapes = true;       // print ": dtype[dims]" after node results
  // print "@name" after nodes (only where the parser would not give the same name back);
  // false compares graphs by structure alone, e.g. a pass result with an expected text.
  bool show_names = true;
};

std::string print_model(const Model& m, const PrintOptions& opt = {});
std::string print_graph(const Graph& g, const PrintOptions& opt = {});

// Throws kiln::Error "line L:C: message" on malformed text.
Model parse_model(const std::string& text);

}  // namespace kiln

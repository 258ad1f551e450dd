// Code generation for kiln.FusedElementwise nodes: one C++ function per node, following the
// calling convention in fused_abi.h, built later into the artifact's kernel library (build.h).
//
// The function is specialised to the shapes the node was compiled for: a flat loop when every
// input is full-size or a scalar, a row loop when inputs broadcast along trailing dims (conv
// bias/scale, [N,C,1,1] excitation, [1,N] rows), and a general strided loop that is correct for
// any out_dims and strides the runtime passes (it picks the first path whose layout checks pass).
// Transcendentals of f32 values call the branch-free approximations of the prelude so that the
// loops vectorise; see kernel_prelude() and docs/codegen.md for their stated errors.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::codegen {

struct EmitOptions {
  std::string symbol;       // "" = "kiln_fe_" + a hash of the kernel's text (same body, same symbol)
  bool specialise = true;   // false: only the general strided path (tests compare the paths)
};

struct GeneratedKernel {
  std::string symbol;   // extern "C" kiln_fused_fn
  std::string source;   // C++ text; compiled after kernel_prelude(), which it relies on
};

// Constants inside the body with more elements than this are refused: the fusion pass keeps
// them as node inputs instead of baking them into the source.
constexpr int64_t kMaxBakedConstantElements = 4096;
// Output ranks above this are refused (the row path keeps per-dim offsets on the stack).
constexpr int kMaxRank = 16;

// Whether emit_fused_kernel can translate this node of a FusedElementwise body (op, attributes,
// dtypes of its inputs). On false, *why (when given) says why in one line. The fusion pass must
// not put a node into a body unless this returns true.
bool can_generate(const Node& body_node, std::string* why = nullptr);

// C++ source for `fused` (op kiln.FusedElementwise with a graph attribute `body`). Throws
// kiln::Error naming the node and the first body node it cannot translate.
GeneratedKernel emit_fused_kernel(const Node& fused, const EmitOptions& opt = {});

// Emits every kiln.FusedElementwise node of `g` (and of its subgraphs), records each kernel's
// symbol in the node's string attribute `kernel` (what the runtime dlsym()s), and returns the
// distinct kernels, ready for build_kernel_library. Throws like emit_fused_kernel.
// Nodes whose body holds an op can_generate refuses get no kernel; each adds a line to `skipped`.
std::vector<GeneratedKernel> emit_graph_kernels(Graph& g, const EmitOptions& opt = {},
                                                std::vector<std::string>* skipped = nullptr);

// Definitions every generated kernel uses (ABI struct, fast math, stride checks); the builder
// puts it once at the top of the library's translation unit.
std::string_view kernel_prelude();

}  // namespace kiln::codegen

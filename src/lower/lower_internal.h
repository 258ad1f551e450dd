// Pieces of the lowering shared between its files.
#pragma once
#include <vector>

#include "kiln/lower/lower.h"

namespace kiln::lower {

// Plain Conv/MatMul/Gemm -> kiln.FusedConv/FusedMatMul; returns how many were rewritten.
// Nodes it cannot rewrite get a note saying why.
int canonicalize(Graph& g, std::vector<KernelChoice>& notes);

// Lone f32 elementwise ops -> one-op kiln.FusedElementwise (generated loops); returns how many.
int wrap_lone_elementwise(Graph& g);

// Picks the tactic of a kiln.FusedConv / kiln.FusedMatMul and (when `pack`) replaces its
// constant weight by the packed one. Returns the choice; adds the packed bytes to `bytes`.
KernelChoice lower_conv(Graph& g, Node& n, bool pack, double& bytes);
KernelChoice lower_matmul(Graph& g, Node& n, bool pack, double& bytes);

// Marks the tensors that pass between packed direct convolutions only as channel-blocked
// (attributes x_blocked / y_blocked on the convolutions; blocked_layout.cpp); returns how many.
int assign_blocked_layout(Graph& g);

}  // namespace kiln::lower

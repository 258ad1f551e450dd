// Proves that a boolean mask condition is the causal mask of attention, so fuse-attention can
// replace it by kiln.Attention's causal = 1 instead of reading a mask tensor.
//
// The condition is a constant boolean buffer C (leading dims 1, then [L0, L1]), optionally
// sliced along its last two axes with steps 1, negated by Not, passed through Cast to bool:
// GPT-2 exports `bias[:, :, past:past+seq, :past+seq]` this way, or (static shapes) the folded
// [1,1,S,S] constant. Slice bounds may be computed at run time from shapes
// (Gather(Shape(t), i), Add, Sub, Unsqueeze, ...); they are evaluated symbolically as linear
// expressions of the dims (DimExpr). The mask is causal when the query/key position (i, j) of the
// [Sq, Sk] scores is masked exactly when j > i + (Sk - Sq).
//
// Assumption: symbolic slice ends do not exceed the buffer (past + seq <= L, which the model's
// own position-embedding table imposes too); constant ends are clamped as Slice does.
#pragma once
#include "kiln/ir/graph.h"
#include "kiln/passes/pass.h"

namespace kiln::passes::fuse {

// `cond` selects masked scores when it equals `masked_when`; `scores` is the [.., Sq, Sk]
// product the mask applies to.
Decision is_causal_mask(const Value* cond, bool masked_when, const Value* scores);

}  // namespace kiln::passes::fuse

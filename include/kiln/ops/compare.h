// The comparisons Equal, Less, LessOrEqual, Greater and GreaterOrEqual (bool out) on a
// broadcast plan, shared by their reference kernels (src/ops/elementwise/compare_logic.cpp) and
// the compiled runtime's fast kernel (src/runtime/fast_compare.cpp), which plans once per shape.
#pragma once
#include <optional>
#include <string_view>

#include "kiln/ops/broadcast.h"

namespace kiln::ops {

enum class Comparison { Equal, Less, LessOrEqual, Greater, GreaterOrEqual };

// The comparison an ONNX op name denotes; nullopt for any other op.
std::optional<Comparison> comparison_of(std::string_view op);

// Whether `compare` takes operands of this dtype: bool, f32, f64 and the integers (the
// reference kernels compare f16 / bf16 through f32 copies).
bool compare_takes(DType dtype);

// out[i] = a[i] (cmp) b[i] over plan p (operand 0 is a, 1 is b), both of `dtype`; throws for a
// dtype compare_takes refuses. Splits over `threads` when the output is large.
void compare(Comparison cmp, const BroadcastPlan& p, DType dtype, const void* a, const void* b, bool* out,
             int threads);

}  // namespace kiln::ops

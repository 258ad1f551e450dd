// Dtypes, shapes and tensor literals, read from the token stream (docs/textual-ir.md).
#pragma once
#include "kiln/ir/tensor.h"
#include "text_lexer.h"

namespace kiln::text {

DType parse_dtype(Cursor& c);    // f32, bool, ...; '?' gives DType::undefined
Shape parse_shape(Cursor& c);    // [N,3,?], [], [*]
// f32[2,2] dense<1, 2, 3, 4> | dense<0.5> (fills) | elided<...> (zero-filled). Sizes are
// bounded before anything is allocated; large zero tensors are untouched anonymous pages.
Tensor parse_tensor(Cursor& c);

}  // namespace kiln::text

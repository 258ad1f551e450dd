// Pieces shared by the control-flow ops (If, Loop, Scan): fetching body graphs, running a
// body with arity and dtype checks, merging branch/iteration shapes, slicing and stacking
// along an axis.
#pragma once
#include <string>
#include <vector>

#include "../op_helpers.h"

namespace kiln::ops::control {

// The graph attribute `name` of the node; fails naming node and attribute when absent.
const Graph& body_attr(const Node& n, const std::string& name);

// Shape that holds for both a and b: equal dims kept, differing dims unknown,
// differing rank (or an unknown rank) gives unknown rank.
Shape merge_shapes(const Shape& a, const Shape& b);
// Same for dtypes: undefined when either is undefined; fails when both are known and differ.
DType merge_dtypes(const InferContext& c, DType a, DType b, const std::string& what);

// Runs `body` with `inputs` bound to its formal inputs. Checks the input count and the
// declared input dtypes before, the output count (== expected_outputs) after.
std::vector<Tensor> run_body(const KernelContext& c, const Graph& body, const std::string& what,
                             const std::vector<Tensor>& inputs, size_t expected_outputs);

// The If branch (0: then, 1: else) that a condition known during inference selects (input 0 as
// an initializer or a value inference computed), or -1.
int known_branch(const InferContext& c);

// Reads a 1-element tensor as bool / int64; fails naming `what` otherwise.
bool read_bool(const KernelContext& c, const Tensor& t, const std::string& what);
int64_t read_i64(const KernelContext& c, const Tensor& t, const std::string& what);

// Slice `index` of t along `axis`, with that axis removed (a fresh tensor).
Tensor take_along(const Tensor& t, int64_t axis, int64_t index);
// Stacks equally shaped `parts` along a new `axis`; part i goes to position i, or
// parts.size()-1-i when `reverse`. `empty_dims`/`empty_dtype` describe one part when
// there are none (zero iterations). Fails naming `what` when part shapes/dtypes differ.
Tensor stack_along(const KernelContext& c, const std::vector<Tensor>& parts, int64_t axis, bool reverse,
                   const std::vector<int64_t>& empty_dims, DType empty_dtype, const std::string& what);

// Dims of a body value declared static enough to build a zero-length output: unknown dims
// count as 0 (the result has 0 elements anyway). Fails when the rank is unknown.
std::vector<int64_t> dims_for_empty(const KernelContext& c, const Value& v, const std::string& what);

// Before a Loop/Scan body is inferred, gives body inputs whose dtype/shape the model left
// out what the node's inputs imply (shape inference calls this; a no-op for other ops).
void seed_body_inputs(Node& n, int64_t opset);

}  // namespace kiln::ops::control

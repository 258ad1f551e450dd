// The toy model shared by the perf-diagnosis and profile tests:
// x[batch,64] -> MatMul(w) -> Add(b) -> Relu -> Transpose, shapes inferred. One chain of three
// kernels with two single-use intermediates, one layout transpose, one float GEMM with constant
// weights; nodes named mm, bias, act, tr.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/op.h"

namespace kiln::analysis {

inline Model toy_mlp(Dim batch) {
  Model m;
  m.opsets[""] = 17;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({batch, Dim(64)}));
  Value* w = g.add_initializer("w", Tensor(DType::f32, {64, 64}));
  Value* b = g.add_initializer("b", Tensor(DType::f32, {64}));
  Value* y = g.add_node("MatMul", {x, w}, {"y"}, {}, "mm")->outputs[0];
  Value* z = g.add_node("Add", {y, b}, {"z"}, {}, "bias")->outputs[0];
  Value* r = g.add_node("Relu", {z}, {"r"}, {}, "act")->outputs[0];
  Value* t = g.add_node("Transpose", {r}, {"t"}, {{"perm", std::vector<int64_t>{1, 0}}}, "tr")->outputs[0];
  g.outputs = {t};
  ops::infer_shapes(m);
  return m;
}

}  // namespace kiln::analysis

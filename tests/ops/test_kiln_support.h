// Helpers for the kiln-domain op tests: models written in textual IR, run on random inputs,
// compared with the unfused ONNX graph they replace.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::kilntest {

inline Tensor random_f32(const std::vector<int64_t>& dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Parses, verifies, infers shapes and runs `text`; returns output 0.
inline Tensor run_text(const std::string& text, const std::map<std::string, Tensor>& feeds) {
  Model m = parse_model(text);
  ops::verify_model(m);
  ops::infer_shapes(m);
  auto out = run_model(m, feeds, RunOptions{1});
  return out.at(m.graph->outputs.at(0)->name);
}

// max |a - b| <= tol * max(1, max |b|), dims equal.
inline void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(dims_str(a.dims()), dims_str(b.dims()));
  double worst = 0, scale = 1;
  for (int64_t i = 0; i < b.numel(); ++i) {
    worst = std::max(worst, std::abs(a.as_double(i) - b.as_double(i)));
    scale = std::max(scale, std::abs(b.as_double(i)));
  }
  EXPECT_LE(worst, tol * scale) << "max |difference| " << worst << " over max |reference| " << scale;
}

// Sum of the FLOPs of every node (shapes inferred, all static).
inline double total_flops(const Model& m) {
  double f = 0;
  for (const auto& n : m.graph->nodes()) f += ops::node_cost(*n)->flops;
  return f;
}

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_double(i));
  return v;
}

}  // namespace kiln::kilntest

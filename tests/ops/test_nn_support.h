// Helpers for the nn op tests: build a one-node model, infer shapes, run it with the
// reference interpreter, and compare tensors.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::nntest {

struct Arg {
  std::string name;  // "" = omitted optional input
  Tensor value;
  bool initializer = false;
  Shape shape = Shape::unknown_rank();  // declared shape; defaults to value's dims
};

inline Arg in(std::string name, Tensor t) { return {std::move(name), std::move(t)}; }
inline Arg init(std::string name, Tensor t) { return {std::move(name), std::move(t), true}; }
inline Arg none() { return {}; }

struct OneNode {
  Model m;
  Node* node = nullptr;
  std::map<std::string, Tensor> feeds;

  // `outputs`: names of the node outputs ("" = omitted); all named ones become graph outputs.
  OneNode(const std::string& op, const std::vector<Arg>& args, const std::vector<std::string>& outputs,
          std::map<std::string, Attribute> attrs = {}, int64_t opset = 13) {
    m.opsets[""] = opset;
    std::vector<Value*> ins;
    for (const Arg& a : args) {
      if (a.name.empty()) {
        ins.push_back(nullptr);
      } else if (a.initializer) {
        ins.push_back(m.graph->add_initializer(a.name, a.value));
      } else {
        Shape s = a.shape.rank_known ? a.shape : Shape::of(a.value.dims());
        ins.push_back(m.graph->add_input(a.name, a.value.dtype(), s));
        if (a.value.defined()) feeds[a.name] = a.value;
      }
    }
    node = m.graph->add_node(op, ins, outputs, std::move(attrs), "n0");
    for (Value* v : node->outputs)
      if (v) m.graph->outputs.push_back(v);
  }
  void infer() { ops::infer_shapes(m); }
  const Value& out(size_t i) const { return *node->outputs[i]; }
  // Infers shapes, runs, and returns the named outputs in order.
  std::vector<Tensor> run(int threads = 1) {
    infer();
    RunOptions opt;
    opt.threads = threads;
    auto res = run_model(m, feeds, opt);
    std::vector<Tensor> r;
    for (Value* v : node->outputs)
      if (v) r.push_back(res.at(v->name));
    return r;
  }
};

inline Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }

inline Tensor random_f32(std::vector<int64_t> dims, unsigned seed, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::f32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

inline void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4, const std::string& what = "") {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.as_double(i), w = want.as_double(i);
    ASSERT_NEAR(g, w, tol * (1 + std::fabs(w))) << what << " at flat index " << i;
  }
}

inline void expect_values(const Tensor& got, std::vector<int64_t> dims, std::vector<double> want, double tol = 1e-5) {
  ASSERT_EQ(got.dims(), dims);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got.as_double(i), want[i], tol) << "at flat index " << i;
}

}  // namespace kiln::nntest

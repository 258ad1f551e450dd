// Shared by tests/ops/test_tensor_*.cpp: one-node models run through verify + infer_shapes +
// run_model; every run also checks that a static inferred shape/dtype equals what the kernel made.
// Test-only helpers, so they live in an unnamed namespace of each test file that includes this.
#pragma once
#include <gtest/gtest.h>

#include <cctype>
#include <climits>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {
namespace {


// ---- local helpers: one-node models, run through verify + infer_shapes + run_model.
// Every run also checks that a static inferred shape/dtype equals what the kernel made.
struct In {
  Tensor t;
  bool constant = false;  // initializer (visible to shape inference) vs graph input
  bool present = true;
};
[[maybe_unused]] In data(Tensor t) { return {std::move(t), false, true}; }
[[maybe_unused]] In cst(Tensor t) { return {std::move(t), true, true}; }
[[maybe_unused]] In none() { return {Tensor(), false, false}; }

[[maybe_unused]] Tensor i64s(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
[[maybe_unused]] Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), v); }
[[maybe_unused]] Tensor iota_f32(std::vector<int64_t> dims) {
  Tensor t(DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

struct OpRun {
  std::vector<Tensor> out;
  std::vector<Shape> inferred;
};

OpRun run_op(const std::string& op, const std::vector<In>& ins, std::map<std::string, Attribute> attrs = {},
           int64_t opset = 13, int nout = 1) {
  Model m;
  m.opsets[""] = opset;
  Graph& g = *m.graph;
  std::vector<Value*> vs;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (!ins[i].present) {
      vs.push_back(nullptr);
    } else if (ins[i].constant) {
      vs.push_back(g.add_initializer(name, ins[i].t));
    } else {
      vs.push_back(g.add_input(name, ins[i].t.dtype(), Shape::of(ins[i].t.dims())));
      feeds[name] = ins[i].t;
    }
  }
  std::vector<std::string> outs;
  for (int j = 0; j < nout; ++j) outs.push_back("out" + std::to_string(j));
  Node* n = g.add_node(op, vs, outs, std::move(attrs));
  for (Value* o : n->outputs) g.outputs.push_back(o);
  ops::verify_model(m);
  ops::infer_shapes(m);
  auto res = run_model(m, feeds);
  OpRun r;
  for (int j = 0; j < nout; ++j) {
    const Tensor& t = res.at(outs[j]);
    const Value* v = n->outputs[j];
    if (v->shape.is_static()) {
      EXPECT_EQ(dims_str(v->shape.static_dims()), dims_str(t.dims())) << op << " output " << j;
    }
    EXPECT_EQ(dtype_name(v->dtype), dtype_name(t.dtype())) << op << " output " << j;
    r.out.push_back(t);
    r.inferred.push_back(v->shape);
  }
  return r;
}

// Inferred shape of a one-node model's output 0 with symbolic/static graph inputs
// (`shapes`) and constant inputs (`consts`, by position; undefined Tensor = graph input).
[[maybe_unused]] std::string infer_op(const std::string& op, const std::vector<std::pair<DType, Shape>>& shapes,
                     const std::map<size_t, Tensor>& consts, std::map<std::string, Attribute> attrs = {},
                     int64_t opset = 13) {
  Model m;
  m.opsets[""] = opset;
  Graph& g = *m.graph;
  std::vector<Value*> vs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    auto it = consts.find(i);
    vs.push_back(it != consts.end() ? g.add_initializer(name, it->second)
                                    : g.add_input(name, shapes[i].first, shapes[i].second));
  }
  Node* n = g.add_node(op, vs, {"out"}, std::move(attrs));
  g.outputs.push_back(n->outputs[0]);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return n->outputs[0]->shape.str();
}

[[maybe_unused]] Shape sym(std::vector<std::string> dims) {  // "N" -> symbol, "3" -> static
  Shape s;
  for (const auto& d : dims) s.dims.push_back(std::isdigit(d[0]) ? Dim(std::stoll(d)) : Dim::sym(d));
  return s;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_double(i));
  return v;
}

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  auto got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace
}  // namespace kiln

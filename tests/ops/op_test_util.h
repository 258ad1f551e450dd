// Builds and runs one-node models for op tests:
//
//   OneNode t("Add", 13);
//   t.input("a", f32({2}, {1, 2})).input("b", f32({}, {3})).attr("x", 1);
//   Tensor y = t.run1();           // verifies, infers shapes, runs the reference interpreter
//   EXPECT_EQ(t.out_shape().str(), "[2]");
//
// Inputs given with a tensor become graph inputs of that dtype and static shape (or of a
// declared Shape, e.g. symbolic, via input_decl); constant() makes an initializer;
// omitted() leaves an optional input out.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/ops/op.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::test {

inline Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }
inline Tensor f64(std::vector<int64_t> dims, std::vector<double> v) { return Tensor::from_vector<double>(dims, v); }
inline Tensor i32(std::vector<int64_t> dims, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(dims, v); }
inline Tensor i64(std::vector<int64_t> dims, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(dims, v); }
inline Tensor u8(std::vector<int64_t> dims, std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(dims, v); }
inline Tensor boolean(std::vector<int64_t> dims, std::vector<bool> v) {
  Tensor t(DType::boolean, dims);
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

// All elements as doubles (any dtype).
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.as_double(i);
  return v;
}

// Checks dims and values (NaN matches NaN; tol is absolute + relative).
inline void expect_tensor(const Tensor& t, const std::vector<int64_t>& dims, const std::vector<double>& want,
                          double tol = 1e-5) {
  ASSERT_EQ(dims_str(t.dims()), dims_str(dims));
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": got " << got[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
    }
  }
}

class OneNode {
 public:
  explicit OneNode(std::string op, int64_t opset = 13, std::string domain = "")
      : op_(std::move(op)), domain_(std::move(domain)) {
    model_.opsets[""] = opset;
  }

  OneNode& input(const std::string& name, Tensor t) {
    Shape s = Shape::of(t.dims());
    return input_decl(name, t.dtype(), s, std::move(t));
  }
  // A graph input declared with `shape` (e.g. symbolic dims); `t` is fed at run time.
  OneNode& input_decl(const std::string& name, DType dtype, Shape shape, Tensor t) {
    ins_.push_back(model_.graph->add_input(name, dtype, std::move(shape)));
    feeds_[name] = std::move(t);
    return *this;
  }
  OneNode& constant(const std::string& name, Tensor t) {
    ins_.push_back(model_.graph->add_initializer(name, std::move(t)));
    return *this;
  }
  OneNode& omitted() {
    ins_.push_back(nullptr);
    return *this;
  }
  OneNode& attr(const std::string& name, Attribute a) {
    attrs_[name] = std::move(a);
    return *this;
  }
  OneNode& outputs(int n) {
    nout_ = n;
    return *this;
  }

  // Adds the node (once), verifies the model and infers shapes.
  Model& build() {
    if (node_ == nullptr) {
      std::vector<std::string> names;
      for (int i = 0; i < nout_; ++i) names.push_back("y" + std::to_string(i));
      node_ = model_.graph->add_node(op_, ins_, names, attrs_, "n", domain_);
      for (Value* o : node_->outputs) model_.graph->outputs.push_back(o);
      ops::verify_model(model_);
      ops::infer_shapes(model_);
    }
    return model_;
  }
  std::vector<Tensor> run() {
    build();
    auto out = run_model(model_, feeds_);
    std::vector<Tensor> v;
    for (Value* o : node_->outputs) v.push_back(out.at(o->name));
    return v;
  }
  Tensor run1() { return run().at(0); }

  const Shape& out_shape(size_t i = 0) {
    build();
    return node_->outputs.at(i)->shape;
  }
  DType out_dtype(size_t i = 0) {
    build();
    return node_->outputs.at(i)->dtype;
  }
  Node& node() {
    build();
    return *node_;
  }
  Model& model() { return model_; }

 private:
  std::string op_, domain_;
  Model model_;
  std::vector<Value*> ins_;
  std::map<std::string, Attribute> attrs_;
  std::map<std::string, Tensor> feeds_;
  int nout_ = 1;
  Node* node_ = nullptr;
};

}  // namespace kiln::test

// Tensor ops that compute or change shapes: Reshape, Flatten, Squeeze, Unsqueeze, Shape,
// Size, Constant, ConstantOfShape, Identity, Dropout — values, inferred shapes (static and
// symbolic), the run-time shape chain Shape->Gather->Unsqueeze->Concat->Reshape, errors.
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

// ---- Reshape
TEST(TensorReshape, MinusOneAndZeroCopy) {
  OpRun r = run_op("Reshape", {data(iota_f32({2, 3, 4})), cst(i64s({4, -1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[4,6]");
  EXPECT_EQ(r.out[0].as_double(23), 23);
  r = run_op("Reshape", {data(iota_f32({2, 3, 4})), cst(i64s({0, -1}))});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,12]");
  EXPECT_EQ(r.inferred[0].str(), "[2,12]");
}

TEST(TensorReshape, AllowZeroKeepsZero) {
  OpRun r = run_op("Reshape", {data(Tensor(DType::f32, {0, 3})), cst(i64s({3, 0}))}, {{"allowzero", int64_t{1}}}, 14);
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3,0]");
}

TEST(TensorReshape, BadTargetsThrow) {
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), cst(i64s({4, 2}))}), Error);
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), cst(i64s({-1, -1}))}), Error);
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), cst(i64s({-2, 3}))}), Error);
  EXPECT_THROW(run_op("Reshape", {data(iota_f32({2, 3})), data(i64s({5, 1}))}), Error);  // caught at run time
}

TEST(TensorReshape, SymbolicDimsPassThrough) {
  auto x = std::make_pair(DType::f32, sym({"N", "128", "768"}));
  auto s = std::make_pair(DType::i64, Shape({4}));
  EXPECT_EQ(infer_op("Reshape", {x, s}, {{1, i64s({0, 128, 12, 64})}}), "[N,128,12,64]");
  EXPECT_EQ(infer_op("Reshape", {x, s}, {{1, i64s({0, 128, 12, -1})}}), "[N,128,12,64]");
  EXPECT_EQ(infer_op("Reshape", {x, {DType::i64, Shape({2})}}, {{1, i64s({-1, 768})}}), "[?,768]");
  // target unknown but of known length: rank known
  EXPECT_EQ(infer_op("Reshape", {x, s}, {}), "[?,?,?,?]");
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape: evaluated during inference, so the
// Reshape output is static; at opset 11 Unsqueeze takes axes as an attribute.
void shape_chain(int64_t opset) {
  Model m;
  m.opsets[""] = opset;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({2, 3, 4}));
  Node* shape = g.add_node("Shape", {x}, {"s"});
  Node* gather = g.add_node("Gather", {shape->outputs[0], g.add_initializer("zero", Tensor::scalar<int64_t>(0))},
                            {"d0"}, {{"axis", int64_t{0}}});
  Node* unsq = opset >= 13
                   ? g.add_node("Unsqueeze", {gather->outputs[0], g.add_initializer("axes", i64s({0}))}, {"u"})
                   : g.add_node("Unsqueeze", {gather->outputs[0]}, {"u"}, {{"axes", std::vector<int64_t>{0}}});
  Node* cat = g.add_node("Concat", {unsq->outputs[0], g.add_initializer("rest", i64s({-1}))}, {"target"},
                         {{"axis", int64_t{0}}});
  Node* reshape = g.add_node("Reshape", {x, cat->outputs[0]}, {"y"});
  g.outputs.push_back(reshape->outputs[0]);
  ops::verify_model(m);
  ops::infer_shapes(m);
  EXPECT_EQ(gather->outputs[0]->shape.str(), "[]");
  EXPECT_EQ(cat->outputs[0]->shape.str(), "[2]");
  EXPECT_EQ(reshape->outputs[0]->shape.str(), "[2,12]");
  auto out = run_model(m, {{"x", iota_f32({2, 3, 4})}});
  EXPECT_EQ(dims_str(out.at("y").dims()), "[2,12]");
  EXPECT_EQ(out.at("y").as_double(13), 13);
}

TEST(TensorReshape, ShapeChainBecomesStatic) {
  shape_chain(13);
  shape_chain(11);
}

// ---- Flatten
TEST(TensorFlatten, Axes) {
  EXPECT_EQ(dims_str(run_op("Flatten", {data(iota_f32({2, 3, 4}))}).out[0].dims()), "[2,12]");
  EXPECT_EQ(dims_str(run_op("Flatten", {data(iota_f32({2, 3, 4}))}, {{"axis", int64_t{-1}}}).out[0].dims()), "[6,4]");
  OpRun r = run_op("Flatten", {data(iota_f32({2, 3, 4}))}, {{"axis", int64_t{0}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[1,24]");
  EXPECT_EQ(r.out[0].as_double(17), 17);
  EXPECT_EQ(infer_op("Flatten", {{DType::f32, sym({"N", "3", "4"})}}, {}), "[N,12]");
  EXPECT_EQ(infer_op("Flatten", {{DType::f32, sym({"N", "3", "4"})}}, {}, {{"axis", int64_t{2}}}), "[?,4]");
  EXPECT_THROW(run_op("Flatten", {data(iota_f32({2, 3}))}, {{"axis", int64_t{3}}}), Error);
}

// ---- Squeeze / Unsqueeze
TEST(TensorSqueeze, AxesInputAttributeAndAll) {
  EXPECT_EQ(dims_str(run_op("Squeeze", {data(iota_f32({2, 1, 3, 1})), cst(i64s({1}))}).out[0].dims()), "[2,3,1]");
  EXPECT_EQ(dims_str(run_op("Squeeze", {data(iota_f32({2, 1, 3, 1})), cst(i64s({-1, 1}))}).out[0].dims()), "[2,3]");
  EXPECT_EQ(dims_str(run_op("Squeeze", {data(iota_f32({2, 1, 3, 1}))}).out[0].dims()), "[2,3]");
  EXPECT_EQ(
      dims_str(run_op("Squeeze", {data(iota_f32({1, 2, 1}))}, {{"axes", std::vector<int64_t>{0}}}, 11).out[0].dims()),
      "[2,1]");
  EXPECT_THROW(run_op("Squeeze", {data(iota_f32({2, 3})), cst(i64s({0}))}), Error);
  EXPECT_EQ(infer_op("Squeeze", {{DType::f32, sym({"N", "1", "3"})}, {DType::i64, Shape({1})}}, {{1, i64s({1})}}),
            "[N,3]");
}

TEST(TensorUnsqueeze, AxesInputAndAttribute) {
  EXPECT_EQ(dims_str(run_op("Unsqueeze", {data(iota_f32({2, 3})), cst(i64s({0, -1}))}).out[0].dims()), "[1,2,3,1]");
  EXPECT_EQ(dims_str(run_op("Unsqueeze", {data(iota_f32({2, 3}))}, {{"axes", std::vector<int64_t>{1}}}, 11)
                         .out[0]
                         .dims()),
            "[2,1,3]");
  EXPECT_EQ(infer_op("Unsqueeze", {{DType::f32, sym({"N", "3"})}, {DType::i64, Shape({1})}}, {{1, i64s({0})}}),
            "[1,N,3]");
  EXPECT_THROW(run_op("Unsqueeze", {data(iota_f32({2})), cst(i64s({0, 0}))}), Error);
  EXPECT_THROW(run_op("Unsqueeze", {data(iota_f32({2})), cst(i64s({5}))}), Error);
}

// ---- Shape / Size
TEST(TensorShape, FullAndStartEnd) {
  Tensor x = iota_f32({2, 3, 4});
  expect_near(run_op("Shape", {data(x)}).out[0], {2, 3, 4});
  expect_near(run_op("Shape", {data(x)}, {{"start", int64_t{1}}}, 15).out[0], {3, 4});
  expect_near(run_op("Shape", {data(x)}, {{"end", int64_t{-1}}}, 15).out[0], {2, 3});
  expect_near(run_op("Shape", {data(x)}, {{"start", int64_t{-2}}, {"end", int64_t{10}}}, 15).out[0], {3, 4});
  EXPECT_EQ(run_op("Shape", {data(x)}, {{"start", int64_t{2}}, {"end", int64_t{1}}}, 15).out[0].numel(), 0);
  EXPECT_EQ(infer_op("Shape", {{DType::f32, sym({"N", "3"})}}, {}), "[2]");
}

TEST(TensorSize, CountsElements) {
  OpRun r = run_op("Size", {data(iota_f32({2, 3, 4}))});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  EXPECT_EQ(r.out[0].rank(), 0u);
  EXPECT_EQ(r.out[0].as_int64(0), 24);
}

// ---- Constant / ConstantOfShape
TEST(TensorConstant, EveryValueKind) {
  expect_near(run_op("Constant", {}, {{"value", f32({2}, {1.5f, 2.5f})}}).out[0], {1.5, 2.5});
  OpRun r = run_op("Constant", {}, {{"value_float", 3.5f}});
  EXPECT_EQ(r.out[0].rank(), 0u);
  expect_near(r.out[0], {3.5});
  expect_near(run_op("Constant", {}, {{"value_floats", std::vector<float>{1, 2}}}).out[0], {1, 2});
  r = run_op("Constant", {}, {{"value_int", int64_t{7}}});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  expect_near(r.out[0], {7});
  r = run_op("Constant", {}, {{"value_ints", std::vector<int64_t>{4, 5, 6}}});
  EXPECT_EQ(dims_str(r.out[0].dims()), "[3]");
  expect_near(r.out[0], {4, 5, 6});
  EXPECT_THROW(run_op("Constant", {}, {{"value_string", "hi"}}), Error);
  EXPECT_THROW(run_op("Constant", {}, {}), Error);
}

TEST(TensorConstantOfShape, DefaultAndValue) {
  OpRun r = run_op("ConstantOfShape", {cst(i64s({2, 3}))});
  EXPECT_EQ(r.out[0].dtype(), DType::f32);
  EXPECT_EQ(dims_str(r.out[0].dims()), "[2,3]");
  expect_near(r.out[0], {0, 0, 0, 0, 0, 0});
  r = run_op("ConstantOfShape", {data(i64s({3}))}, {{"value", Tensor::from_vector<int64_t>({1}, {7})}});
  EXPECT_EQ(r.out[0].dtype(), DType::i64);
  EXPECT_EQ(r.inferred[0].str(), "[?]");
  expect_near(r.out[0], {7, 7, 7});
  EXPECT_THROW(run_op("ConstantOfShape", {cst(i64s({-1}))}), Error);
}

// ---- Identity / Dropout
TEST(TensorIdentity, CopiesAnyDtype) {
  Tensor x = Tensor::from_vector<int32_t>({2}, {5, -6});
  expect_near(run_op("Identity", {data(x)}).out[0], {5, -6});
}

TEST(TensorDropout, InferenceIsIdentityWithTrueMask) {
  OpRun r = run_op("Dropout", {data(f32({3}, {1, 2, 3})), cst(Tensor::scalar<float>(0.5f))}, {}, 13, 2);
  expect_near(r.out[0], {1, 2, 3});
  EXPECT_EQ(r.out[1].dtype(), DType::boolean);
  expect_near(r.out[1], {1, 1, 1});
  r = run_op("Dropout", {data(f32({2}, {1, 2}))}, {{"ratio", 0.3f}}, 7, 2);
  EXPECT_EQ(r.out[1].dtype(), DType::f32);  // before opset 10 the mask has the input's type
  expect_near(r.out[1], {1, 1});
  EXPECT_THROW(run_op("Dropout", {data(f32({2}, {1, 2})), cst(Tensor::scalar<float>(0.5f)),
                                  cst(Tensor::scalar<bool>(true))}),
               Error);
}

}  // namespace
}  // namespace kiln

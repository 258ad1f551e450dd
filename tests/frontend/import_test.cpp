// ONNX import: initializer storage forms, attributes, names, shapes, scoping of subgraphs.
#include <cstring>

#include "frontend/onnx_builder.h"

namespace kiln::testing {
namespace {

using TP = onnx::TensorProto;

// Builds a model whose graph outputs are its initializers, so it needs no nodes.
Model import_initializers(const std::vector<TP>& tensors) {
  auto m = new_model();
  auto* g = m.mutable_graph();
  for (const auto& t : tensors) {
    *g->add_initializer() = t;
    g->add_output()->set_name(t.name());
  }
  return import_onnx_bytes(serialize(m), structural());
}

TP typed(const std::string& name, int32_t dt, std::vector<int64_t> dims) {
  TP t;
  t.set_name(name);
  t.set_data_type(dt);
  for (auto d : dims) t.add_dims(d);
  return t;
}

TEST(OnnxImport, TypedFieldInitializersOfEveryDtype) {
  std::vector<TP> ts;
  ts.push_back(float_tensor("f32", {2}, {1.5f, -2.f}));
  auto f64 = typed("f64", TP::DOUBLE, {2});
  f64.add_double_data(0.25), f64.add_double_data(-8);
  auto i64 = typed("i64", TP::INT64, {2});
  i64.add_int64_data(int64_t{1} << 40), i64.add_int64_data(-3);
  auto u64 = typed("u64", TP::UINT64, {1});
  u64.add_uint64_data(uint64_t{1} << 63);
  auto u32 = typed("u32", TP::UINT32, {1});
  u32.add_uint64_data(4000000000u);
  auto i32 = typed("i32", TP::INT32, {2});
  i32.add_int32_data(-7), i32.add_int32_data(123456);
  auto i16 = typed("i16", TP::INT16, {1});
  i16.add_int32_data(-300);
  auto u16 = typed("u16", TP::UINT16, {1});
  u16.add_int32_data(60000);
  auto i8 = typed("i8", TP::INT8, {2});
  i8.add_int32_data(-5), i8.add_int32_data(127);
  auto u8 = typed("u8", TP::UINT8, {1});
  u8.add_int32_data(200);
  auto b = typed("b", TP::BOOL, {3});
  b.add_int32_data(0), b.add_int32_data(1), b.add_int32_data(2);
  auto f16 = typed("f16", TP::FLOAT16, {2});  // bit patterns: 1.0 and -2.5
  f16.add_int32_data(0x3C00), f16.add_int32_data(0xC100);
  auto bf16 = typed("bf16", TP::BFLOAT16, {1});  // 1.0
  bf16.add_int32_data(0x3F80);
  auto scalar = typed("scalar", TP::INT64, {});
  scalar.add_int64_data(42);
  auto empty = typed("empty", TP::FLOAT, {0, 3});
  for (auto* t : {&f64, &i64, &u64, &u32, &i32, &i16, &u16, &i8, &u8, &b, &f16, &bf16, &scalar, &empty})
    ts.push_back(*t);

  Model m = import_initializers(ts);
  auto get = [&](const std::string& n) -> const Tensor& {
    Value* v = m.graph->find(n);
    EXPECT_NE(v, nullptr) << n;
    EXPECT_TRUE(v->initializer.has_value()) << n;
    return *v->initializer;
  };
  EXPECT_EQ(get("f32").dtype(), DType::f32);
  EXPECT_EQ(get("f32").as_double(1), -2.0);
  EXPECT_EQ(get("f64").as_double(0), 0.25);
  EXPECT_EQ(get("i64").as_int64(0), int64_t{1} << 40);
  EXPECT_EQ(get("i64").as_int64(1), -3);
  EXPECT_EQ(get("u64").data<uint64_t>()[0], uint64_t{1} << 63);
  EXPECT_EQ(get("u32").data<uint32_t>()[0], 4000000000u);
  EXPECT_EQ(get("i32").as_int64(0), -7);
  EXPECT_EQ(get("i32").as_int64(1), 123456);
  EXPECT_EQ(get("i16").as_int64(0), -300);
  EXPECT_EQ(get("u16").dtype(), DType::u16);
  EXPECT_EQ(get("u16").as_int64(0), 60000);
  EXPECT_EQ(get("i8").as_int64(0), -5);
  EXPECT_EQ(get("i8").as_int64(1), 127);
  EXPECT_EQ(get("u8").as_int64(0), 200);
  EXPECT_EQ(get("b").dtype(), DType::boolean);
  EXPECT_EQ(get("b").as_int64(0), 0);
  EXPECT_EQ(get("b").as_int64(2), 1);
  EXPECT_EQ(get("f16").dtype(), DType::f16);
  EXPECT_EQ(get("f16").as_double(0), 1.0);
  EXPECT_EQ(get("f16").as_double(1), -2.5);
  EXPECT_EQ(get("bf16").dtype(), DType::bf16);
  EXPECT_EQ(get("bf16").as_double(0), 1.0);
  EXPECT_EQ(get("scalar").rank(), 0u);
  EXPECT_EQ(get("scalar").as_int64(0), 42);
  EXPECT_EQ(get("empty").numel(), 0);
  EXPECT_EQ(m.graph->find("empty")->shape, Shape({0, 3}));
  EXPECT_EQ(m.graph->initializers.size(), ts.size());
  EXPECT_TRUE(m.graph->inputs.empty());
}

TEST(OnnxImport, RawDataInitializers) {
  auto f = typed("f", TP::FLOAT, {3});
  float fv[3] = {0.5f, 2.f, -1.f};
  f.set_raw_data(std::string(reinterpret_cast<char*>(fv), sizeof fv));
  auto i = typed("i", TP::INT64, {2, 1});
  int64_t iv[2] = {-9, int64_t{1} << 50};
  i.set_raw_data(std::string(reinterpret_cast<char*>(iv), sizeof iv));
  auto h = typed("h", TP::FLOAT16, {1});
  uint16_t hv = 0x4200;  // 3.0
  h.set_raw_data(std::string(reinterpret_cast<char*>(&hv), 2));
  auto b = typed("b", TP::BOOL, {3});
  b.set_raw_data(std::string("\x00\x01\x07", 3));  // non-0/1 bytes are normalised to true
  std::vector<float> big(1000);
  for (size_t k = 0; k < big.size(); ++k) big[k] = static_cast<float>(k) * 0.5f;
  auto w = typed("w", TP::FLOAT, {10, 100});
  w.set_raw_data(std::string(reinterpret_cast<char*>(big.data()), big.size() * 4));

  Model m = import_initializers({f, i, h, b, w});
  const Tensor& tf = *m.graph->find("f")->initializer;
  EXPECT_EQ(tf.as_double(0), 0.5);
  EXPECT_EQ(tf.as_double(2), -1.0);
  const Tensor& ti = *m.graph->find("i")->initializer;
  EXPECT_EQ(ti.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ti.as_int64(1), int64_t{1} << 50);
  EXPECT_EQ(m.graph->find("h")->initializer->as_double(0), 3.0);
  const Tensor& tb = *m.graph->find("b")->initializer;
  EXPECT_EQ(static_cast<const uint8_t*>(tb.raw())[2], 1);
  EXPECT_EQ(static_cast<const uint8_t*>(tb.raw())[0], 0);
  const Tensor& tw = *m.graph->find("w")->initializer;
  EXPECT_EQ(tw.as_double(999), 499.5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tw.raw()) % 16, 0u);
}

TEST(OnnxImport, ModelFieldsAndOpsets) {
  auto m = new_model(13);
  m.set_producer_version("9.9");
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  auto* os = m.add_opset_import();
  os->set_domain("com.example");
  os->set_version(2);
  m.set_ir_version(7);
  Model k = import_onnx_bytes(serialize(m), structural());
  EXPECT_EQ(k.opset(""), 13);
  EXPECT_EQ(k.opset("com.example"), 2);
  EXPECT_EQ(k.opsets.size(), 2u);
  EXPECT_EQ(k.ir_version, 7);
  EXPECT_EQ(k.producer_name, "kiln-test");
  EXPECT_EQ(k.producer_version, "9.9");
  EXPECT_EQ(k.graph->name, "g");
}

TEST(OnnxImport, ShapesStaticSymbolicUnknownAndMissing) {
  auto m = new_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", TP::FLOAT, {-1, 3, -1, 7}, {"p2o.DynamicDimension.0", "", "", ""});
  auto* noshape = g->add_input();
  noshape->set_name("y");
  noshape->mutable_type()->mutable_tensor_type()->set_elem_type(TP::INT64);
  add_input(g, "s", TP::FLOAT, {});  // rank 0
  add_node(g, "Relu", {"x"}, {"r"});
  add_output(g, "r", TP::FLOAT, {-1, 3, -1, 7}, {"p2o.DynamicDimension.0", "", "", ""});
  add_output(g, "y", TP::INT64, {});
  g->mutable_output(1)->mutable_type()->mutable_tensor_type()->clear_shape();
  Model k = import_onnx_bytes(serialize(m), structural());
  const Value* x = k.graph->inputs[0];
  ASSERT_EQ(x->shape.rank(), 4u);
  EXPECT_TRUE(x->shape[0].is_symbolic());
  EXPECT_EQ(x->shape[0].symbol, "p2o.DynamicDimension.0");
  EXPECT_EQ(x->shape[1].value, 3);
  EXPECT_TRUE(x->shape[2].is_unknown());
  EXPECT_EQ(x->shape.str(), "[p2o.DynamicDimension.0,3,?,7]");
  EXPECT_FALSE(k.graph->inputs[1]->shape.rank_known);
  EXPECT_EQ(k.graph->inputs[1]->dtype, DType::i64);
  EXPECT_TRUE(k.graph->inputs[2]->shape.rank_known);
  EXPECT_EQ(k.graph->inputs[2]->shape.rank(), 0u);
  // The declared output type becomes the node output's dtype and shape.
  EXPECT_EQ(k.graph->outputs[0]->dtype, DType::f32);
  EXPECT_EQ(k.graph->outputs[0]->shape.str(), "[p2o.DynamicDimension.0,3,?,7]");
  EXPECT_EQ(k.graph->outputs[1], k.graph->inputs[1]);
}

TEST(OnnxImport, NodeNamesOptionalInputsDomainsAndConstants) {
  auto m = new_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", TP::FLOAT, {2});
  auto* c = add_node(g, "Constant", {}, {"c"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("", {2}, {1.f, 2.f});
  add_node(g, "Add", {"x", "c"}, {"a"}, "dup");
  add_node(g, "Relu", {"a"}, {"b"}, "dup");
  add_node(g, "Relu", {"b"}, {"b2"}, "dup");
  add_node(g, "Clip", {"b2", "", "c"}, {"d"})->set_domain("ai.onnx");
  add_node(g, "Relu", {"d"}, {"e"});
  add_output(g, "e", TP::FLOAT, {2});
  Model k = import_onnx_bytes(serialize(m), structural());
  const auto& nodes = k.graph->nodes();
  ASSERT_EQ(nodes.size(), 6u);
  EXPECT_EQ(nodes[0]->op, "Constant");  // kept: folding is a pass's job
  EXPECT_EQ(nodes[0]->find_attr("value")->t().as_double(1), 2.0);
  EXPECT_EQ(nodes[0]->name, "Constant");
  EXPECT_EQ(nodes[1]->name, "dup");
  EXPECT_EQ(nodes[2]->name, "dup_1");
  EXPECT_EQ(nodes[3]->name, "dup_2");
  EXPECT_EQ(nodes[4]->name, "Clip");
  EXPECT_EQ(nodes[4]->domain, "");
  ASSERT_EQ(nodes[4]->inputs.size(), 3u);
  EXPECT_EQ(nodes[4]->inputs[1], nullptr);
  EXPECT_EQ(nodes[4]->inputs[2], nodes[0]->outputs[0]);
  EXPECT_EQ(nodes[5]->name, "Relu");
  EXPECT_EQ(nodes[1]->inputs[0], k.graph->inputs[0]);
  EXPECT_EQ(nodes[1]->outputs[0]->producer, nodes[1].get());
  verify_structure(*k.graph);
}

TEST(OnnxImport, AllAttributeKinds) {
  using AP = onnx::AttributeProto;
  auto m = new_model();
  auto* os = m.add_opset_import();
  os->set_domain("test.custom");
  os->set_version(1);
  auto* g = m.mutable_graph();
  add_input(g, "x", TP::FLOAT, {1});
  auto* n = add_node(g, "Anything", {"x"}, {"y", ""}, "n");
  n->set_domain("test.custom");
  auto add = [&](const char* name, AP::AttributeType t) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(t);
    return a;
  };
  add("i", AP::INT)->set_i(-4);
  add("f", AP::FLOAT)->set_f(0.75f);
  add("s", AP::STRING)->set_s("NOTSET");
  *add("t", AP::TENSOR)->mutable_t() = float_tensor("", {1, 2}, {3.f, 4.f});
  auto* ints = add("ints", AP::INTS);
  ints->add_ints(1), ints->add_ints(-2), ints->add_ints(int64_t{1} << 40);
  auto* floats = add("floats", AP::FLOATS);
  floats->add_floats(0.5f), floats->add_floats(-1.5f);
  auto* strs = add("strings", AP::STRINGS);
  strs->add_strings("a"), strs->add_strings("");
  auto* sub = add("body", AP::GRAPH)->mutable_g();
  sub->set_name("body");
  add_node(sub, "Identity", {"x"}, {"z"}, "inner");
  add_output(sub, "z", TP::FLOAT, {1});
  // An attribute without a type field (older exporters): the set field decides.
  auto* untyped = n->add_attribute();
  untyped->set_name("legacy");
  untyped->set_i(9);
  add_output(g, "y", TP::FLOAT, {1});

  ImportOptions no_verify{.verify = false, .infer = false};
  Model k = import_onnx_bytes(serialize(m), no_verify);
  const Node& kn = *k.graph->nodes()[0];
  EXPECT_EQ(kn.domain, "test.custom");
  EXPECT_EQ(kn.outputs.size(), 2u);
  EXPECT_EQ(kn.outputs[1], nullptr);
  EXPECT_EQ(kn.attr_i("i", 0), -4);
  EXPECT_EQ(kn.attr_f("f", 0), 0.75f);
  EXPECT_EQ(kn.attr_s("s", ""), "NOTSET");
  EXPECT_EQ(kn.find_attr("t")->t().dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(kn.find_attr("t")->t().as_double(1), 4.0);
  EXPECT_EQ(kn.attr_ints("ints", {}), (std::vector<int64_t>{1, -2, int64_t{1} << 40}));
  EXPECT_EQ(kn.attr_floats("floats", {}), (std::vector<float>{0.5f, -1.5f}));
  EXPECT_EQ(kn.find_attr("strings")->strings(), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(kn.attr_i("legacy", 0), 9);
  const Graph& body = *kn.find_attr("body")->g();
  EXPECT_EQ(body.name, "body");
  EXPECT_EQ(body.parent, k.graph.get());
  // The body reads the outer graph's x: the node input is the outer Value itself.
  EXPECT_EQ(body.nodes()[0]->inputs[0], k.graph->inputs[0]);
  EXPECT_EQ(body.find_local("x"), nullptr);
}

TEST(OnnxImport, IfBranchesReadOuterValues) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "cond", TP::BOOL, {});
  add_input(g, "x", TP::FLOAT, {2});
  *g->add_initializer() = float_tensor("w", {2}, {1.f, 2.f});
  add_node(g, "Relu", {"x"}, {"rx"}, "relu");
  auto* iff = add_node(g, "If", {"cond"}, {"out"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = iff->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* b = a->mutable_g();
    b->set_name(branch);
    add_node(b, "Add", {"rx", "w"}, {std::string(branch) + "_y"}, "add");  // same node name as other branch: ok
    add_output(b, std::string(branch) + "_y", TP::FLOAT, {2});
  }
  add_output(g, "out", TP::FLOAT, {2});
  Model k = import_onnx_bytes(serialize(m), structural());
  const Node& n = *k.graph->nodes()[1];
  ASSERT_EQ(n.subgraphs().size(), 2u);
  for (Graph* b : n.subgraphs()) {
    EXPECT_EQ(b->parent, k.graph.get());
    const Node& add = *b->nodes()[0];
    EXPECT_EQ(add.inputs[0], k.graph->nodes()[0]->outputs[0]);
    EXPECT_EQ(add.inputs[1], k.graph->find("w"));
    EXPECT_EQ(b->outputs[0]->dtype, DType::f32);
  }
}

TEST(OnnxImport, InputsThatHaveInitializers) {
  auto build = [](int64_t ir) {
    auto m = new_model(9, ir);
    auto* g = m.mutable_graph();
    add_input(g, "x", TP::FLOAT, {2});
    add_input(g, "w", TP::FLOAT, {2});
    *g->add_initializer() = float_tensor("w", {2}, {5.f, 6.f});
    *g->add_initializer() = float_tensor("b", {2}, {7.f, 8.f});
    add_node(g, "Add", {"x", "w"}, {"y"});
    add_node(g, "Add", {"y", "b"}, {"z"});
    add_output(g, "z", TP::FLOAT, {2});
    return import_onnx_bytes(serialize(m), structural());
  };
  // IR 3: inputs listed because they are initializers are weights only.
  Model old = build(3);
  ASSERT_EQ(old.graph->inputs.size(), 1u);
  EXPECT_EQ(old.graph->inputs[0]->name, "x");
  EXPECT_EQ(old.graph->initializers.size(), 2u);
  // IR 4+: w is an input whose default is the initializer.
  Model cur = build(8);
  ASSERT_EQ(cur.graph->inputs.size(), 2u);
  Value* w = cur.graph->inputs[1];
  EXPECT_EQ(w->name, "w");
  ASSERT_TRUE(w->initializer.has_value());
  EXPECT_EQ(w->initializer->as_double(1), 6.0);
  ASSERT_EQ(cur.graph->initializers.size(), 2u);
  EXPECT_EQ(cur.graph->initializers[0], w);
  verify_structure(*cur.graph);
}

TEST(OnnxImport, ValueInfoHintsReachIntermediateValues) {
  auto m = new_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", TP::FLOAT, {-1, 4}, {"N", ""});
  add_node(g, "Relu", {"x"}, {"h"});
  add_node(g, "Relu", {"h"}, {"y"});
  set_type(g->add_value_info(), "h", TP::FLOAT, {-1, 4}, {"N", ""});
  set_type(g->add_value_info(), "not_in_graph", TP::FLOAT, {1});  // stale hints are ignored
  add_output(g, "y", TP::FLOAT, {});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  Model k = import_onnx_bytes(serialize(m), structural());
  const Value* h = k.graph->find("h");
  EXPECT_EQ(h->dtype, DType::f32);
  EXPECT_EQ(h->shape.str(), "[N,4]");
  EXPECT_EQ(k.graph->outputs[0]->dtype, DType::f32);
  EXPECT_FALSE(k.graph->outputs[0]->shape.rank_known);
}

TEST(OnnxImport, FromFileRecordsPathAndRunsVerifier) {
  auto dir = test_dir();
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", TP::FLOAT, {2});
  add_node(g, "Relu", {"x"}, {"y"});
  add_output(g, "y", TP::FLOAT, {2});
  write_file(dir / "m.onnx", serialize(m));
  Model k = import_onnx((dir / "m.onnx").string());
  EXPECT_EQ(k.source_path, (dir / "m.onnx").string());
  EXPECT_EQ(k.graph->nodes().size(), 1u);
  EXPECT_EQ(k.graph->outputs[0]->shape, Shape({2}));
}

}  // namespace
}  // namespace kiln::testing

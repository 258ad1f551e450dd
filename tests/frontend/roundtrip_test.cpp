// Export: kiln Model -> ONNX -> kiln Model gives back the same graph, and the written
// protobuf has the form other tools expect (raw_data, dim_param, value_info, external data).
#include "frontend/onnx_builder.h"

namespace kiln::testing {
namespace {

using TP = onnx::TensorProto;

// A kiln model exercising what export must carry: symbolic dims, an input with a default
// initializer, initializers of several dtypes, every attribute kind, an omitted optional
// input and output, a custom domain, and an If whose branches read outer values.
Model rich_model() {
  Model m;
  m.opsets = {{"", 13}, {"com.example", 1}};
  m.ir_version = 8;
  m.producer_name = "kiln-test";
  m.producer_version = "1.2";
  Graph& g = *m.graph;
  g.name = "main";
  Value* x = g.add_input("x", DType::f32, Shape({Dim::sym("batch.size"), Dim(3), Dim::unknown()}));
  Value* cond = g.add_input("cond", DType::boolean, Shape({}));
  Value* scale = g.add_input("scale", DType::f32, Shape({1}));
  scale->initializer = Tensor::from_vector<float>({1}, {0.5f});
  g.initializers.push_back(scale);
  Value* w = g.add_initializer("w", Tensor::from_vector<float>({3, 1}, {1.f, -2.f, 3.f}));
  Tensor h(DType::f16, {2});
  h.data<uint16_t>()[0] = 0x3C00;  // 1.0
  h.data<uint16_t>()[1] = 0x4000;  // 2.0
  g.add_initializer("h", h);
  g.add_initializer("mask", Tensor::from_vector<bool>({3}, {true, false, true}));
  g.add_initializer("idx", Tensor::from_vector<int64_t>({}, {-7}));
  Node* mul = g.add_node("Mul", {x, scale}, {"xs"}, {}, "mul");
  mul->outputs[0]->dtype = DType::f32;
  mul->outputs[0]->shape = x->shape;
  Node* custom = g.add_node("Fancy", {mul->outputs[0], nullptr, w}, {"f0", ""},
                            {{"i", Attribute(int64_t{-3})},
                             {"f", Attribute(2.5f)},
                             {"s", Attribute("mode")},
                             {"t", Attribute(Tensor::from_vector<int32_t>({2}, {9, -9}))},
                             {"ints", Attribute(std::vector<int64_t>{1, 2, 3})},
                             {"floats", Attribute(std::vector<float>{0.25f})},
                             {"strings", Attribute(std::vector<std::string>{"p", "q"})}},
                            "fancy", "com.example");
  (void)custom;
  auto branch = [&](const std::string& name, Value* a, Value* b) {
    auto sg = std::make_shared<Graph>();
    sg->name = name;
    sg->parent = &g;
    Node* n = sg->add_node("Add", {a, b}, {name + "_out"}, {}, "add");
    n->outputs[0]->dtype = DType::f32;
    sg->outputs.push_back(n->outputs[0]);
    return sg;
  };
  Node* iff = g.add_node("If", {cond}, {"y"},
                         {{"then_branch", Attribute(branch("then", mul->outputs[0], w))},
                          {"else_branch", Attribute(branch("else", x, scale))}},
                         "if");
  iff->outputs[0]->dtype = DType::f32;
  g.outputs.push_back(iff->outputs[0]);
  g.outputs.push_back(custom->outputs[0]);
  return m;
}

TEST(OnnxRoundTrip, BytesGiveBackTheSameGraph) {
  Model a = rich_model();
  verify_structure(*a.graph);
  ImportOptions no_verify{.verify = false, .infer = false};  // "Fancy" is not a kiln op
  Model b = import_onnx_bytes(export_onnx_bytes(a), no_verify);
  EXPECT_EQ(b.opsets, a.opsets);
  EXPECT_EQ(b.ir_version, 8);
  EXPECT_EQ(b.producer_name, "kiln-test");
  EXPECT_EQ(b.producer_version, "1.2");
  expect_same_graph(*a.graph, *b.graph);
  // Outer references are rebuilt as pointers to the re-imported outer values.
  const Node& iff = *b.graph->nodes()[2];
  for (Graph* sg : iff.subgraphs()) EXPECT_EQ(sg->parent, b.graph.get());
  EXPECT_EQ(iff.find_attr("then_branch")->g()->nodes()[0]->inputs[1], b.graph->find("w"));
  // And a second trip is byte-identical.
  EXPECT_EQ(export_onnx_bytes(b), export_onnx_bytes(a));
}

TEST(OnnxRoundTrip, ProtobufForm) {
  onnx::ModelProto mp;
  ASSERT_TRUE(mp.ParseFromString(export_onnx_bytes(rich_model())));
  const auto& g = mp.graph();
  ASSERT_EQ(g.input_size(), 3);  // scale stays an input (with a default) at IR 8
  const auto& xs = g.input(0).type().tensor_type();
  EXPECT_EQ(xs.elem_type(), TP::FLOAT);
  ASSERT_EQ(xs.shape().dim_size(), 3);
  EXPECT_EQ(xs.shape().dim(0).dim_param(), "batch.size");
  EXPECT_EQ(xs.shape().dim(1).dim_value(), 3);
  EXPECT_FALSE(xs.shape().dim(2).has_dim_value());
  EXPECT_FALSE(xs.shape().dim(2).has_dim_param());
  EXPECT_TRUE(g.input(1).type().tensor_type().has_shape());  // scalar: rank 0 is known
  ASSERT_EQ(g.initializer_size(), 5);
  for (const auto& t : g.initializer()) {
    EXPECT_TRUE(t.has_raw_data()) << t.name();
    EXPECT_EQ(t.float_data_size(), 0);
  }
  EXPECT_EQ(g.initializer(1).name(), "w");
  EXPECT_EQ(g.initializer(1).raw_data().size(), 12u);
  // value_info for the intermediate with a known dtype, not for graph outputs.
  ASSERT_EQ(g.value_info_size(), 1);
  EXPECT_EQ(g.value_info(0).name(), "xs");
  EXPECT_EQ(g.node(1).input(1), "");
  EXPECT_EQ(g.node(1).output(1), "");
  EXPECT_EQ(g.node(1).domain(), "com.example");
  EXPECT_EQ(g.node(2).attribute(0).type(), onnx::AttributeProto::GRAPH);
  // Old IR versions list initializers as inputs too.
  Model old = rich_model();
  old.ir_version = 3;
  ASSERT_TRUE(mp.ParseFromString(export_onnx_bytes(old)));
  EXPECT_EQ(mp.graph().input_size(), 3 + 4);
}

TEST(OnnxRoundTrip, FileWithExternalData) {
  auto dir = test_dir();
  Model a = rich_model();
  // A larger weight so the threshold splits tensors into inline and external ones.
  std::vector<float> big(5000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) - 2500.f;
  a.graph->add_initializer("big", Tensor::from_vector<float>({50, 100}, big));
  auto path = (dir / "model.onnx").string();
  export_onnx(a, path, 8);  // w (12 bytes) and big go out; 8-byte and smaller stay inline
  ASSERT_TRUE(std::filesystem::exists(path + ".data"));
  EXPECT_GE(std::filesystem::file_size(path + ".data"), 20000u + 12u);
  onnx::ModelProto mp;
  ASSERT_TRUE(mp.ParseFromString(read_file(path)));
  int external = 0;
  for (const auto& t : mp.graph().initializer()) external += t.data_location() == TP::EXTERNAL;
  EXPECT_EQ(external, 2);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) ++files, (void)e;
  EXPECT_EQ(files, 2);
  Model b = import_onnx(path, ImportOptions{.verify = false, .infer = false});
  expect_same_graph(*a.graph, *b.graph);
  EXPECT_EQ(b.graph->find("big")->initializer->as_double(4999), 2499.0);
  // Without a threshold everything is inline and no data file is needed.
  auto inline_path = (dir / "inline.onnx").string();
  export_onnx(a, inline_path);
  EXPECT_FALSE(std::filesystem::exists(inline_path + ".data"));
  expect_same_graph(*a.graph, *import_onnx(inline_path, ImportOptions{.verify = false, .infer = false}).graph);
}

TEST(OnnxRoundTrip, ExportRejectsUnwritablePaths) {
  auto dir = test_dir();
  expect_error([&] { export_onnx(rich_model(), (dir / "no" / "such" / "dir.onnx").string()); },
               "cannot create a temporary file");
}

}  // namespace
}  // namespace kiln::testing

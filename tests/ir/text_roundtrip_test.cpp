// Textual IR: hand-written texts and built graphs survive parse -> print -> parse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "kiln/ir/text.h"

namespace kiln {
namespace {

// parse -> print must be a fixed point after one step.
std::string roundtrip(const std::string& src, const PrintOptions& opt = {}) {
  std::string once = print_model(parse_model(src), opt);
  std::string twice = print_model(parse_model(once), opt);
  EXPECT_EQ(once, twice);
  return once;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(TextIR, HandWrittenTextPrintsCanonically) {
  const std::string src = R"(
    # a comment
    kiln.model ir=8 opset=13 opset.com.microsoft=1 producer="pytorch" producer_version="1.13"
    graph main(%x: f32[N,3,"batch:0",?], %"onnx::in.0": i64[*], %s: ?) -> (%y, %"out/1") {
      %w = init f32[2,2] dense<1, 2.5, -3, 4e-3>   // ints are accepted for f32 data
      %y = Conv(%x, %w, _) {pads=[1,1,1,1], kernel_shape=[3,3]} : f32[N,4,p2o.Dyn.0,8]
      %"out/1", _ = com.microsoft::Fused(%y) @"/conv1/Conv"
    }
  )";
  std::string expected =
      "kiln.model ir=8 opset=13 opset.com.microsoft=1 producer=\"pytorch\" producer_version=\"1.13\"\n"
      "graph main(%x: f32[N,3,\"batch:0\",?], %\"onnx::in.0\": i64[*], %s: ?) -> (%y, %\"out/1\") {\n"
      "  %w = init f32[2,2] dense<1.0, 2.5, -3.0, 0.004>\n"
      "  %y = Conv(%x, %w, _) {kernel_shape=[3,3], pads=[1,1,1,1]} : f32[N,4,p2o.Dyn.0,8]\n"
      "  %\"out/1\", _ = com.microsoft::Fused(%y) @\"/conv1/Conv\"\n"
      "}\n";
  EXPECT_EQ(roundtrip(src), expected);
}

TEST(TextIR, ParsedModelHasTheWrittenStructure) {
  Model m = parse_model(R"(
    kiln.model ir=7 opset=11
    graph g(%a: f32[2,"d:x"], %b: bool[]) -> (%c) {
      %c, _, %d = Split(%a, _) {axis=0} : f32[1,?], i8[*]
    })");
  EXPECT_EQ(m.ir_version, 7);
  EXPECT_EQ(m.opset(), 11);
  const Graph& g = *m.graph;
  EXPECT_EQ(g.name, "g");
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0]->shape, Shape({Dim(2), Dim::sym("d:x")}));
  EXPECT_EQ(g.inputs[1]->dtype, DType::boolean);
  EXPECT_EQ(g.inputs[1]->shape, Shape());
  ASSERT_EQ(g.nodes().size(), 1u);
  const Node& n = *g.nodes()[0];
  EXPECT_EQ(n.name, "Split");  // unnamed nodes are named after their op
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(n.inputs[1], nullptr);
  ASSERT_EQ(n.outputs.size(), 3u);
  EXPECT_EQ(n.outputs[1], nullptr);
  EXPECT_EQ(n.outputs[0]->shape, Shape({Dim(1), Dim::unknown()}));
  EXPECT_EQ(n.outputs[2]->dtype, DType::i8);
  EXPECT_FALSE(n.outputs[2]->shape.rank_known);
  EXPECT_EQ(n.attr_i("axis", -1), 0);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0], n.outputs[0]);
  verify_structure(g);
}

TEST(TextIR, ShapesOnNodesAreOptional) {
  Model m = parse_model("graph g(%x: f32[2]) -> (%y) { %y = Relu(%x) }");
  const Value* y = m.graph->outputs[0];
  EXPECT_EQ(y->dtype, DType::undefined);
  EXPECT_FALSE(y->shape.rank_known);
  EXPECT_EQ(m.opset(), 17);  // no header: the newest opset kiln imports
  EXPECT_EQ(print_graph(*m.graph), "graph g(%x: f32[2]) -> (%y) {\n  %y = Relu(%x)\n}\n");
  // Editors' habits: a byte-order mark, CRLF line ends, tabs.
  Model crlf = parse_model("\xEF\xBB\xBFgraph g(%x: f32[2]) -> (%y) {\r\n\t%y = Relu(%x)\r\n}\r\n");
  EXPECT_EQ(print_graph(*crlf.graph), print_graph(*m.graph));
}

TEST(TextIR, NodeNamesAreLeftOutOnlyWhenTheParserGivesThemBack) {
  std::string src = R"(graph g(%x: f32[2]) -> (%c) {
    %a = Relu(%x)
    %b = Relu(%a)
    %c = Relu(%b) @Relu_1
  })";
  Model m = parse_model(src);
  const auto& nodes = m.graph->nodes();
  EXPECT_EQ(nodes[0]->name, "Relu");
  EXPECT_EQ(nodes[1]->name, "Relu_2");  // Relu_1 is taken by the explicit name below
  EXPECT_EQ(nodes[2]->name, "Relu_1");
  std::string text = print_graph(*m.graph);
  EXPECT_NE(text.find("%a = Relu(%x)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("@Relu_1"), std::string::npos) << text;
  Model again = parse_model(text);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(again.graph->nodes()[i]->name, nodes[i]->name);

  PrintOptions no_names;
  no_names.show_names = false;
  EXPECT_EQ(print_graph(*m.graph, no_names).find('@'), std::string::npos);
}

TEST(TextIR, EveryAttributeKindAndASubgraphRoundTrip) {
  Model m;
  m.opsets = {{"", 16}, {"ai.onnx.ml", 3}};
  Graph& g = *m.graph;
  g.name = "main";
  Value* x = g.add_input("x", DType::f32, Shape({Dim::sym("N"), Dim(4)}));
  Value* cond = g.add_input("cond", DType::boolean, Shape());
  Value* w = g.add_initializer("w", Tensor::from_vector<int64_t>({3}, {-1, 0, INT64_MIN}));

  auto then_g = std::make_shared<Graph>();
  then_g->name = "then";
  then_g->parent = &g;
  Node* neg = then_g->add_node("Neg", {x}, {"t"});  // reads the outer %x
  neg->outputs[0]->dtype = DType::f32;
  then_g->outputs.push_back(neg->outputs[0]);
  auto else_g = std::make_shared<Graph>();
  else_g->name = "else";
  else_g->parent = &g;
  else_g->outputs.push_back(x);  // passes the outer value straight through

  Tensor ht(DType::f16, {2});
  ht.data<uint16_t>()[0] = f32_to_f16(0.5f);
  ht.data<uint16_t>()[1] = 0xfc00;  // -inf
  std::map<std::string, Attribute> attrs = {
      {"i", int64_t{-7}},
      {"f", 0.1f},
      {"whole", 3.0f},
      {"s", std::string("quote\" back\\ nl\n tab\t \x01 utf8 \xc3\xa9")},
      {"t", ht},
      {"then_branch", then_g},
      {"else_branch", else_g},
      {"is", std::vector<int64_t>{1, -2}},
      {"fs", std::vector<float>{1.0f, -0.0f}},
      {"ss", std::vector<std::string>{"a", ""}},
      {"empty_i", std::vector<int64_t>{}},
      {"empty_f", std::vector<float>{}},
      {"empty_s", std::vector<std::string>{}},
  };
  Node* n = g.add_node("If", {cond, w}, {"y"}, attrs, "the if");
  n->outputs[0]->dtype = DType::f32;
  n->outputs[0]->shape = Shape({Dim::sym("N"), Dim(4)});
  g.outputs.push_back(n->outputs[0]);
  verify_structure(g);

  std::string text = print_model(m);
  Model back = parse_model(text);
  EXPECT_EQ(print_model(back), text);
  verify_structure(*back.graph);

  const Node& bn = *back.graph->nodes()[0];
  EXPECT_EQ(bn.name, "the if");
  EXPECT_EQ(back.opset("ai.onnx.ml"), 3);
  for (const auto& [k, a] : attrs) {
    ASSERT_TRUE(bn.has_attr(k)) << k;
    EXPECT_EQ(bn.find_attr(k)->kind(), a.kind()) << k;
  }
  EXPECT_EQ(bn.attr_i("i", 0), -7);
  EXPECT_EQ(bits(bn.attr_f("f", 0)), bits(0.1f));
  EXPECT_EQ(bn.find_attr("whole")->kind(), AttrKind::Float);
  EXPECT_EQ(bn.attr_s("s", ""), attrs["s"].s());
  EXPECT_EQ(bn.find_attr("ss")->strings(), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(bits(bn.find_attr("fs")->floats()[1]), bits(-0.0f));
  const Tensor& bt = bn.find_attr("t")->t();
  EXPECT_EQ(bt.dtype(), DType::f16);
  EXPECT_EQ(bt.data<uint16_t>()[0], f32_to_f16(0.5f));
  EXPECT_EQ(bt.data<uint16_t>()[1], 0xfc00);
  EXPECT_EQ(back.graph->initializers[0]->initializer->data<int64_t>()[2], INT64_MIN);

  const Graph& bthen = *bn.find_attr("then_branch")->g();
  EXPECT_EQ(bthen.parent, back.graph.get());
  EXPECT_EQ(bthen.nodes()[0]->inputs[0], back.graph->inputs[0]);  // resolved to the outer %x
  const Graph& belse = *bn.find_attr("else_branch")->g();
  EXPECT_EQ(belse.outputs[0], back.graph->inputs[0]);
}

TEST(TextIR, FloatsParseBackBitExactly) {
  const float values[] = {0.1f, 1e-30f, -0.0f, 0.0f, 1.0f, 3.4028235e38f, 1e-45f, 16777217.0f,
                          INFINITY, -INFINITY, NAN, -NAN, 1.0f / 3.0f};
  for (float v : values) {
    Model m;
    Value* x = m.graph->add_input("x", DType::f32, Shape({1}));
    m.graph->add_initializer("c", Tensor::from_vector<float>({1}, {v}));
    Node* n = m.graph->add_node("Mul", {x, x}, {"y"}, {{"alpha", v}, {"list", std::vector<float>{v}}});
    m.graph->outputs.push_back(n->outputs[0]);
    std::string text = print_model(m);
    Model back = parse_model(text);
    const Node& bn = *back.graph->nodes()[0];
    EXPECT_EQ(bn.find_attr("alpha")->kind(), AttrKind::Float) << text;
    EXPECT_EQ(bits(bn.find_attr("alpha")->f()), bits(v)) << text;
    EXPECT_EQ(bits(bn.find_attr("list")->floats()[0]), bits(v)) << text;
    EXPECT_EQ(bits(back.graph->initializers[0]->initializer->data<float>()[0]), bits(v)) << text;
  }
  // f64 data keeps all 17 digits.
  Model m = parse_model("graph g() -> (%c) { %c = init f64[2] dense<0.1, -1e-300> }");
  std::string text = print_model(m);
  EXPECT_NE(text.find("dense<0.1, -1e-300>"), std::string::npos) << text;
  EXPECT_EQ(m.graph->initializers[0]->initializer->data<double>()[0], 0.1);
}

TEST(TextIR, IntAndFloatAttributesStayApart) {
  Model m = parse_model("graph g(%x: f32[1]) -> (%y) { %y = Foo(%x) {a=1, b=1.0, c=1e3, d=-inf, e=[1, 2.5]} }");
  const Node& n = *m.graph->nodes()[0];
  EXPECT_EQ(n.find_attr("a")->kind(), AttrKind::Int);
  EXPECT_EQ(n.find_attr("b")->kind(), AttrKind::Float);
  EXPECT_EQ(n.find_attr("c")->f(), 1000.0f);
  EXPECT_EQ(n.find_attr("d")->f(), -INFINITY);
  EXPECT_EQ(n.find_attr("e")->floats(), (std::vector<float>{1.0f, 2.5f}));
  EXPECT_NE(print_graph(*m.graph).find("{a=1, b=1.0, c=1000.0, d=-inf, e=[1.0, 2.5]}"), std::string::npos);
}

TEST(TextIR, ElidedWeightsParseBackAsZeros) {
  Model m;
  std::vector<float> big(20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) - 5.0f;
  Value* w = m.graph->add_initializer("w", Tensor::from_vector<float>({4, 5}, big));
  Value* s = m.graph->add_initializer("s", Tensor::from_vector<int32_t>({2}, {7, 8}));
  Node* n = m.graph->add_node("Add", {w, s}, {"y"});
  m.graph->outputs.push_back(n->outputs[0]);
  PrintOptions opt;
  opt.elide_weights = true;
  std::string text = print_model(m, opt);
  EXPECT_NE(text.find("%w = init f32[4,5] elided<min=-5.0, max=14.0>"), std::string::npos) << text;
  EXPECT_NE(text.find("%s = init i32[2] dense<7, 8>"), std::string::npos) << text;  // small ones stay
  Model back = parse_model(text);
  const Tensor& bw = *back.graph->initializers[0]->initializer;
  EXPECT_EQ(bw.dtype(), DType::f32);
  EXPECT_EQ(bw.dims(), (std::vector<int64_t>{4, 5}));
  for (int64_t i = 0; i < bw.numel(); ++i) EXPECT_EQ(bw.data<float>()[i], 0.0f);
  EXPECT_EQ(back.graph->initializers[1]->initializer->data<int32_t>()[1], 8);
  EXPECT_EQ(print_model(back, opt), text.replace(text.find("elided<min=-5.0, max=14.0>"), 26, "elided<min=0.0, max=0.0>"));

  // Large elided weights are not materialised until written.
  Model huge = parse_model("graph g() -> (%w) { %w = init f32[1024,1024,256] elided }");
  EXPECT_EQ(huge.graph->initializers[0]->initializer->nbytes(), size_t{1} << 30);
  EXPECT_EQ(huge.graph->initializers[0]->initializer->data<float>()[12345], 0.0f);
}

TEST(TextIR, OneValueFillsATensorAndEveryDtypeParses) {
  Model m = parse_model(R"(graph g() -> () {
    %a = init f32[2,2] dense<0.5>
    %b = init bool[3] dense<true, false, 1>
    %c = init u64[1] dense<18446744073709551615>
    %d = init i8[2] dense<-128, 127>
    %e = init bf16[1] dense<1.5>
    %f = init u16[0] dense<>
    %g = init i16[] dense<-3>
  })");
  const auto& in = m.graph->initializers;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(in[0]->initializer->data<float>()[i], 0.5f);
  EXPECT_EQ(in[1]->initializer->as_double(2), 1.0);
  EXPECT_EQ(in[2]->initializer->data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(in[3]->initializer->data<int8_t>()[0], -128);
  EXPECT_EQ(in[4]->initializer->as_double(0), 1.5);
  EXPECT_EQ(in[5]->initializer->numel(), 0);
  EXPECT_EQ(in[6]->initializer->rank(), 0u);
  roundtrip(print_model(m));
}

TEST(TextIR, InputWithDefaultInitializer) {
  std::string src = "graph g(%x: f32[2]) -> (%x) {\n  %x = init f32[2] dense<1.0, 2.0>\n}\n";
  Model m = parse_model(src);
  ASSERT_EQ(m.graph->initializers.size(), 1u);
  EXPECT_EQ(m.graph->initializers[0], m.graph->inputs[0]);
  verify_structure(*m.graph);
  EXPECT_EQ(print_graph(*m.graph), src);
}

TEST(TextIR, NamesThatNeedQuotes) {
  Model m;
  Value* x = m.graph->add_input("init", DType::f32, Shape({Dim::sym("inf"), Dim::sym("2x")}));
  Node* n = m.graph->add_node("init", {x}, {"a b", "%\"q\""}, {{"attr name", 1}}, "_", "my-domain");
  m.graph->outputs = {n->outputs[1]};
  std::string text = print_model(m);
  Model back = parse_model(text);
  EXPECT_EQ(print_model(back), text);
  const Node& bn = *back.graph->nodes()[0];
  EXPECT_EQ(bn.op, "init");
  EXPECT_EQ(bn.domain, "my-domain");
  EXPECT_EQ(bn.name, "_");
  EXPECT_EQ(bn.outputs[1]->name, "%\"q\"");
  EXPECT_EQ(back.graph->inputs[0]->shape, x->shape);
  EXPECT_TRUE(bn.has_attr("attr name"));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The example in docs/textual-ir.md parses, and prints back to a fixed point.
TEST(TextIR, DocumentedExampleParses) {
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/docs/textual-ir.md");
  std::string doc((std::istreambuf_iterator<char>(f)), {});
  size_t start = doc.find("```\n", doc.find("## Example"));
  ASSERT_NE(start, std::string::npos);
  size_t end = doc.find("```", start + 4);
  std::string example = doc.substr(start + 4, end - start - 4);
  Model m = parse_model(example);
  EXPECT_EQ(m.opset("com.microsoft"), 1);
  EXPECT_EQ(m.producer_name, "pytorch");
  EXPECT_EQ(m.graph->nodes().size(), 3u);
  EXPECT_EQ(m.graph->nodes()[0]->name, "/conv1/Conv");
  verify_structure(*m.graph);
  std::string once = print_model(m);
  EXPECT_EQ(print_model(parse_model(once)), once);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Whatever names the nodes have, the printer's choice of which '@name's to leave out
// makes the parser give every node its name back.
TEST(TextIR, NodeNamesSurviveAnyMixOfAutoLikeNames) {
  const char* ops[] = {"Relu", "Add", "Relu_1"};
  const char* names[] = {"Relu", "Relu_1", "Relu_2", "Add", "Add_1", "Relu_1_1", "x", "Add_01"};
  uint32_t seed = 7;
  auto rnd = [&](uint32_t n) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % n;
  };
  for (int round = 0; round < 300; ++round) {
    Model m;
    Value* v = m.graph->add_input("in", DType::f32, Shape({1}));
    size_t count = 1 + rnd(6);
    std::set<std::string> used;
    for (size_t i = 0; i < count; ++i) {
      std::string name = names[rnd(8)];
      if (!used.insert(name).second) continue;  // node names are unique within a graph
      v = m.graph->add_node(ops[rnd(3)], {v}, {"v" + std::to_string(i)}, {}, name)->outputs[0];
    }
    m.graph->outputs.push_back(v);
    std::string text = print_model(m);
    Model back = parse_model(text);
    ASSERT_EQ(back.graph->nodes().size(), m.graph->nodes().size());
    for (size_t i = 0; i < m.graph->nodes().size(); ++i)
      ASSERT_EQ(back.graph->nodes()[i]->name, m.graph->nodes()[i]->name) << text;
  }
}

}  // namespace
}  // namespace kiln

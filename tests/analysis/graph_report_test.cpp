// `kiln graph` renderers: totals, histogram, text table, DOT edges, SVG and JSON that
// a real JSON parser (python3) accepts.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "analysis/graph_report_internal.h"
#include "kiln/analysis/graph_report.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {
namespace {

namespace fs = std::filesystem;

// x f32[2,4] + b f32[4] -> Add -> Relu -> Relu, and an Identity of a symbolic input.
// Costs (elementwise: 1 flop per output element; bytes = inputs + outputs, f32):
//   add   flops 8, bytes (8+4+8)*4 = 80
//   relu1 flops 8, bytes (8+8)*4   = 64
//   relu2 flops 8, bytes 64
//   id    unknown (f32[N] is not static)
Model small_model() {
  Model m;
  m.opsets[""] = 17;
  Graph& g = *m.graph;
  g.name = "small";
  Value* x = g.add_input("x", DType::f32, Shape({2, 4}));
  Value* q = g.add_input("q", DType::f32, Shape({Dim::sym("N")}));
  Value* b = g.add_initializer("b", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  auto typed = [](Node* n, Shape s) {
    n->outputs[0]->dtype = DType::f32;
    n->outputs[0]->shape = std::move(s);
    return n->outputs[0];
  };
  Value* y = typed(g.add_node("Add", {x, b}, {"y"}, {}, "add"), Shape({2, 4}));
  Value* z = typed(g.add_node("Relu", {y}, {"z"}, {}, "relu1"), Shape({2, 4}));
  Value* r = typed(g.add_node("Relu", {z}, {"r"}, {}, "relu2"), Shape({2, 4}));
  Value* qq = typed(g.add_node("Identity", {q}, {"qq"}, {}, "id"), Shape({Dim::sym("N")}));
  g.outputs = {r, qq};
  return m;
}

std::string run_python(const std::string& script, const std::string& input) {
  // one folder per test: ctest may run these tests in parallel
  fs::path dir = fs::path(KILN_BINARY_DIR) / "test_tmp" / "graph_report" /
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(dir);
  std::ofstream(dir / "in.json") << input;
  std::ofstream(dir / "check.py") << script;
  std::string cmd = "/usr/bin/python3 " + (dir / "check.py").string() + " " + (dir / "in.json").string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "popen failed";
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int rc = pclose(p);
  return rc == 0 ? out : "python failed: " + out;
}

TEST(GraphReport, SummaryTotalsAndHistogram) {
  GraphSummary s = summarize_graph(small_model());
  ASSERT_EQ(s.nodes.size(), 4u);
  EXPECT_EQ(s.params, 4);
  EXPECT_EQ(s.param_bytes, 16);
  EXPECT_EQ(s.flops, 24);
  // q:f32[N] is costed at N=1 (and says so): 4 bytes in, 4 out.
  EXPECT_EQ(s.bytes, 80 + 64 + 64 + 8);
  EXPECT_EQ(s.unknown_cost, 0);
  ASSERT_TRUE(s.nodes[3].cost.has_value());
  EXPECT_EQ(s.assumed, (DimBindings{{"N", 1}}));
  using H = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(s.histogram, (H{{"Relu", 2}, {"Add", 1}, {"Identity", 1}}));
}

TEST(GraphReport, TextIsAnAlignedTableWithTotals) {
  std::string t = render_graph(small_model(), GraphFormat::text);
  EXPECT_NE(t.find("model small  ir 8  opset 17"), std::string::npos) << t;
  EXPECT_NE(t.find("inputs:  x:f32[2,4], q:f32[N]"), std::string::npos) << t;
  // columns: #, op, name, FLOPs, bytes, inputs, outputs
  EXPECT_NE(t.find("0  Add       add        8   80 B  x:f32[2,4], b:f32[4]  y:f32[2,4]\n"), std::string::npos) << t;
  EXPECT_NE(t.find("3  Identity  id         0    8 B  q:f32[N]              qq:f32[N]\n"), std::string::npos) << t;
  EXPECT_NE(t.find("totals: 4 nodes, 4 params (16 B), 24 FLOPs, 216 B moved\n"
                   "(costs take the dynamic dims as N=1; give real sizes with --dim)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("op histogram:\n  Relu      2\n  Add       1\n  Identity  1\n"), std::string::npos) << t;
}

TEST(GraphReport, JsonParsesAndCarriesTheTotals) {
  std::string j = render_graph(small_model(), GraphFormat::json);
  std::string out = run_python(
      "import json, sys\n"
      "d = json.load(open(sys.argv[1]))\n"
      "t = d['totals']\n"
      "print(d['model'], t['nodes'], t['params'], t['param_bytes'], t['flops'], t['bytes'], t['unknown_cost_nodes'])\n"
      "print(list(d['histogram'].items()))\n"
      "print(d['inputs'][1])\n"
      "n = d['nodes'][0]\n"
      "print(n['name'], n['op'], n['inputs'], n['outputs'], n['shapes'], n['dtypes'], n['flops'], n['bytes'])\n"
      "print(d['nodes'][3]['flops'], d['nodes'][3]['bytes'])\n",
      j);
  EXPECT_EQ(out,
            "small 4 4 16 24 216 0\n"
            "[('Relu', 2), ('Add', 1), ('Identity', 1)]\n"
            "{'name': 'q', 'dtype': 'f32', 'shape': ['N']}\n"
            "add Add ['x', 'b'] ['y'] {'inputs': [[2, 4], [4]], 'outputs': [[2, 4]]} "
            "{'inputs': ['f32', 'f32'], 'outputs': ['f32']} 8 80\n"
            "0 8\n")
      << j;
}

TEST(GraphReport, DotHasEdgesInputsOutputsAndWeightLabels) {
  std::string d = render_graph(small_model(), GraphFormat::dot);
  EXPECT_EQ(d.rfind("digraph \"small\" {", 0), 0u) << d;
  EXPECT_NE(d.find("v0 [shape=ellipse, fillcolor=\"#d9f2d9\", label=\"x\\nf32[2,4]\"];"), std::string::npos) << d;
  EXPECT_NE(d.find("n0 [label=\"Add\\nadd\\nf32[2,4]\\nweight b: f32[4]\"];"), std::string::npos) << d;
  EXPECT_NE(d.find("v0 -> n0 [label=\"f32[2,4]\"];"), std::string::npos) << d;
  EXPECT_NE(d.find("n0 -> n1 [label=\"f32[2,4]\"];"), std::string::npos) << d;
  EXPECT_NE(d.find("n1 -> n2 [label=\"f32[2,4]\"];"), std::string::npos) << d;
  EXPECT_NE(d.find("v1 -> n3 [label=\"f32[N]\"];"), std::string::npos) << d;
  EXPECT_NE(d.find("shape=octagon"), std::string::npos) << d;
  EXPECT_NE(d.find("n2 -> v2"), std::string::npos) << d;  // graph output r
  EXPECT_EQ(d.find("-> n0 [label=\"f32[4]\"]"), std::string::npos) << d;  // the weight is no edge
}

TEST(GraphReport, SvgComesFromGraphviz) {
  std::string svg = render_graph(small_model(), GraphFormat::svg);
  EXPECT_TRUE(svg.rfind("<?xml", 0) == 0 || svg.rfind("<svg", 0) == 0) << svg.substr(0, 200);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("relu2"), std::string::npos);
  try {
    dot_to_svg("digraph {}", "/nonexistent/dot");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "graphviz 'dot' not found; install the graphviz package");
  }
  EXPECT_THROW(dot_to_svg("digraph { this is not dot", ""), Error);
}

TEST(GraphReport, SubgraphNodesArePrefixedByTheirParent) {
  Model m = small_model();
  Graph& g = *m.graph;
  Value* cond = g.add_input("cond", DType::boolean, Shape());
  auto body = std::make_shared<Graph>();
  body->name = "then";
  body->parent = &g;
  Value* outer = g.find("z");
  Node* neg = body->add_node("Neg", {outer}, {"t"}, {}, "neg");
  neg->outputs[0]->dtype = DType::f32;
  neg->outputs[0]->shape = Shape({2, 4});
  body->add_initializer("unused", Tensor(DType::f32, {3}));
  body->outputs = {neg->outputs[0]};
  Node* iff = g.add_node("If", {cond}, {"w"}, {{"then_branch", body}}, "if1");
  iff->outputs[0]->dtype = DType::f32;
  iff->outputs[0]->shape = Shape({2, 4});
  verify_structure(g);

  GraphSummary s = summarize_graph(m);
  ASSERT_EQ(s.nodes.size(), 6u);
  EXPECT_EQ(s.nodes[5].path, "if1/then_branch/neg");
  EXPECT_EQ(s.nodes[5].depth, 1);
  EXPECT_EQ(s.params, 7);  // subgraph initializers count too

  std::string d = render_graph(m, GraphFormat::dot);
  EXPECT_NE(d.find("subgraph \"cluster_n4_then_branch\""), std::string::npos) << d;
  EXPECT_NE(d.find("n1 -> n5"), std::string::npos) << d;                    // outer %z into the branch
  EXPECT_NE(d.find("n5 -> n4 [style=dashed"), std::string::npos) << d;     // branch result into the If
  EXPECT_NE(render_graph(m, GraphFormat::text).find("5    Neg     if1/then_branch/neg      8   64 B  z:f32[2,4]"), std::string::npos)
      << render_graph(m, GraphFormat::text);
  std::string out = run_python("import json, sys\nd = json.load(open(sys.argv[1]))\nprint(d['nodes'][5]['name'])\n",
                               render_graph(m, GraphFormat::json));
  EXPECT_EQ(out, "if1/then_branch/neg\n");
}

TEST(GraphReport, JsonEscapesEverything) {
  json::Value j;
  j.set("k\"\\", std::string("a\nb\x01\xc3\xa9\xff", 7));
  j.set("n", 1.5);
  j.set("inf", std::numeric_limits<double>::infinity());
  j.set("l", json::Array{int64_t{-3}, true, json::Value()});
  const std::string out = j.dump();
  EXPECT_EQ(out, "{\"k\\\"\\\\\":\"a\\nb\\u0001\xc3\xa9\\u00ff\",\"n\":1.5,\"inf\":null,\"l\":[-3,true,null]}");
  EXPECT_EQ(run_python("import json, sys\nprint(repr(json.load(open(sys.argv[1]))['k\"\\\\']))\n", out),
            "'a\\nb\\x01éÿ'\n");
  EXPECT_EQ(graph_format_from_name("svg"), GraphFormat::svg);
  EXPECT_THROW(graph_format_from_name("png"), Error);
}

}  // namespace
}  // namespace kiln::analysis

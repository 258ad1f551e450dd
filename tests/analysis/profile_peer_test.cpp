// kiln profile --vs ort: ORT's node names matched to the original nodes (as ORT 1.30 names the
// nodes it keeps, fuses and creates), and kiln's kernels paired with them.
#include <gtest/gtest.h>

#include "kiln/analysis/profile_peer.h"
#include "kiln/ir/text.h"

namespace kiln::analysis {
namespace {

// conv -> relu -> pool, names as torch exports them: nodes "/c/Conv", tensors "/c/Conv_output_0".
// "/c/Conv_output_0_x" is a real tensor too, so that a longer tensor name must win.
Model toy() {
  return parse_model(R"(kiln.model opset=17
graph g(%x: f32[1,8,4,4]) -> (%p) {
  %w = init f32[8,8,1,1] dense<0.0>
  %"/c/Conv_output_0" = Conv(%x, %w) {kernel_shape=[1,1]} : f32[1,8,4,4] @"/c/Conv"
  %"/r/Relu_output_0" = Relu(%"/c/Conv_output_0") : f32[1,8,4,4] @"/r/Relu"
  %"/c/Conv_output_0_x" = Relu(%"/r/Relu_output_0") : f32[1,8,4,4] @"/x/Relu"
  %p = MaxPool(%"/c/Conv_output_0_x") {kernel_shape=[2,2], strides=[2,2]} : f32[1,8,2,2] @"/p/MaxPool"
}
)");
}

TEST(ProfilePeer, OrtNamesMapToTheOriginalNodes) {
  Model m = toy();
  const Graph& g = *m.graph;
  auto src = [&](const std::string& name) {
    const Node* n = peer_source_node(g, name);
    return n ? n->name : std::string("-");
  };
  EXPECT_EQ(src("/p/MaxPool"), "/p/MaxPool");                       // kept under its own name
  EXPECT_EQ(src("fused /c/Conv"), "/c/Conv");                       // a fusion named after its first node
  EXPECT_EQ(src("/r/Relu_output_0_nchwc"), "/r/Relu");              // created, named after the tensor it writes
  EXPECT_EQ(src("/c/Conv_output_0"), "/c/Conv");                    // exactly a tensor
  EXPECT_EQ(src("/c/Conv_output_0_x_nchwc"), "/x/Relu");            // the longest tensor name wins
  EXPECT_EQ(src("/c/Conv_token_3"), "/c/Conv");                     // a node name and '_'
  EXPECT_EQ(src("ReorderInput"), "-");                              // ORT's own layout conversion
  EXPECT_EQ(src("/c/Convolution"), "-");                            // a prefix without '_' is no match
  EXPECT_EQ(src("fused "), "-");
}

TEST(ProfilePeer, PairsKernelsWithTheirNodesAndKeepsTheRestApart) {
  Model m = toy();
  Profile p;
  p.plain_ms = 3.0, p.kernel_ms = 2.5;
  KernelProfile conv;
  conv.name = "/c/Conv", conv.op = "kiln.FusedConv", conv.tactic = "direct", conv.ms = 2.0;
  conv.nodes = {"/c/Conv", "/r/Relu"};
  KernelProfile relu;
  relu.name = "/x/Relu", relu.op = "Relu", relu.ms = 0.1;
  relu.nodes = {"/x/Relu"};
  KernelProfile pool;
  pool.name = "/p/MaxPool", pool.op = "MaxPool", pool.tactic = "pool", pool.ms = 0.4;
  pool.nodes = {"/p/MaxPool"};
  p.kernels = {conv, relu, pool};
  const std::vector<PeerNode> ort = {{"ReorderInput", "ReorderInput", 0.3},
                                     {"/r/Relu_output_0_nchwc", "Conv", 1.5},
                                     {"/c/Conv_output_0_x", "Relu", 0.2},
                                     {"/p/MaxPool", "MaxPool", 0.5},
                                     {"ReorderOutput", "ReorderOutput", 0.25}};
  PeerComparison c = compare_with_peer(p, *m.graph, ort, 4.0);
  ASSERT_EQ(c.kernels.size(), 3u);
  EXPECT_EQ(c.kernels[0].name, "/c/Conv");
  EXPECT_DOUBLE_EQ(c.kernels[0].peer_ms, 1.5);
  EXPECT_EQ(c.kernels[0].peer_nodes, std::vector<std::string>{"/r/Relu_output_0_nchwc"});
  EXPECT_DOUBLE_EQ(c.kernels[1].peer_ms, 0.2);
  EXPECT_DOUBLE_EQ(c.kernels[2].peer_ms, 0.5);
  ASSERT_EQ(c.unmatched.size(), 2u);
  EXPECT_EQ(c.unmatched[0].name, "ReorderInput");
  EXPECT_DOUBLE_EQ(c.peer_node_ms, 2.75);
  EXPECT_DOUBLE_EQ(c.peer_run_ms, 4.0);

  // The text leads with the kernel furthest over its peer nodes (conv: +0.5 ms), and the JSON
  // carries every kernel with its ratio.
  const std::string text = peer_to_text(c, 10);
  EXPECT_NE(text.find("a plain run 3.000 ms, ort's 4.000 (0.75x)"), std::string::npos) << text;
  EXPECT_LT(text.find("/c/Conv "), text.find("/p/MaxPool "));
  EXPECT_NE(text.find("ReorderInput 0.3000"), std::string::npos) << text;
  json::Value j = peer_json(c);
  const json::Array& ks = j.at("kernels", "t").as_array("t");
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_DOUBLE_EQ(ks[2].at("ratio", "t").as_double("t"), 0.8);
  EXPECT_DOUBLE_EQ(j.at("ratio", "t").as_double("t"), 0.75);
  EXPECT_EQ(j.at("unmatched", "t").as_array("t").size(), 2u);
}

}  // namespace
}  // namespace kiln::analysis

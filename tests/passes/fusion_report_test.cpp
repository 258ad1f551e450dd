// How much each fusion pass does on the zoo models, alone and as the pipeline
// layernorm -> attention -> epilogue -> elementwise -> layout: printed for docs/fusion.md and
// checked against the counts the patterns imply. Graph rewriting only (no runs), so it is fast;
// the numeric checks live in the per-pass tests.
#include <iostream>

#include "fusion_support.h"

namespace kiln::fusiontest {
namespace {

size_t kiln_ops(const Model& m) {
  size_t n = 0;
  for (const auto& node : m.graph->nodes()) n += node->domain == "kiln";
  return n;
}

struct Counts {
  size_t before = 0, after = 0, made = 0;
};

Counts apply(Model& m, passes::Pass& p) {
  Counts c;
  c.before = m.graph->nodes().size();
  size_t kiln_before = kiln_ops(m);
  passes::PassContext ctx;
  p.run(m, ctx);
  ops::verify_model(m);
  ops::infer_shapes(m);
  c.after = m.graph->nodes().size();
  c.made = kiln_ops(m) - std::min(kiln_ops(m), kiln_before);
  return c;
}

TEST(FusionReport, EveryPassOnEveryZooModel) {
  const std::vector<std::string> models = {"resnet50", "mobilenet_v2", "efficientnet_b0",
                                           "bert_base", "gpt2",     "gpt2_decode"};
  const std::vector<std::string> order = {"fuse-layernorm", "fuse-attention", "fuse-epilogue", "fuse-elementwise",
                                          "layout"};
  auto make = [](const std::string& name) {
    if (name == "fuse-layernorm") return passes::make_fuse_layernorm();
    if (name == "fuse-attention") return passes::make_fuse_attention();
    if (name == "fuse-epilogue") return passes::make_fuse_epilogue();
    if (name == "fuse-elementwise") return passes::make_fuse_elementwise();
    return passes::make_layout();
  };
  for (const std::string& model : models) {
    if (!zoo_available(model)) continue;
    for (const std::string& pass : order) {
      Model m = import_onnx((zoo_dir(model) / "model.onnx").string());
      Counts c = apply(m, *make(pass));
      std::cout << "[alone] " << model << " " << pass << ": " << c.before << " -> " << c.after << " nodes, " << c.made
                << " kiln ops\n";
    }
    Model m = import_onnx((zoo_dir(model) / "model.onnx").string());
    size_t start = m.graph->nodes().size();
    std::string line;
    for (const std::string& pass : order) {
      Counts c = apply(m, *make(pass));
      line += str_cat(" ", pass, " -", c.before - c.after, "/+", c.made);
    }
    std::cout << "[pipeline] " << model << ": " << start << " -> " << m.graph->nodes().size() << " nodes;" << line
              << "\n";
    bool transformer = model == "bert_base" || model == "gpt2" || model == "gpt2_decode";
    EXPECT_EQ(count_op(m, "kiln", "LayerNorm"), transformer ? 25u : 0u) << model;
    EXPECT_EQ(count_op(m, "kiln", "Attention"), transformer ? 12u : 0u) << model;
    EXPECT_EQ(count_op(m, "kiln", "FusedConv"), model == "resnet50" ? 49u : model == "mobilenet_v2" ? 45u
                                                : model == "efficientnet_b0" ? 74u : 0u)
        << model;
  }
}

}  // namespace
}  // namespace kiln::fusiontest

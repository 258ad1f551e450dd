// Pass plugins: the two samples loaded with load_pass_plugin, and the loader's errors.
#include "kiln/passes/plugin.h"

#include "kiln/ops/op.h"
#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

std::string plugin(const std::string& name) {
  return std::string(KILN_BINARY_DIR) + "/plugins/libkiln_" + name + ".so";
}

std::vector<int64_t> argmax_rows(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.dim(0); ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < t.dim(1); ++j)
      if (t.data<float>()[i * t.dim(1) + j] > t.data<float>()[i * t.dim(1) + best]) best = j;
    out.push_back(best);
  }
  return out;
}

TEST(Plugins, LoaderErrorsAreOneClearLine) {
  PassRegistry r;
  std::string err = error_of([&] { load_pass_plugin("/nonexistent/libnothing.so", r); });
  EXPECT_EQ(err, "pass plugin '/nonexistent/libnothing.so': no such file");
  // A real shared library that is not a kiln plugin.
  std::string libm;
  for (const char* p : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"})
    if (std::filesystem::exists(p)) libm = p;
  if (!libm.empty()) {
    err = error_of([&] { load_pass_plugin(libm, r); });
    EXPECT_EQ(err, "pass plugin '" + libm + "': does not export kiln_register_passes");
  }
  // Not a shared library at all.
  err = error_of([&] { load_pass_plugin(std::string(KILN_SOURCE_DIR) + "/README.md", r); });
  EXPECT_EQ(err.rfind("pass plugin '", 0), 0u);
  EXPECT_NE(err.find("cannot load"), std::string::npos) << err;
  // Loading twice registers the same name twice.
  EXPECT_EQ(load_pass_plugin(plugin("relu_to_gelu"), r), std::vector<std::string>{"relu-to-gelu"});
  err = error_of([&] { load_pass_plugin(plugin("relu_to_gelu"), r); });
  EXPECT_EQ(err, "pass plugin '" + plugin("relu_to_gelu") + "': pass 'relu-to-gelu' is already registered");
  EXPECT_EQ(r.names(), std::vector<std::string>{"relu-to-gelu"});
}

TEST(Plugins, ReluToGeluChangesTheDigitsLogitsButHardlyTheirClasses) {
  PassRegistry r = PassRegistry::global();
  load_pass_plugin(plugin("relu_to_gelu"), r);
  Model m = import_onnx(std::string(KILN_SOURCE_DIR) + "/models/digits_cnn.onnx");
  Tensor images = read_npy(std::string(KILN_SOURCE_DIR) + "/models/digits_test_images.npy");
  Tensor labels = read_npy(std::string(KILN_SOURCE_DIR) + "/models/digits_test_labels.npy");
  std::map<std::string, Tensor> in = {{m.graph->inputs[0]->name, images}};
  Tensor before = run_model(m, in).begin()->second;

  PassManager pm(r);
  pm.add("relu-to-gelu");
  PassContext ctx;
  auto rec = pm.run(m, ctx);
  EXPECT_TRUE(rec[0].changed);
  size_t relu = 0, gelu = 0;
  for (const auto& n : m.graph->nodes()) {
    relu += n->op == "Relu";
    gelu += n->op == "Gelu";
  }
  EXPECT_EQ(relu, 0u);
  EXPECT_EQ(gelu, 3u);
  Tensor after = run_model(m, in).begin()->second;

  Comparison c = compare_tensors(after, before, 1e-4);
  auto p0 = argmax_rows(before), p1 = argmax_rows(after);
  int64_t correct0 = 0, correct1 = 0, n = labels.numel();
  for (int64_t i = 0; i < n; ++i) {
    correct0 += p0[i] == labels.as_int64(i);
    correct1 += p1[i] == labels.as_int64(i);
  }
  std::printf("[relu-to-gelu] digits logits max|d|=%.3g (max|ref| %.3g); accuracy %lld/%lld -> %lld/%lld\n",
              c.max_abs_diff, c.max_abs_ref, static_cast<long long>(correct0), static_cast<long long>(n),
              static_cast<long long>(correct1), static_cast<long long>(n));
  // Gelu differs from Relu by up to 0.17 around 0: the logits must move visibly...
  EXPECT_GT(c.max_abs_diff, 0.05 * c.max_abs_ref);
  // ...while the network, trained with Relu, still classifies nearly as well (within 5 points).
  EXPECT_GE(correct1 * 100, correct0 * 100 - 5 * n);
}

const char* kConvBnRelu = R"(
graph g(%x: f32[1,2,3,3]) -> (%y, %side) {
  %w = init f32[2,2,1,1] dense<1.0, 2.0, 3.0, 4.0>
  %gamma = init f32[2] dense<1.0, 3.0>
  %beta = init f32[2] dense<0.25, 0.5>
  %mean = init f32[2] dense<0.5, 1.0>
  %var = init f32[2] dense<4.0, 1.0>
  %c = Conv(%x, %w) {kernel_shape=[1,1]}
  %b = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon=0.0}
  %y = Relu(%b)
  %c2 = Conv(%x, %w) {kernel_shape=[1,1]}
  %b2 = BatchNormalization(%c2, %gamma, %beta, %mean, %var) {epsilon=0.0}
  %r2 = Relu(%b2)
  %side = Add(%r2, %b2)
})";

TEST(Plugins, FuseConvBnReluRewritesTheStructure) {
  PassRegistry r;
  load_pass_plugin(plugin("fuse_conv_bn_relu"), r);
  Model m = parse_verified(kConvBnRelu);
  PassContext ctx;
  ctx.explain = true;
  // Run the pass directly: until kiln.FusedConv is in the op table the verifier would reject it.
  EXPECT_TRUE(r.create("fuse-conv-bn-relu")->run(m, ctx));
  std::string after = show(m);
  EXPECT_NE(after.find("kiln::FusedConv(%x, %w_bn, %Conv_bn_bias) {activation=\"Relu\", kernel_shape=[1,1]}"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("%w_bn = init f32[2,2,1,1] dense<0.5, 1.0, 9.0, 12.0>"), std::string::npos) << after;
  EXPECT_NE(after.find("%Conv_bn_bias = init f32[2] dense<0.0, -2.5>"), std::string::npos) << after;
  EXPECT_EQ(after.find("%y = Relu"), std::string::npos) << after;
  // The second chain's BN output is also read by the Add: left alone, with the reason.
  EXPECT_NE(after.find("%r2 = Relu(%b2)"), std::string::npos) << after;
  bool reason = false;
  for (const auto& rm : ctx.remarks) reason |= rm.message.find("other readers") != std::string::npos;
  EXPECT_TRUE(reason);
  EXPECT_EQ(m.opset("kiln"), 1);
}

TEST(Plugins, FuseConvBnReluComputesTheSame) {
  ASSERT_NE(ops::find_op("kiln", "FusedConv"), nullptr);
  PassRegistry r;
  load_pass_plugin(plugin("fuse_conv_bn_relu"), r);
  Model m = parse_verified(kConvBnRelu);
  Tensor x(DType::f32, {1, 2, 3, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  std::map<std::string, Tensor> in = {{"x", x}};
  auto ref = run_model(m, in);
  PassManager pm(r);
  pm.add("fuse-conv-bn-relu");
  PassContext ctx;
  pm.run(m, ctx);
  // The folded weights are exact here (powers of two and small integers): 1e-6 relative.
  expect_same_outputs(ref, run_model(m, in), 1e-6, "fuse-conv-bn-relu");
}

}  // namespace
}  // namespace kiln::passes::test

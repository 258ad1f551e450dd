// fold-qdq-lookup: element-wise chains between a DequantizeLinear of an 8-bit tensor and its end
// become one kiln.QLookup (textual before -> after), its table is the reference chain for all 256
// inputs (the interpreter's outputs are bit-identical before and after, on inputs that reach every
// byte), and what it must leave alone it leaves, saying why.
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "kiln/compiler/compile.h"
#include "kiln/ir/text.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "passes/pass_test_util.h"

namespace kiln::passes::test {
namespace {

// A SiLU between two quantizations (efficientnet's activation between quantized convolutions).
const char* kSilu = R"(kiln.model opset=13
graph g(%x: f32[1,2,16,16]) -> (%y) {
  %s = init f32[] dense<0.1>
  %z = init u8[] dense<128>
  %s2 = init f32[] dense<0.05>
  %z2 = init u8[] dense<10>
  %q = QuantizeLinear(%x, %s, %z)
  %d = DequantizeLinear(%q, %s, %z)
  %sg = Sigmoid(%d)
  %m = Mul(%d, %sg)
  %q2 = QuantizeLinear(%m, %s2, %z2)
  %y = DequantizeLinear(%q2, %s2, %z2)
})";

// x covering every quantized value of scale `step` around zero point `zero` (512 elements: each
// byte twice, once just off the grid point).
Tensor every_byte(float step, int zero) {
  Tensor x(DType::f32, {1, 2, 16, 16});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = (static_cast<float>(i % 256) - static_cast<float>(zero)) * step + (i < 256 ? 0.f : 0.01f * step);
  return x;
}

void expect_identical_outputs(const Model& before, const Model& after, const Tensor& x) {
  auto a = run_model(before, {{"x", x}});
  auto b = run_model(after, {{"x", x}});
  for (const auto& [name, t] : a) {
    ASSERT_EQ(t.dtype(), b.at(name).dtype()) << name;
    ASSERT_EQ(t.numel(), b.at(name).numel()) << name;
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(t.as_double(i), b.at(name).as_double(i)) << name << " at " << i;
  }
}

std::string graph_text(const Model& m) { return show(m); }

TEST(FoldQdqLookup, SiluBetweenQuantizationsBecomesOneByteTable) {
  PassRun r = run_passes(kSilu, {"fold-qdq-lookup", "dce"});
  EXPECT_TRUE(r.records[0].changed);
  const std::string text = graph_text(r.model);
  EXPECT_NE(text.find("kiln::QLookup(%q, "), std::string::npos) << text;
  EXPECT_EQ(text.find("Sigmoid"), std::string::npos) << text;
  EXPECT_EQ(text.find("QuantizeLinear(%m"), std::string::npos) << "the chain's QuantizeLinear is folded in:\n" << text;
  // The table is u8 (the chain ended in QuantizeLinear) and feeds the DequantizeLinear after it.
  EXPECT_NE(text.find("init u8[256]"), std::string::npos) << text;
  expect_identical_outputs(parse_verified(kSilu), r.model, every_byte(0.1f, 128));
}

// i8 input (the table in value order -128..127), a chain of several ops with scalar constants,
// read by a float op: the table holds floats.
const char* kSignedToFloat = R"(kiln.model opset=13
graph g(%x: f32[1,2,16,16]) -> (%y) {
  %s = init f32[] dense<0.03>
  %z = init i8[] dense<-5>
  %two = init f32[] dense<2.0>
  %lo = init f32[] dense<-1.5>
  %hi = init f32[] dense<1.0>
  %q = QuantizeLinear(%x, %s, %z)
  %d = DequantizeLinear(%q, %s, %z)
  %t = Tanh(%d)
  %u = Mul(%t, %two)
  %c = Clip(%u, %lo, %hi)
  %y = MaxPool(%c) {kernel_shape=[2,2], strides=[2,2]}
})";

TEST(FoldQdqLookup, SignedInputReadByAFloatOpGetsAFloatTable) {
  PassRun r = run_passes(kSignedToFloat, {"fold-qdq-lookup", "dce"});
  EXPECT_TRUE(r.records[0].changed);
  const std::string text = graph_text(r.model);
  EXPECT_NE(text.find("kiln::QLookup(%q, "), std::string::npos) << text;
  EXPECT_NE(text.find("init f32[256]"), std::string::npos) << text;
  EXPECT_EQ(text.find("Tanh"), std::string::npos) << text;
  expect_identical_outputs(parse_verified(kSignedToFloat), r.model, every_byte(0.03f, -5));
}

// The compiled runtime's lookup kernel (u8 -> u8 and i8 -> f32 tables) gives the interpreter's
// outputs of the original chains bit for bit.
TEST(FoldQdqLookup, CompiledLookupMatchesTheInterpretedChain) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kiln_lookup_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Case {
    const char* text;
    float step;
    int zero;
  };
  for (const Case& c : {Case{kSilu, 0.1f, 128}, Case{kSignedToFloat, 0.03f, -5}}) {
    const std::string kir = (dir / "m.kir").string(), art = (dir / "m.kiln").string();
    std::ofstream(kir) << c.text;
    compiler::CompileOptions opt;
    opt.cache_dir = (dir / "cache").string();
    compiler::compile_file(kir, art, opt);
    const LoadedArtifact loaded = read_artifact(art);
    const Model& compiled = loaded.model;
    int lookups = 0;
    for (const auto& n : compiled.graph->nodes()) lookups += n->op == "QLookup";
    EXPECT_EQ(lookups, 1);
    const Tensor x = every_byte(c.step, c.zero);
    auto want = run_model(parse_verified(c.text), {{"x", x}});
    auto got = Executable::load(art)->run({{"x", x}});
    const Tensor& a = want.at("y");
    const Tensor& b = got.at("y");
    ASSERT_EQ(a.numel(), b.numel());
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.as_double(i), b.as_double(i)) << i;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(FoldQdqLookup, LeavesChainsThatAreNotOneFunctionOfOneByteAndSaysWhy) {
  // A per-channel constant: each channel has its own function.
  expect_unchanged("fold-qdq-lookup", R"(kiln.model opset=13
graph g(%x: f32[1,2,4,4]) -> (%y) {
  %s = init f32[] dense<0.1>
  %z = init u8[] dense<128>
  %k = init f32[1,2,1,1] dense<1.0, 2.0>
  %q = QuantizeLinear(%x, %s, %z)
  %d = DequantizeLinear(%q, %s, %z)
  %m = Mul(%d, %k)
  %y = QuantizeLinear(%m, %s, %z)
})");
  // Two values of the chain are read outside it (the dequantized input and the sigmoid).
  const char* two_exits = R"(kiln.model opset=13
graph g(%x: f32[1,2,4,4]) -> (%y, %p) {
  %s = init f32[] dense<0.1>
  %z = init u8[] dense<128>
  %q = QuantizeLinear(%x, %s, %z)
  %d = DequantizeLinear(%q, %s, %z)
  %sg = Sigmoid(%d)
  %y = QuantizeLinear(%sg, %s, %z)
  %p = MaxPool(%d) {kernel_shape=[2,2], strides=[2,2]}
})";
  expect_unchanged("fold-qdq-lookup", two_exits);
  PassRun r = run_passes(two_exits, {"fold-qdq-lookup"}, /*explain=*/true);
  bool said = false;
  for (const auto& rem : r.ctx.remarks) said |= rem.message.find("more than one of its values") != std::string::npos;
  EXPECT_TRUE(said) << "the refusal must give its reason";
  // Weights: a DequantizeLinear of a constant stays (the int8 kernels take it).
  expect_unchanged("fold-qdq-lookup", R"(kiln.model opset=13
graph g(%x: f32[2,2]) -> (%y) {
  %wq = init i8[2,2] dense<1, -2, 3, 4>
  %s = init f32[] dense<0.1>
  %d = DequantizeLinear(%wq, %s)
  %r = Relu(%d)
  %y = MatMul(%x, %r)
})");
}

}  // namespace
}  // namespace kiln::passes::test

// The compile driver end to end on small textual-IR models: every level gives an artifact the
// compiled runtime runs with the interpreter's answers; an unchanged recompile is a cache hit;
// options that change the result are not; bad input fails with one line and keeps an old artifact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include <filesystem>
#include <fstream>

#include "kiln/analysis/compare.h"
#include "kiln/compiler/compile.h"
#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

// conv + bias + relu and matmul + GELU (fuse-epilogue, packed weights), a softmax, and a SiLU
// chain after it (fuse-elementwise -> generated code).
constexpr const char* kModel = R"(
kiln.model ir=8 opset=14
graph g(%x: f32[N,2,6,6]) -> (%p) {
  %w = init f32[4,2,3,3] dense<0.05>
  %b = init f32[4] dense<-0.1>
  %c = Conv(%x, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1]}
  %r = Relu(%c)
  %f = Flatten(%r) {axis=1}
  %m = init f32[144,10] dense<0.01>
  %h = MatMul(%f, %m)
  %s2 = init f32[] dense<1.4142135>
  %d = Div(%h, %s2)
  %e = Erf(%d)
  %one = init f32[] dense<1.0>
  %a = Add(%e, %one)
  %xh = Mul(%h, %a)
  %half = init f32[] dense<0.5>
  %g1 = Mul(%xh, %half)
  %p0 = Softmax(%g1) {axis=-1}
  %sg = Sigmoid(%p0)
  %p = Mul(%p0, %sg)
}
)";

struct Dir {
  fs::path path;
  Dir() {
    path = fs::temp_directory_path() / ("kiln_compile_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

std::string write_model(const Dir& d) {
  std::string p = (d.path / "m.kir").string();
  std::ofstream(p) << kModel;
  return p;
}

Tensor input(int64_t n) {
  Tensor t(DType::f32, {n, 2, 6, 6});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>((i * 13) % 17) * 0.2f - 1.5f;
  return t;
}

CompileOptions options(const Dir& d, int level) {
  CompileOptions o;
  o.opt_level = level;
  o.cache_dir = (d.path / "cache").string();
  return o;
}

TEST(Compile, EveryLevelRunsWithTheInterpretersAnswers) {
  Dir d;
  std::string src = write_model(d);
  Model ref = parse_model(kModel);
  ops::verify_model(ref);
  ops::infer_shapes(ref);
  for (int level = 0; level <= 3; ++level) {
    std::string out = (d.path / ("m" + std::to_string(level) + ".kiln")).string();
    CompileReport rep = compile_file(src, out, options(d, level));
    EXPECT_FALSE(rep.cache_hit);
    auto exe = Executable::load(out);
    for (int64_t n : {1, 3}) {  // N is symbolic: one artifact, two shapes
      std::map<std::string, Tensor> in{{"x", input(n)}};
      Tensor want = run_model(ref, in).at("p");
      Tensor got = exe->run(in).at("p");
      ASSERT_EQ(got.dims(), want.dims()) << "-O" << level;
      for (int64_t i = 0; i < want.numel(); ++i)
        EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << "-O" << level << " N=" << n << " i=" << i;
    }
  }
}

TEST(Compile, O2FusesAndGeneratesCode) {
  Dir d;
  std::string out = (d.path / "m.kiln").string();
  CompileOptions o = options(d, 2);
  o.dump_dir = (d.path / "dump").string();
  CompileReport rep = compile_file(write_model(d), out, o);
  std::map<std::string, int> tactics;
  for (const auto& k : rep.kernels) ++tactics[k.tactic];
  EXPECT_EQ(tactics["gemm"], 1) << rep.text;       // conv + bias + relu, packed
  EXPECT_EQ(tactics["packed-b"], 1) << rep.text;   // matmul + GELU epilogue, constant weight
  EXPECT_EQ(tactics["generated"], 1) << rep.text;  // the SiLU chain
  EXPECT_TRUE(fs::exists(d.path / "dump" / "00-input.kir"));
  EXPECT_TRUE(fs::exists(d.path / "dump" / "kernels.cpp"));
  EXPECT_NE(rep.text.find("arena (peak)"), std::string::npos) << rep.text;
  ArtifactManifest man = read_artifact_manifest(out);
  EXPECT_EQ(man.target_isa, std::string(kernels::gemm_isa()));
  EXPECT_FALSE(man.passes.empty());
}

TEST(Compile, UnchangedRecompileIsACacheHitOtherOptionsAreNot) {
  Dir d;
  std::string src = write_model(d), out = (d.path / "m.kiln").string();
  EXPECT_FALSE(compile_file(src, out, options(d, 2)).cache_hit);
  CompileReport again = compile_file(src, out, options(d, 2));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_LT(again.seconds, 2.0);
  EXPECT_FALSE(compile_file(src, out, options(d, 1)).cache_hit);
  CompileOptions dims = options(d, 1);
  dims.inputs.dims["N"] = 4;
  EXPECT_FALSE(compile_file(src, out, dims).cache_hit);
  // Nor is one with a layout switched off (they change the lowering, not the options).
  EXPECT_TRUE(compile_file(src, out, dims).cache_hit);
  for (const char* env : {"KILN_BLOCKED_LAYOUT", "KILN_INT8_NHWC", "KILN_FOLD_MEANS"}) {
    ::setenv(env, "0", 1);
    const bool hit = compile_file(src, out, dims).cache_hit;
    ::unsetenv(env);
    EXPECT_FALSE(hit) << env;
    EXPECT_FALSE(compile_file(src, out, dims).cache_hit) << env << " back on";
  }
  // A changed source is not a hit either.
  std::ofstream(src, std::ios::app) << "# changed\n";
  EXPECT_FALSE(compile_file(src, out, dims).cache_hit);
}

TEST(Compile, BadInputFailsWithOneLineAndKeepsTheOldArtifact) {
  Dir d;
  std::string src = write_model(d), out = (d.path / "m.kiln").string();
  compile_file(src, out, options(d, 2));
  auto size = fs::file_size(out);
  auto expect_error = [&](const std::function<void()>& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error (wanted: " << part << ")";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  expect_error([&] { compile_file((d.path / "missing.onnx").string(), out, options(d, 2)); }, "cannot open");
  expect_error([&] { compile_file(src, out, options(d, 7)); }, "-O7");
  CompileOptions bad_pass = options(d, 2);
  bad_pass.passes = "dce,no-such-pass";
  expect_error([&] { compile_file(src, out, bad_pass); }, "no-such-pass");
  std::string corrupt = (d.path / "bad.onnx").string();
  std::ofstream(corrupt) << "this is not a model";
  expect_error([&] { compile_file(corrupt, out, options(d, 2)); }, "bad.onnx");
  CompileOptions bad_dim = options(d, 2);
  bad_dim.inputs.dims["M"] = 2;
  expect_error([&] { compile_file(src, out, bad_dim); }, "M");
  EXPECT_EQ(fs::file_size(out), size);
  EXPECT_NO_THROW(Executable::load(out));
}

// If branches are compiled like the main graph: a Conv1d + bias + Relu (fused, lowered as a 2-D
// convolution of height 1, packed), a MatMul with a constant weight (packed) and a Sigmoid
// (generated code) in one branch, a strided Conv1d in the other. Every level gives the
// interpreter's answers on both conditions and two batch sizes, and at -O2 every step of either
// branch runs a fast kernel.
constexpr const char* kBranchModel = R"(
kiln.model ir=8 opset=14
graph g(%c: bool[], %x: f32[N,3,16]) -> (%y) {
  %w = init f32[4,3,3] dense<-0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2, 0.5, 0.1, -0.3, 0.4, 0, -0.4, 0.3, -0.1, -0.5, 0.2, -0.2>
  %b = init f32[4] dense<0.1, -0.2, 0.3, -0.4>
  %m = init f32[16,16] dense<-0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25, 5.55112e-17, 0.25, -0.15, 0.1, -0.3, -0.05, 0.2, -0.2, 0.05, 0.3, -0.1, 0.15, -0.25>
  %w2 = init f32[4,3,4] dense<-0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4, 0.2, -0.6, 1.11022e-16, 0.6, -0.2, 0.4, -0.4>
  %y = If(%c) {
    then_branch=graph t() -> (%s) {
      %cv = Conv(%x, %w, %b) {pads=[1,1]}
      %r = Relu(%cv)
      %mm = MatMul(%r, %m)
      %s = Sigmoid(%mm)
    },
    else_branch=graph e() -> (%u) {
      %u0 = Conv(%x, %w2) {strides=[2], pads=[1,1]}
      %u = Concat(%u0, %u0) {axis=2}
    }
  }
}
)";

TEST(Compile, IfBranchesCompileToFastKernelsWithTheInterpretersAnswers) {
  Dir d;
  std::string src = (d.path / "b.kir").string();
  std::ofstream(src) << kBranchModel;
  Model ref = parse_model(kBranchModel);
  ops::verify_model(ref);
  ops::infer_shapes(ref);
  for (int level = 0; level <= 3; ++level) {
    std::string out = (d.path / ("b" + std::to_string(level) + ".kiln")).string();
    compile_file(src, out, options(d, level));
    auto exe = Executable::load(out);
    for (int64_t n : {1, 2})
      for (bool c : {true, false}) {
        Tensor x(DType::f32, {n, 3, 16});
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 13) % 17) * 0.2f - 1.5f;
        std::map<std::string, Tensor> in{{"c", Tensor::scalar<bool>(c)}, {"x", x}};
        Tensor want = run_model(ref, in).at("y");
        Tensor got = exe->run(in).at("y");
        ASSERT_EQ(got.dims(), want.dims()) << "-O" << level << " cond " << c;
        for (int64_t i = 0; i < want.numel(); ++i)
          EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << "-O" << level << " cond " << c << " i=" << i;
        if (level != 2) continue;
        std::vector<Tensor> ins = {in.at("c"), x}, outs;
        for (const StepTiming& st : exe->profile_run(ins, outs))
          EXPECT_TRUE(st.fast) << st.node << " (" << st.op << ") ran the reference kernel, cond " << c;
      }
  }
}

// EfficientNet's squeeze-and-excitation block in ONNX ops: on AVX-512 the lowering runs the
// excitation Mul's generated kernel on channel blocks (lower/blocked_layout.cpp) between the
// depthwise layer and the projection (a 3x3 after it reads its blocks). Weights of varied values (a lane mix-up shows); against
// the interpreter at batch 1 and 3 (N symbolic), on 1 and 2 threads: max |diff| <= 1e-5 max |ref|.
constexpr const char* kExcitedModel = R"(
kiln.model ir=8 opset=14
graph g(%x: f32[N,16,14,14]) -> (%y) {
  %ws = init f32[32,16,3,3] dense<0.0>
  %wd = init f32[32,1,3,3] dense<0.0>
  %w1 = init f32[8,32,1,1] dense<0.0>
  %w2 = init f32[32,8,1,1] dense<0.0>
  %wp = init f32[16,32,1,1] dense<0.0>
  %wq = init f32[16,16,3,3] dense<0.0>
  %b8 = init f32[8] dense<0.0>
  %b16 = init f32[16] dense<0.0>
  %b32 = init f32[32] dense<0.0>
  %c0 = Conv(%x, %ws, %b32) {kernel_shape=[3,3], pads=[1,1,1,1]}
  %x1 = Relu(%c0)
  %c1 = Conv(%x1, %wd, %b32) {group=32, kernel_shape=[3,3], pads=[1,1,1,1]}
  %d = Relu(%c1)
  %g = GlobalAveragePool(%d)
  %c2 = Conv(%g, %w1, %b8)
  %f1 = Relu(%c2)
  %c3 = Conv(%f1, %w2, %b32)
  %f2 = Sigmoid(%c3)
  %m = Mul(%d, %f2)
  %p = Conv(%m, %wp, %b16)
  %y = Conv(%p, %wq, %b16) {kernel_shape=[3,3], pads=[1,1,1,1]}
}
)";

TEST(Compile, ExcitationProductOnChannelBlocksMatchesTheInterpreter) {
  Dir d;
  Model ref = parse_model(kExcitedModel);
  int k = 0;
  for (Value* v : ref.graph->initializers) {
    Tensor& t = *v->initializer;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.2f * std::sin(1.3f * static_cast<float>(i) + static_cast<float>(k));
    ++k;
  }
  ops::verify_model(ref);
  ops::infer_shapes(ref);
  std::string src = (d.path / "se.kir").string();
  std::ofstream(src) << print_model(ref);
  std::string out = (d.path / "se.kiln").string();
  CompileReport rep = compile_file(src, out, options(d, 2));
  // The average of the depthwise output comes from the depthwise kernel (lower/channel_means.cpp).
  EXPECT_NE(rep.text.find("1 global average folded into its depthwise convolution"), std::string::npos) << rep.text;
  if (std::string(kernels::gemm_isa()) == "avx512") {
    bool blocked = false;
    for (const auto& kc : rep.kernels)
      if (kc.tactic == "generated") blocked = kc.why.find("channel-blocked input and output") != std::string::npos;
    EXPECT_TRUE(blocked) << rep.text;
  }
  auto exe = Executable::load(out);
  for (int64_t n : {1, 3}) {
    Tensor x(DType::f32, {n, 16, 14, 14});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i)) + 0.2f;
    std::map<std::string, Tensor> in{{"x", x}};
    Tensor want = run_model(ref, in).at("y");
    for (int threads : {1, 2}) {
      RunOptions opt;
      opt.threads = threads;
      Tensor got = exe->run(in, opt).at("y");
      ASSERT_EQ(got.dims(), want.dims());
      const Comparison c = compare_tensors(got, want, 1e-5);
      EXPECT_GT(c.max_abs_ref, 0.1);
      EXPECT_TRUE(c.ok) << c.str() << " N=" << n << " threads=" << threads;
    }
  }
}

// A packed convolution whose input shape depends on a value seen only at run time (a Reshape to
// a shape given as an input) cannot be planned: one line saying so, not the reference kernel's
// complaint about packed weights.
TEST(Compile, PackedNodeOnRunTimeShapesFailsWithOneLine) {
  Dir d;
  std::string src = (d.path / "r.kir").string();
  std::ofstream(src) << R"(
kiln.model ir=8 opset=14
graph g(%x: f32[1,32], %s: i64[4]) -> (%y) {
  %w = init f32[2,2,3,3] dense<0.5>
  %r = Reshape(%x, %s)
  %y = Conv(%r, %w) {pads=[1,1,1,1]}
}
)";
  std::string out = (d.path / "r.kiln").string();
  compile_file(src, out, options(d, 2));
  auto exe = Executable::load(out);
  std::string msg;
  try {
    exe->run({{"x", Tensor(DType::f32, {1, 32})}, {"s", Tensor::from_vector<int64_t>({4}, {1, 2, 4, 4})}});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("depends on values seen only at run time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--shape or --dim"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::compiler

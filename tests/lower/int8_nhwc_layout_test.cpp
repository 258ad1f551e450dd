// Pixel-major INT8 activations between kiln.QConvs (lower/int8_nhwc_layout.cpp): which tensors
// the lowering marks (before -> after on textual IR: the x_nhwc / y_nhwc attributes and the
// "nhwc" tactic), that a residual and its convolution's output agree, that a tensor read by
// anything but such a QConv stays NCHW, that KILN_INT8_NHWC=0 marks nothing, that the reference
// kernel refuses a marked node, and that the compiled artifact gives the interpreter's bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/int8.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"
#include "lower/lowered_artifact.h"

namespace kiln::lower {
namespace {

// A bottleneck on 32 channels (one column panel of the AVX-512 tile) at 10x10, u8 activations
// except c1's output (i8: c2 reads it with the sign bit flipped, a copy rather than in place),
// ending in a classifier's head (__POOL__: DequantizeLinear, GlobalAveragePool):
//   qx (QuantizeLinear) -> q: read by c0                  -> NCHW (not a QConv's output)
//   c0 -> a: read by c1 (X) and c2 (residual)             -> pixel-major
//   c1 -> h (i8): read by c2 (X)                          -> pixel-major
//   c2 -> o = conv1x1(h) + a: read by c3 (X, stride 2)    -> pixel-major (its residual a is)
//   c3 -> p: dequantized into the pool                    -> pixel-major, and the floats too (gap:x-)
// Without the pool, p is a DequantizeLinear's graph output: NCHW, so c3 reads NCHW too (a
// convolution reading pixel-major writes pixel-major), and so on up the chain: nothing is marked.
// With o also dequantized (__O_OUT__), o stays NCHW, and so does a, tied to it as c2's residual;
// c2 then reads NCHW, so h does too; p still passes pixel-major into the pool.
// Both graphs' constants and input quantization.
constexpr const char* kInits = R"(  %xs = init f32[] dense<0.05>
  %xz = init u8[] dense<128>
  %ys = init f32[] dense<0.1>
  %yz = init u8[] dense<3>
  %w3 = init i8[32,32,3,3] dense<1>
  %w1 = init i8[32,32,1,1] dense<1>
  %ws = init f32[32] dense<0.002>
  %b = init i32[32] dense<10>
  %q = QuantizeLinear(%x, %xs, %xz) @qx)";

constexpr const char* kBottleneck = R"(
kiln.model ir=8 opset=13 opset.kiln=1
graph g(%x: f32[2,32,10,10]) -> (%y__O_OUT__) {
__INITS__
  %a = kiln::QConv(%q, %w3, %ws, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu", out_dtype="u8", x_scale=0.05, x_zero_point=128, y_scale=0.1, y_zero_point=0} @c0
  %h = kiln::QConv(%a, %w3, %ws, %b) {kernel_shape=[3,3], pads=[1,1,1,1], out_dtype="i8", x_scale=0.1, x_zero_point=0, y_scale=0.08, y_zero_point=-5} @c1
  %o = kiln::QConv(%h, %w1, %ws, %b, %a) {activation="Relu", out_dtype="u8", x_scale=0.08, x_zero_point=-5, y_scale=0.1, y_zero_point=0, z_scale=0.1, z_zero_point=0} @c2
  %p = kiln::QConv(%o, %w3, %ws, %b) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2], out_dtype="u8", x_scale=0.1, x_zero_point=0, y_scale=0.1, y_zero_point=3} @c3
  %y__POOL__ = DequantizeLinear(%p, %ys, %yz) @dq__O_NODE__
}
)";

// A resnet's first block: the stem's int8 max pool feeds a 3x3 and is the 1x1's residual; it
// writes pixel-major (mp:-y) for both.
constexpr const char* kPooledStemText = R"(
kiln.model ir=8 opset=13 opset.kiln=1
graph g(%x: f32[2,32,12,12]) -> (%y) {
__INITS__
  %m = MaxPool(%q) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @mp
  %a = kiln::QConv(%m, %w3, %ws, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu", out_dtype="u8", x_scale=0.05, x_zero_point=128, y_scale=0.1, y_zero_point=0} @c0
  %o = kiln::QConv(%a, %w1, %ws, %b, %m) {activation="Relu", out_dtype="u8", x_scale=0.1, x_zero_point=0, y_scale=0.1, y_zero_point=0, z_scale=0.05, z_zero_point=128} @c1
  %yd = DequantizeLinear(%o, %ys, %yz) @dq
  %y = GlobalAveragePool(%yd) @gap
}
)";

std::string with_inits(std::string s) {
  s.replace(s.find("__INITS__"), 9, kInits);
  return s;
}
const std::string kPooledStem = with_inits(kPooledStemText);

std::string bottleneck(bool o_out, bool pool = false) {
  std::string s = with_inits(kBottleneck);
  s.replace(s.find("__O_OUT__"), 9, o_out ? ", %yo" : "");
  s.replace(s.find("__POOL__"), 8, pool ? "d" : "");
  s.replace(s.find("__O_NODE__"), 10,
            std::string(pool ? "\n  %y = GlobalAveragePool(%yd) @gap" : "") +
                (o_out ? "\n  %yo = DequantizeLinear(%o, %ys, %yz) @dqo" : ""));
  return s;
}

// Weights of varied values (the text gives one value per tensor): i8 in [-127, 127].
Model parse_inferred(const std::string& text) {
  return parse_filled(text, [](Tensor& t, int k) {
    if (t.dtype() == DType::i8)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>((i * 37 + k * 11) % 255 - 127);
  });
}

// "c0:-y c1:xy ...": per QConv, x when it reads a pixel-major input, y when it writes one.
std::string marks(const Model& m) {
  std::string s;
  for (const auto& n : m.graph->nodes()) {
    if (n->op != "QConv" && n->op != "GlobalAveragePool" && n->op != "MaxPool") continue;
    s += (s.empty() ? "" : " ") + n->name + ":" + (n->attr_i("x_nhwc", 0) ? "x" : "-") + (n->attr_i("y_nhwc", 0) ? "y" : "-");
  }
  return s;
}

bool cpu_has_nhwc() { return kernels::int8::qkernels().pixels_epilogue_strip != nullptr; }

TEST(Int8NhwcLayout, MarksTensorsOnlyQConvsProduceAndRead) {
  Model m = parse_inferred(bottleneck(false, true));
  LowerReport r = lower_model(m);
  ops::verify_model(m);  // the attributes are in QConv's schema
  if (!cpu_has_nhwc()) {
    EXPECT_EQ(marks(m), "c0:-- c1:-- c2:-- c3:-- gap:--");
    GTEST_SKIP() << "this CPU's INT8 table has no fused pixels epilogue (AVX-512 VNNI)";
  }
  EXPECT_EQ(marks(m), "c0:-y c1:xy c2:xy c3:xy gap:x-");
  EXPECT_EQ(r.nhwc_tensors, 5);  // a, h, o, p and the dequantized floats
  for (const auto& n : m.graph->nodes()) {
    if (n->op == "QConv") {
      EXPECT_EQ(n->attr_s("tactic", ""), "nhwc") << n->name;
    }
  }
  for (const auto& k : r.kernels) {
    if (k.node == "c2") {
      EXPECT_NE(k.why.find("pixel-major input and output"), std::string::npos) << k.why;
    }
  }
}

TEST(Int8NhwcLayout, AnInt8MaxPoolWritesPixelMajorForItsConvolutions) {
  if (!cpu_has_nhwc()) GTEST_SKIP() << "no fused pixels epilogue on this CPU";
  Model m = parse_inferred(kPooledStem);
  LowerReport r = lower_model(m);
  EXPECT_EQ(marks(m), "mp:-y c0:xy c1:xy gap:x-");
  EXPECT_EQ(r.nhwc_tensors, 4);  // m, a, o and the dequantized floats
}

TEST(Int8NhwcLayout, AConvolutionReadingPixelMajorWritesPixelMajor) {
  if (!cpu_has_nhwc()) GTEST_SKIP() << "no fused pixels epilogue on this CPU";
  Model m = parse_inferred(bottleneck(false, false));
  EXPECT_EQ(lower_model(m).nhwc_tensors, 0);
  EXPECT_EQ(marks(m), "c0:-- c1:-- c2:-- c3:--");
}

TEST(Int8NhwcLayout, AResidualAndItsOutputAgree) {
  if (!cpu_has_nhwc()) GTEST_SKIP() << "no fused pixels epilogue on this CPU";
  Model m = parse_inferred(bottleneck(true, true));
  LowerReport r = lower_model(m);
  EXPECT_EQ(marks(m), "c0:-- c1:-- c2:-- c3:-y gap:x-");
  EXPECT_EQ(r.nhwc_tensors, 2);
}

TEST(Int8NhwcLayout, OutputChannelsFillWholePanels) {
  if (!cpu_has_nhwc()) GTEST_SKIP() << "no fused pixels epilogue on this CPU";
  // c1 with 24 output channels (c2's 1x1 reads 24): c1 neither reads nor writes pixel-major,
  // so a stays NCHW, and o with it (c2's residual); only p passes pixel-major into the pool.
  std::string text = bottleneck(false, true);
  for (const char* from : {"%w3 = init i8[32,32,3,3] dense<1>\n", "%w1 = init i8[32,32,1,1] dense<1>\n"}) {
    const std::string f = from;
    const std::string to = f.find("w3") != std::string::npos ? f + "  %w3n = init i8[24,32,3,3] dense<1>\n  %wsn = init f32[24] dense<0.002>\n  %bn = init i32[24] dense<10>\n"
                                                                : f + "  %w1n = init i8[32,24,1,1] dense<1>\n";
    text.replace(text.find(f), f.size(), to);
  }
  text.replace(text.find("%h = kiln::QConv(%a, %w3, %ws, %b)"), 35, "%h = kiln::QConv(%a, %w3n, %wsn, %bn)");
  text.replace(text.find("%o = kiln::QConv(%h, %w1,"), 25, "%o = kiln::QConv(%h, %w1n,");
  Model m = parse_inferred(text);
  lower_model(m);
  EXPECT_EQ(marks(m), "c0:-- c1:-- c2:-- c3:-y gap:x-");
}

TEST(Int8NhwcLayout, NothingChangesWhenSwitchedOff) {
  ::setenv("KILN_INT8_NHWC", "0", 1);
  Model off = parse_inferred(bottleneck(false, true));
  const int n = lower_model(off).nhwc_tensors;
  ::unsetenv("KILN_INT8_NHWC");
  EXPECT_EQ(n, 0);
  EXPECT_EQ(marks(off), "c0:-- c1:-- c2:-- c3:-- gap:--");
}

TEST(Int8NhwcLayout, TheReferenceKernelRefusesAMarkedNode) {
  if (!cpu_has_nhwc()) GTEST_SKIP() << "no fused pixels epilogue on this CPU";
  Model m = parse_inferred(bottleneck(false, true));
  lower_model(m);
  Tensor x(DType::f32, {2, 32, 10, 10});
  try {
    run_model(m, {{"x", x}});
    FAIL() << "the interpreter ran pixel-major QConvs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pixel-major (NHWC) activations run only on the compiled INT8 kernels"),
              std::string::npos)
        << e.what();
  }
}

// The compiled bottleneck (pixel-major between c0, c1, c2 and c3; into the pool) and the pooled
// stem against the interpreter on
// the unlowered graph: the same bytes (the INT8 kernels' accumulation is exact and their
// epilogue the reference's arithmetic), at 1 and 2 threads, both images.
TEST(Int8NhwcLayout, CompiledBottleneckEqualsTheInterpreter) {
  // The last: the pooled stem with a symbolic batch (marked all the same; run with 2 images).
  std::string symbolic = kPooledStem;
  symbolic.replace(symbolic.find("f32[2,32,12,12]"), 15, "f32[N,32,12,12]");
  for (int variant = 0; variant < 6; ++variant) {
    const std::string text = variant < 4 ? bottleneck(variant & 1, variant & 2) : variant == 4 ? kPooledStem : symbolic;
    Model m = parse_inferred(text);
    lower_model(m);
    auto exe = load_lowered(m, "nhwc");
    if (variant == 5 && cpu_has_nhwc()) {
      EXPECT_EQ(marks(m), "mp:-y c0:xy c1:xy gap:x-");
    }
    Tensor x(DType::f32, {2, 32, variant < 4 ? 10 : 12, variant < 4 ? 10 : 12});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 3.f * std::sin(0.37f * static_cast<float>(i));
    auto want = run_model(parse_inferred(text), {{"x", x}});
    for (int threads : {1, 2}) {
      RunOptions opt;
      opt.threads = threads;
      auto got = exe->run({{"x", x}}, opt);
      ASSERT_EQ(got.size(), want.size());
      for (const auto& [name, w] : want) {
        const Tensor& g = got.at(name);
        ASSERT_EQ(g.dims(), w.dims()) << name;
        int distinct = 0;
        for (int64_t i = 0; i < w.numel(); ++i) {
          ASSERT_EQ(g.data<float>()[i], w.data<float>()[i]) << name << "[" << i << "] threads=" << threads;
          distinct += i > 0 && w.data<float>()[i] != w.data<float>()[i - 1];
        }
        EXPECT_GT(distinct, w.numel() / 4) << name << ": the outputs should vary";
      }
    }
  }
}

}  // namespace
}  // namespace kiln::lower

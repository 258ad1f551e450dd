// The compiled runtime's per-tensor QuantizeLinear (fast_qdq.cpp, 16 values per SIMD step plus a
// scalar tail) against the reference interpreter, byte for byte: ties rounded half to even,
// saturation at both ends, NaN to the zero point, +-inf, for u8 and i8 outputs, on a length that
// is not a multiple of 16, at 1 and 2 threads.
#include <cmath>
#include <limits>

#include "kiln/runtime/executable.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

using testing::ScratchDir;

// 3 x 7 x 11 = 231 values: exact ties (k + 0.5 steps), values past both saturation bounds,
// NaN and infinities, and a ramp in between.
Tensor awkward_values() {
  Tensor x(DType::f32, {1, 3, 7, 11});
  float* p = x.data<float>();
  const float special[] = {0.05f,  0.15f, 0.25f, -0.05f, -0.15f, -0.25f, 1e9f, -1e9f,
                           std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 12.75f, -12.85f, 6.35f, -6.45f, 0.f};
  for (int64_t i = 0; i < x.numel(); ++i)
    p[i] = i % 5 == 0 ? special[(i / 5) % 16] : std::sin(0.41f * static_cast<float>(i)) * 9.f;
  return x;
}

void expect_same_as_interpreter(const std::string& qtype, int zp) {
  const std::string text = "kiln.model ir=8 opset=17\ngraph main(%x: f32[1,3,7,11]) -> (%y) {\n"
                           "  %s = init f32[] dense<0.1>\n  %z = init " + qtype + "[] dense<" + std::to_string(zp) +
                           ">\n  %y = QuantizeLinear(%x, %s, %z)\n}\n";
  Model m = testing::model_from_text(text);
  ScratchDir dir("fast_qdq");
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m);
  auto exe = Executable::load(dir.file("m.kiln"));
  const Tensor x = awkward_values();
  std::vector<Tensor> outs;
  ASSERT_TRUE(exe->profile_run({x}, outs).at(0).fast) << "QuantizeLinear should take the fast kernel";
  for (int threads : {1, 2}) {
    RunOptions opt;
    opt.threads = threads;
    const Tensor want = run_model(testing::model_from_text(text), {{"x", x}}, opt).at("y");
    const Tensor got = exe->run({{"x", x}}, opt).at("y");
    ASSERT_EQ(got.dims(), want.dims());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(got.as_double(i), want.as_double(i)) << qtype << " zp " << zp << " at " << i << " x "
                                                     << x.data<float>()[i] << " threads " << threads;
  }
}

TEST(FastQdq, QuantizeLinearMatchesTheInterpreterBitForBit) {
  expect_same_as_interpreter("u8", 128);
  expect_same_as_interpreter("u8", 3);
  expect_same_as_interpreter("i8", 0);
  expect_same_as_interpreter("i8", -7);
}

}  // namespace
}  // namespace kiln

// fold-qdq: QDQ patterns -> kiln.QConv / kiln.QMatMul (textual before -> after), the residual
// and max-pool folds, refusals, and the numbers: the folded graph computes what the QDQ graph
// computes to within one output quantization step.
#include <random>

#include "passes/pass_test_util.h"

namespace kiln::passes::test {
namespace {

// Conv (per-channel weight, i32 bias) -> Q, plus a quantized residual Add + Relu -> Q, then a
// max pool of the dequantized result read by a float op.
const char* kConvResidual = R"(kiln.model opset=13
graph g(%x: f32[1,2,4,4], %z: f32[1,3,4,4]) -> (%y, %v) {
  %xs = init f32[] dense<0.05>
  %xz = init u8[] dense<128>
  %wq = init i8[3,2,1,1] dense<1, -2, 3, 4, -5, 6>
  %ws = init f32[3] dense<0.5, 0.25, 0.125>
  %wz = init i8[3] dense<0, 0, 0>
  %bq = init i32[3] dense<10, -20, 30>
  %bs = init f32[3] dense<0.025, 0.0125, 0.00625>
  %bz = init i32[3] dense<0, 0, 0>
  %ys = init f32[] dense<0.1>
  %yz = init u8[] dense<0>
  %zs = init f32[] dense<0.02>
  %zz = init u8[] dense<100>
  %q = QuantizeLinear(%x, %xs, %xz)
  %dx = DequantizeLinear(%q, %xs, %xz)
  %dw = DequantizeLinear(%wq, %ws, %wz) {axis=0}
  %db = DequantizeLinear(%bq, %bs, %bz) {axis=0}
  %c = Conv(%dx, %dw, %db)
  %qc = QuantizeLinear(%c, %ys, %yz)
  %dc = DequantizeLinear(%qc, %ys, %yz)
  %qz = QuantizeLinear(%z, %zs, %zz)
  %dz = DequantizeLinear(%qz, %zs, %zz)
  %a = Add(%dc, %dz)
  %r = Relu(%a)
  %qy = QuantizeLinear(%r, %ys, %yz)
  %y = DequantizeLinear(%qy, %ys, %yz)
  %m = MaxPool(%y) {kernel_shape=[2,2], strides=[2,2]}
  %v = Sigmoid(%m)
})";

TEST(FoldQdq, ConvThenResidualAddAndReluIntoOneQConv) {
  PassRun r = run_passes(kConvResidual, {"fold-qdq", "dce"});
  EXPECT_TRUE(r.records[0].changed);
  // The conv moved below the residual's quantization; Add, Relu and both requantizations are gone;
  // the conv output's own quantization range [0, 25.5] stays as a clamp before the residual.
  EXPECT_EQ(show(r.model), canonical(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,2,4,4], %z: f32[1,3,4,4]) -> (%y, %v) {
  %xs = init f32[] dense<0.05>
  %xz = init u8[] dense<128>
  %wq = init i8[3,2,1,1] dense<1, -2, 3, 4, -5, 6>
  %ys = init f32[] dense<0.1>
  %yz = init u8[] dense<0>
  %zs = init f32[] dense<0.02>
  %zz = init u8[] dense<100>
  %db.i32 = init i32[3] dense<10, -20, 30>
  %dw.scale = init f32[3] dense<0.5, 0.25, 0.125>
  %q = QuantizeLinear(%x, %xs, %xz)
  %qz = QuantizeLinear(%z, %zs, %zz)
  %QConv_out = kiln::QConv(%q, %wq, %dw.scale, %db.i32, %qz) {activation="Relu", out_dtype="u8", pre_max=25.5, pre_min=0.0, x_scale=0.05, x_zero_point=128, y_scale=0.1, y_zero_point=0, z_scale=0.02, z_zero_point=100}
  %y = DequantizeLinear(%QConv_out, %ys, %yz)
  %m = MaxPool(%y) {kernel_shape=[2,2], strides=[2,2]}
  %v = Sigmoid(%m)
})"));
}

// Interpreter outputs of the QDQ graph and the folded one on random inputs: y within one step
// (0.1: the fold skips the rounding of the conv output before the add), v accordingly.
TEST(FoldQdq, FoldedGraphComputesTheQdqGraphToOneStep) {
  Model before = parse_verified(kConvResidual);
  PassRun after = run_passes(kConvResidual, {"fold-qdq", "dce"});
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 2.f);
  for (int trial = 0; trial < 5; ++trial) {
    Tensor x(DType::f32, {1, 2, 4, 4}), z(DType::f32, {1, 3, 4, 4});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(rng);
    for (int64_t i = 0; i < z.numel(); ++i) z.data<float>()[i] = nd(rng);
    auto a = run_model(before, {{"x", x}, {"z", z}});
    auto b = run_model(after.model, {{"x", x}, {"z", z}});
    int differ = 0;
    for (int64_t i = 0; i < a["y"].numel(); ++i) {
      float d = std::abs(a["y"].data<float>()[i] - b["y"].data<float>()[i]);
      EXPECT_LE(d, 0.1f + 1e-6f) << i;
      differ += d > 0;
    }
    EXPECT_LE(differ, a["y"].numel() / 4) << "most values must agree exactly";
  }
}

TEST(FoldQdq, GemmWithFloatBiasAndFloatOutputBecomesQMatMul) {
  // transB weight [N=2, K=3] is transposed to QMatMul's [K, N]; no Q after it: f32 output.
  expect_rewrite("fold-qdq", R"(kiln.model opset=13
graph g(%x: f32[4,3]) -> (%y) {
  %xs = init f32[] dense<0.5>
  %xz = init i8[] dense<-3>
  %wq = init i8[2,3] dense<1, 2, 3, -4, -5, -6>
  %ws = init f32[2] dense<0.25, 0.5>
  %b = init f32[2] dense<1.5, -2.0>
  %q = QuantizeLinear(%x, %xs, %xz)
  %dx = DequantizeLinear(%q, %xs, %xz)
  %dw = DequantizeLinear(%wq, %ws) {axis=0}
  %y = Gemm(%dx, %dw, %b) {transB=1}
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[4,3]) -> (%y) {
  %xs = init f32[] dense<0.5>
  %xz = init i8[] dense<-3>
  %wq = init i8[2,3] dense<1, 2, 3, -4, -5, -6>
  %ws = init f32[2] dense<0.25, 0.5>
  %b = init f32[2] dense<1.5, -2.0>
  %b.f32 = init f32[2] dense<1.5, -2.0>
  %wq.t = init i8[3,2] dense<1, -4, 2, -5, 3, -6>
  %dw.scale = init f32[2] dense<0.25, 0.5>
  %q = QuantizeLinear(%x, %xs, %xz)
  %y = kiln::QMatMul(%q, %wq.t, %dw.scale, %b.f32) {out_dtype="f32", x_scale=0.5, x_zero_point=-3}
})");
}

TEST(FoldQdq, MaxPoolWithEqualParametersRunsOnTheQuantizedTensor) {
  expect_rewrite("fold-qdq", R"(kiln.model opset=13
graph g(%x: f32[1,1,4,4]) -> (%y) {
  %s = init f32[] dense<0.1>
  %z = init u8[] dense<7>
  %q = QuantizeLinear(%x, %s, %z)
  %d = DequantizeLinear(%q, %s, %z)
  %m = MaxPool(%d) {kernel_shape=[2,2], strides=[2,2]}
  %q2 = QuantizeLinear(%m, %s, %z)
  %y = DequantizeLinear(%q2, %s, %z)
})",
                 R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,1,4,4]) -> (%y) {
  %s = init f32[] dense<0.1>
  %z = init u8[] dense<7>
  %q = QuantizeLinear(%x, %s, %z)
  %MaxPool_1_out = MaxPool(%q) {kernel_shape=[2,2], strides=[2,2]}
  %y = DequantizeLinear(%MaxPool_1_out, %s, %z)
})");
}

TEST(FoldQdq, LeavesWhatItCannotFoldAndSaysWhy) {
  // Different parameters around the max pool: nothing may change.
  expect_unchanged("fold-qdq", R"(kiln.model opset=13
graph g(%x: f32[1,1,4,4]) -> (%y) {
  %s = init f32[] dense<0.1>
  %s2 = init f32[] dense<0.2>
  %z = init u8[] dense<7>
  %q = QuantizeLinear(%x, %s, %z)
  %d = DequantizeLinear(%q, %s, %z)
  %m = MaxPool(%d) {kernel_shape=[2,2], strides=[2,2]}
  %q2 = QuantizeLinear(%m, %s2, %z)
  %y = DequantizeLinear(%q2, %s2, %z)
})");
  // Asymmetric weights (zero point 1) are not what the int8 kernels take.
  const char* asym = R"(kiln.model opset=13
graph g(%x: f32[2,3]) -> (%y) {
  %xs = init f32[] dense<0.5>
  %xz = init u8[] dense<3>
  %wq = init i8[3,2] dense<1, 2, 3, -4, -5, -6>
  %ws = init f32[] dense<0.25>
  %wz = init i8[] dense<1>
  %q = QuantizeLinear(%x, %xs, %xz)
  %dx = DequantizeLinear(%q, %xs, %xz)
  %dw = DequantizeLinear(%wq, %ws, %wz)
  %y = MatMul(%dx, %dw)
})";
  expect_unchanged("fold-qdq", asym);
  PassRun r = run_passes(asym, {"fold-qdq"}, /*explain=*/true);
  bool said = false;
  for (const auto& rem : r.ctx.remarks) said |= rem.message.find("asymmetric weights") != std::string::npos;
  EXPECT_TRUE(said) << "the refusal must give its reason";
}

}  // namespace
}  // namespace kiln::passes::test

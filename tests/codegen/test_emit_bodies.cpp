// Generated kernels against the reference interpreter running the same body: many bodies (the
// fused chains real models produce, and every op family), many shapes (scalar, per-channel,
// row and column broadcast, excitation, full, ranks 0..5, odd sizes, a dynamic leading dim run
// at two sizes with one kernel). Every kernel is emitted twice, specialised and general-only,
// and called both over [0, total) in one piece and over uneven ranges (as threads would).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <tuple>
#include <random>

#include "codegen/codegen_test_util.h"

namespace kiln::codegen::test {
namespace {

using Dims = std::vector<int64_t>;

struct BodyCase {
  std::string name;
  std::vector<std::string> types;  // input types, e.g. "f32[N,4,1,1]"
  std::string body;                // statements reading %x0.. and defining %r0..
  int outputs = 1;
  std::vector<std::vector<Dims>> runs;  // per run, the concrete dims of every input
  double atol = 0, rtol = 0;            // 0, 0 = bit-exact
  bool specials = false;                // put NaN, +-inf, -0, denormals and huge values in float inputs
  double range = 4;                     // floats drawn from [-range, range]
};

void PrintTo(const BodyCase& c, std::ostream* os) { *os << c.name; }

// GELU, tanh approximation as GPT-2 exports it.
const char* kGeluTanh = R"(
    %k = init f32[] dense<0.79788458347320556640625>
    %c = init f32[] dense<0.044714998453855514526367>
    %one = init f32[] dense<1.0>
    %half = init f32[] dense<0.5>
    %x2 = Mul(%x0, %x0)
    %x3 = Mul(%x2, %x0)
    %cx3 = Mul(%x3, %c)
    %in = Add(%x0, %cx3)
    %kin = Mul(%in, %k)
    %t = Tanh(%kin)
    %p = Add(%t, %one)
    %hx = Mul(%x0, %half)
    %r0 = Mul(%hx, %p))";

std::vector<BodyCase> cases() {
  std::vector<BodyCase> c;
  // ---- fused chains from real models
  c.push_back({"gelu_erf", {"f32[N,129]"}, kGeluErfBody, 1, {{{1, 129}}, {{3, 129}}}, 2e-6, 2e-6, false, 6});
  c.push_back({"gelu_erf_specials", {"f32[257]"}, kGeluErfBody, 1, {{{257}}}, 2e-6, 2e-6, true, 6});
  c.push_back({"gelu_tanh", {"f32[N,64]"}, kGeluTanh, 1, {{{2, 64}}, {{5, 64}}}, 2e-6, 2e-6, false, 6});
  c.push_back({"gelu_op_both_forms", {"f32[3,67]"}, R"(
    %r0 = Gelu(%x0)
    %r1 = Gelu(%x0) {approximate="tanh"})", 2, {{{3, 67}}}, 2e-6, 2e-6, true, 6});
  c.push_back({"silu", {"f32[N,32,7,7]"}, R"(
    %s = Sigmoid(%x0)
    %r0 = Mul(%x0, %s))", 1, {{{1, 32, 7, 7}}, {{2, 32, 7, 7}}}, 1e-7, 1e-6, true, 12});
  c.push_back({"hardswish_op", {"f32[N,16,5,5]"}, "    %r0 = HardSwish(%x0)", 1, {{{2, 16, 5, 5}}}, 0, 0, true, 8});
  c.push_back({"hardswish_decomposed", {"f32[N,16,5,5]"}, R"(
    %three = init f32[] dense<3.0>
    %zero = init f32[] dense<0.0>
    %six = init f32[] dense<6.0>
    %a = Add(%x0, %three)
    %c = Clip(%a, %zero, %six)
    %m = Mul(%x0, %c)
    %r0 = Div(%m, %six))", 1, {{{1, 16, 5, 5}}, {{3, 16, 5, 5}}}, 0, 0, true, 8});
  // x * scale + bias with the scale and bias as inputs [C,1,1] (the per-channel row path) and baked.
  c.push_back({"scale_bias_inputs", {"f32[N,24,9,11]", "f32[24,1,1]", "f32[24,1,1]"}, R"(
    %m = Mul(%x0, %x1)
    %r0 = Add(%m, %x2))", 1, {{{1, 24, 9, 11}, {24, 1, 1}, {24, 1, 1}}, {{2, 24, 9, 11}, {24, 1, 1}, {24, 1, 1}}},
               1e-6, 1e-6});
  c.push_back({"scale_bias_baked", {"f32[N,3,5,7]"}, R"(
    %s = init f32[3,1,1] dense<0.5, -2.0, 3.25>
    %b = init f32[3,1,1] dense<0.125, 1.0, -7.5>
    %m = Mul(%x0, %s)
    %a = Add(%m, %b)
    %r0 = Relu(%a))", 1, {{{2, 3, 5, 7}}, {{1, 3, 5, 7}}}, 1e-6, 1e-6});
  c.push_back({"residual_add_relu", {"f32[N,64,14,14]", "f32[N,64,14,14]"}, R"(
    %a = Add(%x0, %x1)
    %r0 = Relu(%a))", 1, {{{1, 64, 14, 14}, {1, 64, 14, 14}}, {{2, 64, 14, 14}, {2, 64, 14, 14}}}, 0, 0, true});
  // Squeeze-excitation: x * sigmoid(s) with s [N,C,1,1] (rows whose offset moves with N and C).
  c.push_back({"excitation", {"f32[N,40,6,6]", "f32[N,40,1,1]"}, R"(
    %s = Sigmoid(%x1)
    %r0 = Mul(%x0, %s))", 1, {{{1, 40, 6, 6}, {1, 40, 1, 1}}, {{3, 40, 6, 6}, {3, 40, 1, 1}}}, 1e-7, 1e-6});
  c.push_back({"layernorm_tail", {"f32[N,7,48]", "f32[N,7,1]", "f32[48]", "f32[48]"}, R"(
    %d = Div(%x0, %x1)
    %m = Mul(%d, %x2)
    %r0 = Add(%m, %x3))", 1, {{{2, 7, 48}, {2, 7, 1}, {48}, {48}}}, 1e-6, 1e-6});
  c.push_back({"row_broadcast", {"f32[M,33]", "f32[1,33]"}, "    %r0 = Sub(%x0, %x1)", 1,
               {{{5, 33}, {1, 33}}, {{1, 33}, {1, 33}}}});
  c.push_back({"column_and_row", {"f32[13,1]", "f32[1,17]"}, "    %r0 = Mul(%x0, %x1)", 1, {{{13, 1}, {1, 17}}}});
  c.push_back({"scalar_input", {"f32[N,1031]", "f32[]"}, "    %r0 = Max(%x0, %x1)", 1,
               {{{2, 1031}, {}}, {{1, 1031}, {}}}, 0, 0, true});
  c.push_back({"rank0", {"f32[]", "f32[]"}, "    %r0 = Add(%x0, %x1)", 1, {{{}, {}}}});
  c.push_back({"rank1_odd", {"f32[1000003]"}, "    %r0 = Exp(%x0)", 1, {{{1000003}}}, 1e-38, 3e-7, true, 90});
  c.push_back({"rank3_middle_broadcast", {"f32[5,1,7]", "f32[1,6,1]"}, "    %r0 = Div(%x0, %x1)", 1,
               {{{5, 1, 7}, {1, 6, 1}}}});
  c.push_back({"rank5_mixed", {"f32[2,3,1,5,7]", "f32[3,4,1,1]", "f32[7]"}, R"(
    %a = Add(%x0, %x1)
    %r0 = Mul(%a, %x2))", 1, {{{2, 3, 1, 5, 7}, {3, 4, 1, 1}, {7}}}, 1e-6, 1e-6});
  // ---- every op family
  c.push_back({"where_compare", {"f32[N,50]", "f32[1,50]"}, R"(
    %zero = init f32[] dense<0.0>
    %k = init f32[] dense<0.1>
    %g = Greater(%x0, %zero)
    %s = Mul(%x0, %k)
    %r0 = Where(%g, %x0, %s)
    %ge = GreaterOrEqual(%x0, %x1)
    %le = LessOrEqual(%x0, %x1)
    %r1 = Xor(%ge, %le)
    %lt = Less(%x0, %x1)
    %eq = Equal(%x0, %x1)
    %o = Or(%lt, %eq)
    %n = Not(%o)
    %r2 = And(%n, %g))", 3, {{{4, 50}, {1, 50}}}, 0, 0, true});
  c.push_back({"where_bool_input", {"bool[1,9]", "f32[4,9]", "f32[]"}, "    %r0 = Where(%x0, %x1, %x2)", 1,
               {{{1, 9}, {4, 9}, {}}}});
  c.push_back({"cast_chains", {"f32[N,97]"}, R"(
    %i = Cast(%x0) {to=6}
    %r0 = Cast(%i) {to=1}
    %r1 = Cast(%x0) {to=7}
    %b = Cast(%x0) {to=9}
    %r2 = Cast(%b) {to=1}
    %d = Cast(%x0) {to=11}
    %r3 = Cast(%d) {to=1}
    %h = Cast(%x0) {to=10}
    %r4 = Cast(%h) {to=1}
    %u = Cast(%x0) {to=2}
    %r5 = Cast(%u) {to=11}
    %bf = Cast(%x0) {to=16}
    %r6 = Cast(%bf) {to=1})", 7, {{{3, 97}}}, 0, 0, true, 3e9});
  c.push_back({"cast_int_sources", {"i64[40]", "i32[40]", "bool[40]"}, R"(
    %r0 = Cast(%x0) {to=1}
    %r1 = Cast(%x0) {to=6}
    %r2 = Cast(%x1) {to=2}
    %r3 = Cast(%x2) {to=7}
    %r4 = Cast(%x1) {to=9})", 5, {{{40}, {40}, {40}}}});
  c.push_back({"multi_output", {"f32[N,31]", "f32[N,31]"}, R"(
    %r0 = Add(%x0, %x1)
    %r1 = Mul(%x0, %x1)
    %r2 = Identity(%x1))", 3, {{{2, 31}, {2, 31}}, {{4, 31}, {4, 31}}}});
  c.push_back({"pow_constants", {"f32[211]"}, R"(
    %two = init f32[] dense<2.0>
    %half = init f32[] dense<0.5>
    %three = init f32[] dense<3.0>
    %r0 = Pow(%x0, %two)
    %r1 = Pow(%x0, %half)
    %r2 = Pow(%x0, %three))", 3, {{{211}}}, 0, 1.2e-7, true});
  c.push_back({"div_constant", {"f32[N,77]"}, R"(
    %k = init f32[] dense<3.0>
    %r0 = Div(%x0, %k))", 1, {{{3, 77}}}, 0, 0, true});
  c.push_back({"integer_arith", {"i32[64]", "i32[64]"}, R"(
    %seven = init i32[] dense<7>
    %mthree = init i32[] dense<-3>
    %big = init i32[] dense<2147483647>
    %r0 = Div(%x0, %seven)
    %r1 = Mod(%x0, %mthree)
    %r2 = Mod(%x0, %mthree) {fmod=1}
    %w = Add(%x0, %big)
    %r3 = Mul(%w, %x1)
    %r4 = Sub(%x1, %x0)
    %r5 = Max(%x0, %x1)
    %r6 = Relu(%x0)
    %r7 = Abs(%x0)
    %r8 = Neg(%x1)
    %r9 = Sign(%x0))", 10, {{{64}, {64}}}});
  c.push_back({"exact_unary", {"f32[N,301]"}, R"(
    %r0 = Relu(%x0)
    %r1 = Abs(%x0)
    %r2 = Neg(%x0)
    %r3 = Sign(%x0)
    %r4 = Floor(%x0)
    %r5 = Ceil(%x0)
    %r6 = Round(%x0)
    %r7 = Reciprocal(%x0)
    %r8 = Sqrt(%x0)
    %r9 = LeakyRelu(%x0) {alpha=0.2}
    %r10 = Softsign(%x0)
    %r11 = ThresholdedRelu(%x0) {alpha=0.5}
    %r12 = IsNaN(%x0)
    %r13 = IsInf(%x0) {detect_negative=0})", 14, {{{2, 301}}}, 0, 0, true, 5});
  c.push_back({"transcendental_unary", {"f32[N,301]"}, R"(
    %r0 = Exp(%x0)
    %a = Abs(%x0)
    %r1 = Log(%a)
    %r2 = Tanh(%x0)
    %r3 = Erf(%x0)
    %r4 = Sigmoid(%x0)
    %r5 = Softplus(%x0)
    %r6 = Mish(%x0)
    %r7 = Elu(%x0) {alpha=0.7}
    %r8 = Celu(%x0) {alpha=1.5})", 9, {{{2, 301}}}, 1e-37, 1e-6, true, 20});
  // alpha e^x - alpha and alpha x + beta may become one fma here: exact to the operands' ulp.
  c.push_back({"fma_activations", {"f32[N,301]"}, R"(
    %r0 = Selu(%x0)
    %r1 = HardSigmoid(%x0))", 2, {{{2, 301}}}, 5e-7, 1e-6, true, 20});
  c.push_back({"libm_unary", {"f32[N,101]"}, R"(
    %r0 = Sin(%x0)
    %r1 = Cos(%x0)
    %r2 = Atan(%x0)
    %r3 = Sinh(%x0))", 4, {{{1, 101}}}, 0, 0, true, 3});
  c.push_back({"variadic_nan", {"f32[N,45]", "f32[45]", "f32[]"}, R"(
    %r0 = Max(%x0, %x1, %x2)
    %r1 = Min(%x0, %x1, %x2)
    %r2 = Sum(%x0, %x1, %x2)
    %r3 = Mean(%x0, %x1, %x2)
    %lo = init f32[] dense<-1.0>
    %hi = init f32[] dense<2.0>
    %r4 = Clip(%x0, %lo, %hi)
    %r5 = PRelu(%x0, %x1)
    %r6 = Mod(%x0, %x1) {fmod=1})", 7, {{{3, 45}, {45}, {}}}, 0, 0, true});
  c.push_back({"f64_chain", {"f64[N,37]"}, R"(
    %e = Exp(%x0)
    %t = Tanh(%e)
    %r0 = Erf(%t)
    %r1 = Sigmoid(%x0))", 2, {{{2, 37}}}, 0, 0, true});
  c.push_back({"f16_chain", {"f16[N,53]", "f16[53]"}, R"(
    %a = Add(%x0, %x1)
    %m = Mul(%a, %x0)
    %r0 = Relu(%m)
    %r1 = Cast(%m) {to=1})", 2, {{{3, 53}, {53}}}, 0, 0, true});
  c.push_back({"bf16_chain", {"bf16[N,29]", "bf16[]"}, R"(
    %m = Mul(%x0, %x1)
    %s = Sigmoid(%m)
    %r0 = Cast(%s) {to=1}
    %r1 = Max(%m, %x1))", 2, {{{2, 29}, {}}}, 0, 0, true});
  // Tensor::cast's rules: 32/64-bit integer sources wrap through int64, narrower ones and
  // floats saturate through double (so i8 -> u8 clamps negatives to 0, i32 -> u16 wraps).
  c.push_back({"cast_small_ints", {"i32[64]", "f32[64]"}, R"(
    %a = Cast(%x0) {to=3}
    %r0 = Cast(%a) {to=2}
    %r1 = Cast(%a) {to=5}
    %b = Cast(%x0) {to=4}
    %r2 = Cast(%b) {to=6}
    %r3 = Cast(%x1) {to=13}
    %r4 = Cast(%x1) {to=12}
    %r5 = Cast(%r3) {to=1}
    %r6 = Cast(%x1) {to=3})", 7, {{{64}, {64}}}, 0, 0, true, 1e10});
  c.push_back({"bitshift_u8", {"u8[32]", "u8[32]"}, R"(
    %r0 = BitShift(%x0, %x1) {direction="LEFT"}
    %r1 = BitShift(%x0, %x1) {direction="RIGHT"})", 2, {{{32}, {32}}}});
  c.push_back({"constant_node", {"f32[N,19]"}, R"(
    %c = Constant() {value=f32[19] dense<1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0>}
    %r0 = Mul(%x0, %c))", 1, {{{2, 19}}}});
  return c;
}

// Deterministic inputs: floats in [-range, range] (plus specials), ints in [-60, 60], bools.
Tensor make_input(DType t, const Dims& dims, uint32_t seed, bool specials, double range) {
  std::mt19937 gen(seed);
  Tensor x(t, dims);
  const float kSpecial[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -3e-39f, 1e30f, -1e30f, 0.5f, -2.5f, 88.8f, -104.5f};
  std::uniform_real_distribution<double> real(-range, range);
  std::uniform_int_distribution<int> integer(-60, 60);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = dtype_is_float(t) ? real(gen) : integer(gen);
    if (dtype_is_float(t) && specials && i % 7 == 3) v = kSpecial[(i / 7) % std::size(kSpecial)];
    switch (t) {
      case DType::f32: x.data<float>()[i] = static_cast<float>(v); break;
      case DType::f64: x.data<double>()[i] = v; break;
      case DType::f16: x.data<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); break;
      case DType::bf16: x.data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v)); break;
      case DType::i32: x.data<int32_t>()[i] = static_cast<int32_t>(v) * (i % 5 == 0 ? 40000000 : 1); break;
      case DType::i64: x.data<int64_t>()[i] = static_cast<int64_t>(v) * (i % 3 == 0 ? 300000000000 : 1); break;
      case DType::u8: x.data<uint8_t>()[i] = static_cast<uint8_t>(static_cast<int>(v) + 60); break;
      case DType::boolean: x.data<bool>()[i] = static_cast<int>(v) % 2 == 0; break;
      default: throw Error(str_cat("make_input: no generator for ", dtype_name(t)));
    }
  }
  return x;
}

// The scalar build (no FMA, no vectors wider than SSE2) and this machine's best.
std::vector<std::string> isas() {
  std::vector<std::string> v = {"scalar"};
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    v.push_back("avx512");
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    v.push_back("avx2");
  return v;
}

// Every case's kernels, emitted once, and one library per ISA, built on first use.
struct Compiled {
  std::vector<BodyCase> cases = kiln::codegen::test::cases();
  std::vector<Model> models;
  std::vector<GeneratedKernel> specialised, general;
  std::map<std::string, std::unique_ptr<LoadedLibrary>> libs;

  Compiled() {
    for (const BodyCase& bc : cases) {
      models.push_back(fused_model(bc.types, bc.body, bc.outputs));
      const Node& n = fused_node(models.back());
      specialised.push_back(emit_fused_kernel(n));
      general.push_back(emit_fused_kernel(n, {.specialise = false}));
    }
  }
  const LoadedLibrary& library(const std::string& isa) {
    auto& lib = libs[isa];
    if (!lib) {
      std::vector<GeneratedKernel> all = specialised;
      all.insert(all.end(), general.begin(), general.end());
      BuildOptions bo;
      bo.cache_dir = test_cache_dir();
      bo.target_isa = isa;
      lib = std::make_unique<LoadedLibrary>(build_kernel_library(all, bo).path);
    }
    return *lib;
  }
};

class EmitBodies : public ::testing::TestWithParam<std::tuple<std::string, BodyCase>> {
 protected:
  static void SetUpTestSuite() { compiled_ = new Compiled; }
  static void TearDownTestSuite() {
    delete compiled_;
    compiled_ = nullptr;
  }
  static Compiled* compiled_;
};
Compiled* EmitBodies::compiled_ = nullptr;

TEST_P(EmitBodies, MatchesInterpreter) {
  const auto& [isa, bc] = GetParam();
  const auto& all = compiled_->cases;
  const size_t idx = static_cast<size_t>(
      std::find_if(all.begin(), all.end(), [&](const BodyCase& c) { return c.name == bc.name; }) - all.begin());
  const Node& node = fused_node(compiled_->models[idx]);
  const LoadedLibrary& lib = compiled_->library(isa);
  for (size_t run = 0; run < bc.runs.size(); ++run) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < bc.runs[run].size(); ++i) {
      DType t = node.inputs[i]->dtype;
      inputs.push_back(make_input(t, bc.runs[run][i], static_cast<uint32_t>(31 * run + i + 1), bc.specials, bc.range));
    }
    const std::vector<Tensor> ref = run_body(node, inputs);
    std::vector<DType> out_dtypes;
    for (const Tensor& r : ref) out_dtypes.push_back(r.dtype());
    const int64_t total = ref[0].numel();
    for (const GeneratedKernel* k : {&compiled_->specialised[idx], &compiled_->general[idx]}) {
      SCOPED_TRACE(str_cat("run ", run, ", kernel ", k == &compiled_->general[idx] ? "general-only" : "specialised"));
      kiln_fused_fn fn = lib.kernel(k->symbol);
      const std::vector<Tensor> whole = call_kernel(fn, inputs, out_dtypes);
      for (size_t o = 0; o < ref.size(); ++o) EXPECT_EQ(compare(whole[o], ref[o], bc.atol, bc.rtol), "") << "output " << o;
      // Uneven ranges, as threads would split the work: bit-identical to one call.
      const std::vector<Tensor> split = call_kernel(fn, inputs, out_dtypes, {1, 2, 7, total / 3, total / 3 + 5, total - 2});
      for (size_t o = 0; o < ref.size(); ++o) EXPECT_EQ(compare(split[o], whole[o], 0, 0), "") << "output " << o << " (split)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codegen, EmitBodies, ::testing::Combine(::testing::ValuesIn(isas()), ::testing::ValuesIn(cases())),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, BodyCase>>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

}  // namespace
}  // namespace kiln::codegen::test

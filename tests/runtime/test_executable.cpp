// The compiled runtime on small graphs: same results as the reference interpreter, views and
// in-place writes, plans cached per input shape, input checks, control flow and run-time
// shapes through the reference fallback, and a steady run loop that allocates nothing.
#include "alloc_counter.h"
#include "kiln/ops/specialize.h"
#include "kiln/runtime/executable.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

using testing::bit_equal;
using testing::error_of;
using testing::ScratchDir;

// Views of an input, of a weight and of arena values, an in-place chain, the fast Softmax
// (contiguous rows) and the reference one (axis 0), and a weight-heavy MatMul.
const char* kModel = R"(
kiln.model ir=8 opset=17
graph main(%x: f32[N,8], %m: f32[N,8]) -> (%y, %s, %t) {
  %w = init f32[8,8] dense<0.1, -0.2, 0.3, 0.05, -0.5, 0.25, 0.7, -0.1, 0.2, 0.4, -0.3, 0.15, 0.35, -0.45, 0.05, 0.6,
                           -0.6, 0.1, 0.2, -0.25, 0.3, 0.45, -0.15, 0.5, 0.25, -0.35, 0.4, 0.55, -0.05, 0.1, 0.3, -0.2,
                           0.15, 0.2, -0.4, 0.35, 0.05, -0.1, 0.65, 0.3, -0.3, 0.5, 0.1, -0.2, 0.4, 0.25, -0.55, 0.1,
                           0.45, -0.25, 0.3, 0.1, -0.15, 0.2, 0.35, -0.4, 0.05, 0.3, -0.2, 0.6, 0.1, -0.35, 0.25, 0.15>
  %k = init i64[2] dense<-1, 4>
  %b = init f32[8] dense<0.5, -0.5, 0.25, -0.25, 1.0, -1.0, 0.0, 0.125>
  %xm = Mul(%x, %m)
  %mm = MatMul(%xm, %w)
  %a = Add(%mm, %b)
  %r = Relu(%a)
  %e = Exp(%r)
  %v = Reshape(%e, %k)
  %s = Softmax(%v) {axis=-1}
  %vx = Reshape(%x, %k)
  %vw = Reshape(%w, %k)
  %t = Softmax(%vw) {axis=0}
  %y = Add(%vx, %v)
}
)";

std::map<std::string, Tensor> inputs_for(int64_t n, float scale = 1.0f) {
  Tensor x(DType::f32, {n, 8}), m(DType::f32, {n, 8});
  for (int64_t i = 0; i < n * 8; ++i) {
    x.data<float>()[i] = scale * static_cast<float>((i * 7) % 13) / 13.0f - 0.4f;
    m.data<float>()[i] = static_cast<float>((i * 5) % 11) / 11.0f;
  }
  return {{"x", x}, {"m", m}};
}

std::unique_ptr<Executable> load(const ScratchDir& dir, const std::string& text,
                                 std::map<std::string, std::string> dims = {}) {
  Model m = testing::model_from_text(text);
  write_artifact(dir.file("m.kiln"), testing::test_manifest(std::move(dims)), m);
  return Executable::load(dir.file("m.kiln"));
}

void expect_same_as_interpreter(Executable& exe, const std::string& text, const std::map<std::string, Tensor>& in,
                                int threads = 1) {
  Model ref = testing::model_from_text(text);
  RunOptions opt;
  opt.threads = threads;
  auto want = run_model(ref, in, opt);
  auto got = exe.run(in, opt);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) EXPECT_TRUE(bit_equal(got.at(name), t)) << name;
}

TEST(Executable, MatchesTheInterpreterAndPlansPerShape) {
  ScratchDir dir("exe_basic");
  auto exe = load(dir, kModel, {{"N", "1..16"}});
  for (int64_t n : {2, 5, 2}) expect_same_as_interpreter(*exe, kModel, inputs_for(n));
  EXPECT_EQ(exe->cached_plans(), 2u);
  expect_same_as_interpreter(*exe, kModel, inputs_for(5, 3.0f), 2);
  EXPECT_EQ(exe->cached_plans(), 2u);
  const plan::Plan* p = exe->last_plan();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->find("v")->kind, plan::ValueKind::View);
  EXPECT_EQ(p->find("vx")->kind, plan::ValueKind::View);
  EXPECT_EQ(p->find("vw")->kind, plan::ValueKind::View);
  EXPECT_TRUE(p->find("r")->in_place);
  EXPECT_EQ(p->find("xm")->dims, (std::vector<int64_t>{5, 8}));
  // The loaded model keeps its declared symbolic shapes between plans.
  EXPECT_EQ(exe->model().graph->find("xm")->shape.str(), "[N,8]");
}

TEST(Executable, RuntimePlanIsThePlanTheRuntimeMakes) {
  ScratchDir dir("exe_runtime_plan");
  Model m = testing::model_from_text(kModel);
  ops::InputSpec spec;
  spec.dims["N"] = 3;
  ops::specialize_inputs(m, spec);
  const std::string plan_json = runtime_plan(m).to_json();
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m, {}, plan_json);
  EXPECT_EQ(read_artifact(dir.file("m.kiln")).plan_json, plan_json);
  auto exe = Executable::load(dir.file("m.kiln"));
  exe->run(inputs_for(3));
  EXPECT_EQ(exe->last_plan()->to_json(), plan_json);
}

TEST(Executable, ChecksInputsLikeTheInterpreter) {
  ScratchDir dir("exe_inputs");
  auto exe = load(dir, kModel, {{"N", "1..16"}});
  auto in = inputs_for(2);
  auto run_with = [&](const std::map<std::string, Tensor>& i) { return error_of([&] { exe->run(i); }); };
  EXPECT_NE(run_with({{"x", in["x"]}}).find("missing input 'm'"), std::string::npos);
  auto extra = in;
  extra["z"] = Tensor(DType::f32, {1});
  EXPECT_NE(run_with(extra).find("no input named 'z'"), std::string::npos);
  auto wrong = in;
  wrong["m"] = Tensor(DType::f32, {3, 8});
  EXPECT_NE(run_with(wrong).find("N is 2 in another input"), std::string::npos);
  wrong["m"] = Tensor(DType::i64, {2, 8});
  EXPECT_NE(run_with(wrong).find("(wrong dtype)"), std::string::npos);
  EXPECT_NE(run_with(inputs_for(17)).find("N=17 is out of range"), std::string::npos);
  EXPECT_EQ(exe->cached_plans(), 0u);  // nothing planned for refused inputs
}

TEST(Executable, KeepsAtMostEightPlans) {
  ScratchDir dir("exe_lru");
  auto exe = load(dir, kModel);
  for (int64_t n = 1; n <= 10; ++n) exe->run(inputs_for(n));
  EXPECT_EQ(exe->cached_plans(), 8u);
  expect_same_as_interpreter(*exe, kModel, inputs_for(1));  // dropped earlier, planned again
}

TEST(Executable, ReusesOutputBuffersTheCallerGaveBack) {
  ScratchDir dir("exe_outputs");
  auto exe = load(dir, kModel);
  auto named = inputs_for(3);
  std::vector<Tensor> in = {named["x"], named["m"]}, out;
  exe->run(in, out);
  const void* y0 = out[0].raw();
  const Tensor first_y = out[0].clone();
  exe->run(in, out);
  EXPECT_EQ(out[0].raw(), y0);  // handed back: reused
  Tensor kept = out[0];
  exe->run(in, out);
  EXPECT_NE(out[0].raw(), y0);  // still held elsewhere: a fresh buffer
  EXPECT_EQ(kept.raw(), y0);
  EXPECT_TRUE(bit_equal(kept, first_y));
  EXPECT_TRUE(bit_equal(out[0], first_y));
}

// Heap allocations over 20 runs at 2 threads after the first two (the first of a shape plans and
// allocates); `out` keeps the last run's outputs.
long steady_allocations(Executable& exe, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  RunOptions opt;
  opt.threads = 2;
  exe.run(in, out, opt);
  exe.run(in, out, opt);
  const long before = testing::allocation_count();
  for (int i = 0; i < 20; ++i) exe.run(in, out, opt);
  return testing::allocation_count() - before;
}

// Pixel-major INT8 activations (attributes as lower/int8_nhwc_layout.cpp sets them): a 3x3
// writing pixel-major, a depthwise layer and a 1x1 with a residual reading and writing it, the
// dequantized floats averaged pixel by pixel. On the AVX-512 VNNI table their own kernels, on
// others the NCHW paths between transposes: either way no allocation per run.
TEST(Executable, PixelMajorInt8StepsDoNotAllocate) {
  const char* text = R"(
kiln.model ir=8 opset=13 opset.kiln=1
graph main(%x: f32[1,32,12,12]) -> (%y) {
  %xs = init f32[] dense<0.05>
  %xz = init u8[] dense<128>
  %ys = init f32[] dense<0.1>
  %yz = init u8[] dense<3>
  %w3 = init i8[32,32,3,3] dense<1>
  %wd = init i8[32,1,3,3] dense<2>
  %w1 = init i8[32,32,1,1] dense<-1>
  %ws = init f32[32] dense<0.002>
  %b = init i32[32] dense<10>
  %q = QuantizeLinear(%x, %xs, %xz)
  %a = kiln::QConv(%q, %w3, %ws, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu", out_dtype="u8", x_scale=0.05, x_zero_point=128, y_scale=0.1, y_zero_point=0, y_nhwc=1}
  %d = kiln::QConv(%a, %wd, %ws, %b) {group=32, kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu", out_dtype="u8", x_scale=0.1, x_zero_point=0, y_scale=0.1, y_zero_point=0, x_nhwc=1, y_nhwc=1}
  %o = kiln::QConv(%d, %w1, %ws, %b, %a) {activation="Relu", out_dtype="u8", x_scale=0.1, x_zero_point=0, y_scale=0.1, y_zero_point=0, z_scale=0.1, z_zero_point=0, x_nhwc=1, y_nhwc=1}
  %f = DequantizeLinear(%o, %ys, %yz)
  %y = GlobalAveragePool(%f) {x_nhwc=1}
}
)";
  ScratchDir dir("exe_alloc_nhwc");
  auto exe = load(dir, text);
  Tensor x(DType::f32, {1, 32, 12, 12});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 101) * 0.05f - 2.f;
  std::vector<Tensor> in = {x}, out;
  EXPECT_EQ(steady_allocations(*exe, in, out), 0);
}

TEST(Executable, StridedCopiesAndPoolsDoNotAllocate) {
  // Transpose, Slice and Split run as strided copies planned once per shape (fast_strided.cpp),
  // the pools as fast kernels; at 2 threads the copies (2^16 elements) and pools split over
  // threads, whose parallel regions take their lambdas by reference (no std::function heap).
  const char* text = R"(
kiln.model ir=8 opset=17
graph main(%x: f32[2,32,32,32]) -> (%y, %z, %w, %u) {
  %t = Transpose(%x) {perm=[0,2,3,1]}
  %st = init i64[2] dense<2, -1>
  %en = init i64[2] dense<30, 0>
  %ax = init i64[2] dense<1, 3>
  %sp = init i64[2] dense<1, -2>
  %s = Slice(%t, %st, %en, %ax, %sp)
  %sizes = init i64[2] dense<12, 20>
  %a, %b = Split(%t, %sizes) {axis=3}
  %y = MaxPool(%s) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}
  %z = GlobalAveragePool(%a)
  %w = Transpose(%b) {perm=[0,3,1,2]}
  %u = Transpose(%x)
}
)";
  ScratchDir dir("exe_alloc_strided");
  auto exe = load(dir, text);
  Tensor x(DType::f32, {2, 32, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 101) * 0.125f - 6.f;
  std::vector<Tensor> in = {x}, out;
  EXPECT_EQ(steady_allocations(*exe, in, out), 0);
  Model ref = testing::model_from_text(text);
  auto want = run_model(ref, {{"x", x}});
  const char* names[] = {"y", "z", "w", "u"};
  ASSERT_EQ(out.size(), 4u);
  for (size_t j = 0; j < 4; ++j) EXPECT_TRUE(bit_equal(out[j], want.at(names[j]))) << names[j];
  // Sliced to rows 2..29 and channels 31 down to 1 by 2 (2x28x32x16), then pooled by 2.
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 28, 16, 8}));
}

TEST(Executable, GatherCompareExpandAndConcatRunFastAndDoNotAllocate) {
  // BERT's embedding lookup and attention mask: Gather with run-time indices, Equal against a
  // broadcast scalar, Expand to the heads; GPT-2's cache update: Concat along the sequence.
  // Their fast kernels plan once per shape (the reference kernels allocate on every run).
  const char* text = R"(
kiln.model ir=8 opset=17
graph main(%ids: i64[2,5], %mask: i64[2,5]) -> (%e, %c, %m, %b, %lt, %kv) {
  %table = init f32[7,3] dense<-3.25, -2.75, -2.25, -1.75, -1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4.25, 4.75, 5.25, 5.75, 6.25, 6.75>
  %e = Gather(%table, %ids)
  %cols = init i32[2] dense<-1, 0>
  %c = Gather(%table, %cols) {axis=1}
  %zero = init i64[] dense<0>
  %m = Equal(%mask, %zero)
  %heads = init i64[3] dense<3, 1, 1>
  %b = Expand(%m, %heads)
  %lt = Less(%ids, %mask)
  %new = init f32[2,1,3] dense<10, 11, 12, 13, 14, 15>
  %kv = Concat(%e, %new) {axis=1}
}
)";
  ScratchDir dir("exe_alloc_gather");
  auto exe = load(dir, text);
  Tensor ids = Tensor::from_vector<int64_t>({2, 5}, {0, 6, -1, 3, 3, -7, 2, 5, 1, 4});
  Tensor mask = Tensor::from_vector<int64_t>({2, 5}, {1, 1, 0, 1, 0, 0, 1, 1, 1, 0});
  std::vector<Tensor> in = {ids, mask}, out;
  EXPECT_EQ(steady_allocations(*exe, in, out), 0);
  Model ref = testing::model_from_text(text);
  auto want = run_model(ref, {{"ids", ids}, {"mask", mask}});
  const char* names[] = {"e", "c", "m", "b", "lt", "kv"};
  ASSERT_EQ(out.size(), 6u);
  for (size_t j = 0; j < 6; ++j) EXPECT_TRUE(bit_equal(out[j], want.at(names[j]))) << names[j];
  // Row -7 is row 0, -1 is row 6; column -1 is column 2.
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(out[0].data<float>()[3], 5.75f);
  EXPECT_EQ(out[0].data<float>()[15], -3.25f);
  EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{7, 2}));
  EXPECT_EQ(out[1].data<float>()[0], -2.25f);
  EXPECT_EQ(out[3].dims(), (std::vector<int64_t>{3, 2, 5}));
  EXPECT_TRUE(out[3].data<bool>()[2 + 20] && !out[3].data<bool>()[0 + 20]);
  // Each image's 5 gathered rows, then its new row.
  EXPECT_EQ(out[5].dims(), (std::vector<int64_t>{2, 6, 3}));
  EXPECT_EQ(out[5].data<float>()[3], 5.75f);
  EXPECT_EQ(out[5].data<float>()[15], 10.f);
  EXPECT_EQ(out[5].data<float>()[18], -3.25f);
  EXPECT_EQ(out[5].data<float>()[35], 15.f);
  // An index out of range fails the run with the node's name, before anything is copied.
  Tensor bad = Tensor::from_vector<int64_t>({2, 5}, {0, 1, 2, 3, 7, 0, 0, 0, 0, 0});
  std::vector<Tensor> in_bad = {bad, mask};
  try {
    exe->run(in_bad, out);
    FAIL() << "an out-of-range index ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Gather index 7 is out of range for a dim of size 7"), std::string::npos)
        << e.what();
  }
}

TEST(Executable, SteadyRunsDoNotAllocate) {
  // Every step here runs without the reference kernels: views and the fast Softmax.
  const char* text = R"(
kiln.model ir=8 opset=17
graph main(%x: f32[N,64]) -> (%y) {
  %k = init i64[2] dense<-1, 16>
  %v = Reshape(%x, %k)
  %s = Softmax(%v) {axis=-1}
  %k2 = init i64[2] dense<-1, 32>
  %v2 = Reshape(%s, %k2)
  %y = Softmax(%v2) {axis=-1}
}
)";
  ScratchDir dir("exe_alloc");
  auto exe = load(dir, text);
  Tensor x(DType::f32, {256, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 17) * 0.25f;
  std::vector<Tensor> in = {x}, out;
  EXPECT_EQ(steady_allocations(*exe, in, out), 0);
  Model ref = testing::model_from_text(text);
  EXPECT_TRUE(bit_equal(out[0], run_model(ref, {{"x", x}}).at("y")));
  // The reference-kernel fallback allocates its kernels' own bookkeeping, but no tensor moves:
  // every arena-backed value keeps its address from run to run.
  ScratchDir dir2("exe_alloc_fallback");
  auto exe2 = load(dir2, kModel);
  auto named = inputs_for(4);
  std::vector<Tensor> in2 = {named["x"], named["m"]}, out2;
  exe2->run(in2, out2);
  std::vector<const void*> addresses;
  for (const Tensor& t : out2) addresses.push_back(t.raw());
  const plan::Plan* p = exe2->last_plan();
  for (int i = 0; i < 3; ++i) {
    exe2->run(in2, out2);
    EXPECT_EQ(exe2->last_plan(), p);
    for (size_t j = 0; j < out2.size(); ++j) EXPECT_EQ(out2[j].raw(), addresses[j]) << j;
  }
}

// An If's branches run as planned instances of their own (outer values read in place, a
// branch may return an outer value); NonZero's run-time shape takes the reference kernel.
TEST(Executable, ControlFlowAndRunTimeShapes) {
  const char* text = R"(
kiln.model ir=8 opset=17
graph main(%c: bool[], %x: f32[6]) -> (%y, %z, %n) {
  %a = Relu(%x) : f32[6]
  %y = If(%c) {
    then_branch=graph t() -> (%tt) {
      %tt = Neg(%a) : f32[6]
    },
    else_branch=graph e() -> (%a) {
    }
  } : f32[6]
  %nz = NonZero(%a)
  %n = Cast(%nz) {to=1}
  %z = Add(%a, %x) : f32[6]
}
)";
  ScratchDir dir("exe_control");
  auto exe = load(dir, text);
  Tensor x = Tensor::from_vector<float>({6}, {1.f, -2.f, 0.f, 3.f, -1.f, 0.5f});
  for (bool c : {true, false}) expect_same_as_interpreter(*exe, text, {{"c", Tensor::scalar<bool>(c)}, {"x", x}});
  EXPECT_EQ(exe->last_plan()->find("nz")->kind, plan::ValueKind::Dynamic);
  auto out = exe->run({{"c", Tensor::scalar<bool>(false)}, {"x", x}});
  EXPECT_EQ(out.at("n").dims(), (std::vector<int64_t>{1, 3}));
  // The else branch returns the arena value %a itself: the output must not alias the arena.
  Tensor y = out.at("y");
  exe->run({{"c", Tensor::scalar<bool>(true)}, {"x", x}});
  EXPECT_EQ(y.data<float>()[0], 1.f);
}

// A model whose work is all inside If branches, as exporters write Silero VAD: the branches run
// on fast kernels (Softmax, Shape, Gather, Equal, Transpose), a nested If takes its condition from a
// shape, one branch returns an outer value and another a weight, a Reshape of an outer value is a
// view (no step), and an If output that a later step reads is written by the branch straight into
// the arena. Same bytes as the interpreter on
// both conditions, every step of the taken branch on a fast kernel, and no allocation per run.
const char* kBranches = R"(
kiln.model ir=8 opset=17
graph main(%c: bool[], %x: f32[4,8]) -> (%y, %z, %w) {
  %zero = init i64[1] dense<0>
  %four = init i64[1] dense<4>
  %dims = init i64[2] dense<4, 8>
  %a = Softmax(%x) {axis=-1} : f32[4,8]
  %y, %z = If(%c) {
    then_branch=graph t() -> (%s, %a) {
      %ra = Reshape(%a, %dims)
      %s = Softmax(%ra) {axis=-1}
    },
    else_branch=graph e() -> (%u, %k) {
      %k = init f32[4,8] dense<0.5>
      %n = Shape(%a)
      %g = Gather(%n, %zero) {axis=0}
      %q = Equal(%g, %four)
      %u = If(%q) {
        then_branch=graph t2() -> (%tt) {
          %tr = Transpose(%x) {perm=[1,0]}
          %sm = Softmax(%tr) {axis=-1}
          %tt = Transpose(%sm) {perm=[1,0]}
        },
        else_branch=graph e2() -> (%x) {
        }
      }
    }
  }
  %w = Concat(%y, %x) {axis=0}
}
)";

TEST(Executable, IfBranchesRunPlannedOnFastKernelsWithoutAllocating) {
  ScratchDir dir("exe_branches");
  auto exe = load(dir, kBranches);
  Tensor x(DType::f32, {4, 8});
  for (int64_t i = 0; i < 32; ++i) x.data<float>()[i] = static_cast<float>((i * 7) % 11) / 5.0f - 0.9f;
  for (bool c : {true, false, true}) expect_same_as_interpreter(*exe, kBranches, {{"c", Tensor::scalar<bool>(c)}, {"x", x}});
  auto out = exe->run({{"c", Tensor::scalar<bool>(false)}, {"x", x}});
  EXPECT_NE(out.at("y").data<float>()[0], out.at("z").data<float>()[0]);
  EXPECT_EQ(out.at("z").data<float>()[31], 0.5f);              // the else branch's weight
  EXPECT_EQ(exe->cached_plans(), 1u);  // one plan serves both conditions

  for (bool c : {true, false}) {
    std::vector<Tensor> in = {Tensor::scalar<bool>(c), x}, outs;
    const std::vector<StepTiming> steps = exe->profile_run(in, outs);
    std::vector<std::string> ops;
    for (const StepTiming& st : steps) {
      ops.push_back(st.op);
      EXPECT_TRUE(st.fast) << st.node << " (" << st.op << ") ran the reference kernel";
    }
    // The branch's steps come before the If that ran them; views (Identity, Reshape) take none.
    const std::vector<std::string> want =
        c ? std::vector<std::string>{"Softmax", "Softmax", "If", "Concat"}
          : std::vector<std::string>{"Softmax", "Shape", "Gather", "Equal", "Transpose", "Softmax", "Transpose", "If",
                                     "If", "Concat"};
    EXPECT_EQ(ops, want);
    EXPECT_EQ(steady_allocations(*exe, in, outs), 0) << "cond " << c;
  }
}

// Pad (reflect, edge, constant with its value, a negative pad that crops) runs on maps made once
// per shape, and a Squeeze / Reshape that must have bytes of its own (a branch's output) is one
// copy: same bytes as the interpreter, every step fast, no allocation a run.
TEST(Executable, PadAndCopiedReshapesRunFastWithoutAllocating) {
  const char* text = R"(
kiln.model ir=8 opset=17
graph main(%c: bool[], %x: f32[2,5], %v: f32[1,1,6]) -> (%r, %e, %k, %s) {
  %p1 = init i64[4] dense<1, 3, 0, 2>
  %p2 = init i64[4] dense<0, 1, 2, -1>
  %p3 = init i64[6] dense<0, 0, 1, 0, 0, 2>
  %val = init f32[] dense<-7.5>
  %axes = init i64[2] dense<0, 1>
  %six = init i64[1] dense<6>
  %r = Pad(%x, %p1) {mode="reflect"}
  %e = Pad(%x, %p2) {mode="edge"}
  %k = Pad(%v, %p3, %val)
  %s = If(%c) {
    then_branch=graph t() -> (%q) {
      %q = Squeeze(%v, %axes)
    },
    else_branch=graph e() -> (%q2) {
      %q2 = Reshape(%v, %six)
    }
  }
}
)";
  ScratchDir dir("exe_pad");
  auto exe = load(dir, text);
  Tensor x(DType::f32, {2, 5}), v(DType::f32, {1, 1, 6});
  for (int64_t i = 0; i < 10; ++i) x.data<float>()[i] = static_cast<float>(i) - 3.5f;
  for (int64_t i = 0; i < 6; ++i) v.data<float>()[i] = static_cast<float>(i * i);
  for (bool c : {true, false}) expect_same_as_interpreter(*exe, text, {{"c", Tensor::scalar<bool>(c)}, {"x", x}, {"v", v}});
  auto out = exe->run({{"c", Tensor::scalar<bool>(true)}, {"x", x}, {"v", v}});
  EXPECT_EQ(out.at("r").dims(), (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(out.at("r").data<float>()[0], 4.5f);  // reflect: row 1 (x[1,3] = 4.5) at column 0
  EXPECT_EQ(out.at("e").dims(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(out.at("k").data<float>()[0], -7.5f);
  for (bool c : {true, false}) {
    std::vector<Tensor> in = {Tensor::scalar<bool>(c), x, v}, outs;
    for (const StepTiming& st : exe->profile_run(in, outs))
      EXPECT_TRUE(st.fast) << st.node << " (" << st.op << ") ran the reference kernel";
    EXPECT_EQ(steady_allocations(*exe, in, outs), 0) << "cond " << c;
  }
}

}  // namespace
}  // namespace kiln

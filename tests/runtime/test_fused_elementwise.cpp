// kiln.FusedElementwise through a generated library (codegen/fused_abi.h): a kernel built here
// with the system compiler, loaded from bytes like the artifact's kernels.so, called over ranges
// of the output from two threads, with broadcast strides computed by the runtime.
#include <cstdlib>
#include <fstream>

#include "kiln/runtime/executable.h"
#include "kiln/runtime/kernel_library.h"
#include "kiln/runtime/step.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::ScratchDir;

// What codegen would emit for o1 = Relu(p * r + q), o2 = p - q: one loop over output elements,
// reading every input at its broadcast offset.
const char* kKernelSource = R"(
#include "kiln/codegen/fused_abi.h"
extern "C" void k_mul_add_relu(const kiln_fused_args* a, int64_t begin, int64_t end) {
  const float* p = static_cast<const float*>(a->inputs[0]);
  const float* q = static_cast<const float*>(a->inputs[1]);
  const float* r = static_cast<const float*>(a->inputs[2]);
  float* o1 = static_cast<float*>(a->outputs[0]);
  float* o2 = static_cast<float*>(a->outputs[1]);
  for (int64_t i = begin; i < end; ++i) {
    int64_t rem = i, ip = 0, iq = 0, ir = 0;
    for (int d = a->rank - 1; d >= 0; --d) {
      int64_t x = rem % a->out_dims[d];
      rem /= a->out_dims[d];
      ip += x * a->in_strides[0][d];
      iq += x * a->in_strides[1][d];
      ir += x * a->in_strides[2][d];
    }
    float s = p[ip] * r[ir] + q[iq];
    o1[i] = s > 0.0f ? s : 0.0f;
    o2[i] = p[ip] - q[iq];
  }
}
)";

// Builds the library with the system compiler; empty when no compiler is available.
std::string build_library(const ScratchDir& dir) {
  std::ofstream(dir.file("k.cpp")) << kKernelSource;
  std::string cmd = "c++ -O2 -shared -fPIC -I" KILN_SOURCE_DIR "/include -o " + dir.file("k.so") + " " +
                    dir.file("k.cpp") + " 2>" + dir.file("cc.log");
  if (std::system(cmd.c_str()) != 0) return {};
  std::ifstream in(dir.file("k.so"), std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

constexpr int64_t kRows = 4, kCols = 70000;  // 280k elements: enough work for two threads

Tensor filled(std::vector<int64_t> dims, float scale) {
  Tensor t(DType::f32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * static_cast<float>((i * 37) % 101 - 50) / 50.0f;
  return t;
}

TEST(FusedElementwise, CallsTheGeneratedKernelWithBroadcastStrides) {
  ScratchDir dir("fused_elementwise");
  std::string bytes = build_library(dir);
  if (bytes.empty()) GTEST_SKIP() << "no C++ compiler to build a kernel library";
  auto lib = runtime::KernelLibrary::load(bytes, "test kernels.so");
  EXPECT_EQ(error_of([&] { lib->symbol("nope"); }), "test kernels.so: the kernel library has no symbol 'nope'");

  Graph g;
  Value* p = g.add_input("p", DType::f32, Shape{kRows, kCols});
  Value* q = g.add_input("q", DType::f32, Shape{kCols});
  Value* r = g.add_input("r", DType::f32, Shape(std::vector<Dim>{}));
  Node* n = g.add_node("FusedElementwise", {p, q, r}, {"o1", "o2"}, {{"kernel", "k_mul_add_relu"}}, "fused", "kiln");
  for (Value* o : n->outputs) {
    o->dtype = DType::f32;
    o->shape = Shape{kRows, kCols};
  }
  const runtime::FastKernel* fk = runtime::find_fast_kernel("kiln", "FusedElementwise");
  ASSERT_NE(fk, nullptr);
  runtime::StepContext ctx;
  ctx.node = n;
  EXPECT_FALSE(fk->prepare(ctx));  // no library: the reference kernel would run it
  ctx.library = lib.get();
  ASSERT_TRUE(fk->prepare(ctx));

  Tensor tp = filled({kRows, kCols}, 1.0f), tq = filled({kCols}, 0.5f), tr = Tensor::scalar<float>(1.5f);
  Tensor o1(DType::f32, {kRows, kCols}), o2(DType::f32, {kRows, kCols});
  ctx.inputs = {&tp, &tq, &tr};
  ctx.outputs = {&o1, &o2};
  ctx.threads = 2;
  fk->run(ctx);
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    float s = tp.data<float>()[i] * 1.5f + tq.data<float>()[i % kCols];
    ASSERT_EQ(o1.data<float>()[i], s > 0 ? s : 0.0f) << i;
    ASSERT_EQ(o2.data<float>()[i], tp.data<float>()[i] - tq.data<float>()[i % kCols]) << i;
  }

  // Outputs of different shapes do not fit the calling convention: declined.
  n->outputs[1]->shape = Shape{kRows, 1};
  runtime::StepContext other;
  other.node = n;
  other.library = lib.get();
  EXPECT_FALSE(fk->prepare(other));
}

TEST(FusedElementwise, RunsFromAnArtifactLikeTheReferenceKernel) {
  if (!ops::find_op("kiln", "FusedElementwise")) GTEST_SKIP() << "kiln.FusedElementwise is not in the op table yet";
  ScratchDir dir("fused_elementwise_artifact");
  std::string bytes = build_library(dir);
  if (bytes.empty()) GTEST_SKIP() << "no C++ compiler to build a kernel library";
  const std::string text = R"(
kiln.model ir=8 opset=17 opset.kiln=1
graph main(%p: f32[N,70000], %q: f32[70000], %r: f32[]) -> (%o1, %o2) {
  %o1, %o2 = kiln::FusedElementwise(%p, %q, %r) {
    kernel="k_mul_add_relu",
    body=graph fused(%bp: f32[N,70000], %bq: f32[70000], %br: f32[]) -> (%b1, %b2) {
      %m = Mul(%bp, %br)
      %s = Add(%m, %bq)
      %b1 = Relu(%s)
      %b2 = Sub(%bp, %bq)
    }
  }
}
)";
  Model m = testing::model_from_text(text);
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m, bytes);
  auto exe = Executable::load(dir.file("m.kiln"));
  std::map<std::string, Tensor> in = {
      {"p", filled({3, kCols}, 1.0f)}, {"q", filled({kCols}, 0.5f)}, {"r", Tensor::scalar<float>(1.5f)}};
  RunOptions opt;
  opt.threads = 2;
  auto want = run_model(m, in, opt);
  auto got = exe->run(in, opt);
  for (const char* name : {"o1", "o2"}) {
    const Tensor& a = got.at(name);
    const Tensor& b = want.at(name);
    ASSERT_EQ(a.dims(), b.dims());
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << name << " " << i;
  }
}

TEST(FusedElementwise, ABrokenLibraryFailsAtLoad) {
  ScratchDir dir("fused_elementwise_broken");
  Model m = testing::model_from_text("kiln.model ir=8 opset=17\ngraph main(%p: f32[4]) -> (%o) { %o = Relu(%p) }\n");
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m, "not a shared library");
  std::string e = error_of([&] { Executable::load(dir.file("m.kiln")); });
  EXPECT_EQ(e.rfind(dir.file("m.kiln") + ": kernels.so: cannot load the kernel library: ", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(FusedElementwise, AMissingKernelFailsAtLoad) {
  if (!ops::find_op("kiln", "FusedElementwise")) GTEST_SKIP() << "kiln.FusedElementwise is not in the op table yet";
  ScratchDir dir("fused_elementwise_missing");
  Model m = testing::model_from_text(R"(
kiln.model ir=8 opset=17 opset.kiln=1
graph main(%p: f32[4]) -> (%o) {
  %o = kiln::FusedElementwise(%p) {kernel="k_gone", body=graph f(%a: f32[4]) -> (%b) { %b = Relu(%a) }}
}
)");
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m);
  EXPECT_NE(error_of([&] { Executable::load(dir.file("m.kiln")); }).find("calls generated kernel 'k_gone' but the artifact has no kernels.so"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln

// Models written by other tools (onnx.helper, torch.onnx.export) import with the right
// structure; models kiln exports pass onnx.checker and run in ONNX Runtime like the originals.
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>

#include "frontend/onnx_builder.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kPython = "/usr/bin/python3";

// Generates the models once per build tree (regenerated when the script changes). Test
// processes may run in parallel, so generation happens under a file lock.
fs::path python_models() {
  fs::path script = fs::path(KILN_SOURCE_DIR) / "tests/frontend/make_models.py";
  fs::path dir = fs::path(KILN_BINARY_DIR) / "frontend_py_models";
  fs::create_directories(dir);
  int lock = ::open((dir / ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  EXPECT_GE(lock, 0);
  ::flock(lock, LOCK_EX);
  fs::path stamp = dir / ".stamp";
  if (!fs::exists(stamp) || fs::last_write_time(stamp) < fs::last_write_time(script)) {
    std::string cmd = kPython.string() + " " + script.string() + " " + dir.string();
    int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << cmd;
    if (rc == 0) write_file(stamp, "");
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return dir;
}

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

TEST(OnnxPythonModels, IfBranchesReadOuterValues) {
  Model m = import_onnx((python_models() / "if_outer.onnx").string(), structural());
  const Graph& g = *m.graph;
  ASSERT_EQ(g.nodes().size(), 2u);
  const Node& iff = *g.nodes()[1];
  const Graph& then_g = *iff.find_attr("then_branch")->g();
  const Graph& else_g = *iff.find_attr("else_branch")->g();
  EXPECT_EQ(then_g.parent, &g);
  EXPECT_EQ(then_g.nodes()[0]->inputs[0], g.nodes()[0]->outputs[0]);  // r
  EXPECT_EQ(then_g.nodes()[0]->inputs[1], g.find("w"));
  EXPECT_EQ(g.find("w")->initializer->as_double(1), 20.0);
  EXPECT_EQ(else_g.nodes()[0]->inputs[0], g.inputs[1]);  // x
  EXPECT_EQ(else_g.outputs[0]->name, "e");
  EXPECT_EQ(else_g.outputs[0]->dtype, DType::f32);
}

TEST(OnnxPythonModels, LoopBodyReadsOuterValue) {
  Model m = import_onnx((python_models() / "loop_outer.onnx").string(), structural());
  const Node& loop = *m.graph->nodes()[0];
  ASSERT_EQ(loop.inputs.size(), 3u);
  EXPECT_EQ(loop.inputs[1], nullptr);  // omitted condition
  const Graph& body = *loop.find_attr("body")->g();
  ASSERT_EQ(body.inputs.size(), 3u);
  EXPECT_EQ(body.inputs[0]->dtype, DType::i64);
  const Node& acc = *body.nodes()[1];
  EXPECT_EQ(acc.inputs[0], body.inputs[2]);
  EXPECT_EQ(acc.inputs[1], m.graph->inputs[1]);  // outer x
  EXPECT_EQ(acc.inputs[1]->owner, m.graph.get());
}

TEST(OnnxPythonModels, DottedDimParamsAndGeneratedNodeNames) {
  Model m = import_onnx((python_models() / "dotted.onnx").string(), structural());
  EXPECT_EQ(m.opset(), 11);
  EXPECT_EQ(m.graph->inputs[0]->shape.str(), "[p2o.DynamicDimension.0,3,?]");
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[p2o.DynamicDimension.0,3,?]");
  EXPECT_EQ(m.graph->nodes()[0]->name, "Relu");
}

TEST(OnnxPythonModels, HelperTypedFields) {
  Model m = import_onnx((python_models() / "typed.onnx").string(), structural());
  auto t = [&](const char* n) { return *m.graph->find(n)->initializer; };
  EXPECT_EQ(t("f16").dtype(), DType::f16);
  EXPECT_EQ(t("f16").as_double(1), -2.5);
  EXPECT_EQ(t("f16").as_double(2), 65504.0);
  EXPECT_EQ(t("u8").as_int64(1), 255);
  EXPECT_EQ(t("i8").as_int64(0), -128);
  EXPECT_EQ(t("b").as_int64(0), 1);
  EXPECT_EQ(t("b").as_int64(1), 0);
  EXPECT_EQ(t("i64").dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t("i64").as_int64(3), -4);
  EXPECT_EQ(t("f64").as_double(0), 0.125);
  EXPECT_EQ(t("u64").data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(t("raw_f32").as_double(0), 3.25);
}

TEST(OnnxPythonModels, ExternalDataWrittenByOnnx) {
  Model m = import_onnx((python_models() / "external.onnx").string(), structural());
  const Tensor& w = *m.graph->find("w")->initializer;
  EXPECT_EQ(w.dims(), (std::vector<int64_t>{10, 100}));
  EXPECT_EQ(w.as_double(999), 499.5);
  const Tensor& b = *m.graph->find("b")->initializer;
  EXPECT_EQ(b.as_int64(0), -50);
  EXPECT_EQ(b.as_int64(99), 49);
}

TEST(OnnxPythonModels, TorchExport) {
  Model m = import_onnx((python_models() / "torch_small.onnx").string(), structural());
  EXPECT_EQ(m.opset(), 13);
  EXPECT_EQ(m.producer_name, "pytorch");
  ASSERT_EQ(m.graph->inputs.size(), 1u);  // weights are initializers, not inputs
  EXPECT_EQ(m.graph->inputs[0]->shape.str(), "[batch,3,8,8]");
  EXPECT_EQ(m.graph->outputs[0]->shape.str(), "[batch,5]");
  std::vector<std::string> ops;
  for (const auto& n : m.graph->nodes()) ops.push_back(n->op);
  EXPECT_EQ(ops.front(), "Conv");  // BatchNorm is folded into the conv by the exporter
  EXPECT_EQ(ops.back(), "Gemm");
  const Value* conv_w = m.graph->nodes()[0]->inputs[1];
  ASSERT_TRUE(conv_w->is_constant());
  EXPECT_EQ(conv_w->initializer->dims(), (std::vector<int64_t>{4, 3, 3, 3}));
}

TEST(OnnxPythonModels, ImportExportImportKeepsEveryModel) {
  fs::path dir = python_models();
  for (const char* f : {"if_outer.onnx", "loop_outer.onnx", "dotted.onnx", "typed.onnx", "external.onnx",
                        "torch_small.onnx"}) {
    SCOPED_TRACE(f);
    Model a = import_onnx((dir / f).string(), structural());
    Model b = import_onnx_bytes(export_onnx_bytes(a), structural());
    EXPECT_EQ(b.opsets, a.opsets);
    expect_same_graph(*a.graph, *b.graph);
  }
}

// Re-exports the torch model through kiln: the ONNX checker (with shape inference)
// accepts it and ONNX Runtime computes the same logits from both files.
TEST(OnnxPythonModels, KilnExportPassesCheckerAndRunsInOnnxRuntime) {
  fs::path src = python_models() / "torch_small.onnx";
  fs::path dir = test_dir();
  Model m = import_onnx(src.string(), structural());
  export_onnx(m, (dir / "inline.onnx").string());
  export_onnx(m, (dir / "split.onnx").string(), 64);
  for (const char* f : {"inline.onnx", "split.onnx"}) {
    std::string check = kPython.string() + " -c \"import onnx,sys; onnx.checker.check_model(sys.argv[1], full_check=True)\" " +
                        (dir / f).string();
    EXPECT_EQ(run(check), 0) << check;
  }
  fs::path ort = fs::path(KILN_SOURCE_DIR) / "node_modules/onnxruntime-node";
  std::error_code ec;  // a broken node_modules link reads as absent
  if (!fs::exists(ort / "package.json", ec)) GTEST_SKIP() << "onnxruntime-node is not installed (run scripts/bootstrap.sh)";
  std::string js = R"JS(
const ort = require(process.argv[2]);
(async () => {
  const x = new Float32Array(2 * 3 * 8 * 8).map((_, i) => Math.sin(i * 0.37));
  const outs = [];
  for (const f of process.argv.slice(3)) {
    const s = await ort.InferenceSession.create(f);
    const r = await s.run({input: new ort.Tensor('float32', x, [2, 3, 8, 8])});
    outs.push(Array.from(r.logits.data));
  }
  for (let k = 1; k < outs.length; ++k)
    for (let i = 0; i < outs[0].length; ++i)
      if (outs[k][i] !== outs[0][i]) { console.error('differs at', k, i); process.exit(1); }
  if (outs[0].length !== 10) process.exit(2);
})().catch(e => { console.error(e); process.exit(3); });
)JS";
  write_file(dir / "cmp.js", js);
  std::string cmd = "node " + (dir / "cmp.js").string() + " " + ort.string() + " " + src.string() + " " +
                    (dir / "inline.onnx").string() + " " + (dir / "split.onnx").string();
  EXPECT_EQ(run(cmd), 0) << cmd;
}

}  // namespace
}  // namespace kiln::testing

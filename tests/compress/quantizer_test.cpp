// The quantizer: observers and range choice, weight quantization, the plan, and the whole
// static path on the digits CNN (accuracy on the held-out split, a QDQ model that is pure ONNX and
// runs in ONNX Runtime with kiln's answers, fast INT8 kernels equal to the reference ones), plus
// dynamic quantization of a MatMul model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "kiln/compiler/compile.h"
#include "kiln/compress/driver.h"
#include "kiln/compress/report.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/kernels/int8.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;

fs::path work_dir(const std::string& name) {
  fs::path d = fs::path(KILN_BINARY_DIR) / "compress_test" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Observer, HistogramWidensWithoutLosingCountsAndGivesQuantiles) {
  Observer o;
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) a[i] = (i - 500) * 0.001f, b[i] = i * 0.01f;  // [-0.5, 0.5), then [0, 10)
  o.observe(a.data(), 1000);
  const double r0 = o.range();
  o.observe(b.data(), 1000);
  EXPECT_GT(o.range(), r0);
  EXPECT_GE(o.range(), 9.99);
  int64_t total = 0;
  for (int64_t c : o.bins()) total += c;
  EXPECT_EQ(total, 2000);
  EXPECT_FLOAT_EQ(o.min(), -0.5f);
  EXPECT_FLOAT_EQ(o.max(), 9.99f);
  // Half the values are below 0.5 (all of a, none of b above 0.5 but 50 of them).
  EXPECT_NEAR(o.quantile(0.525), 0.5, 0.02);
}

TEST(Observer, RangeMethods) {
  // 100000 standard normal values plus one outlier at 60.
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(100000);
  for (auto& x : v) x = nd(rng);
  v[123] = 60.f;
  Observer o;
  o.observe(v.data(), static_cast<int64_t>(v.size()));
  auto [lo, hi] = choose_range(o, parse_calibration("minmax"));
  EXPECT_FLOAT_EQ(hi, 60.f);
  auto [plo, phi] = choose_range(o, parse_calibration("percentile:99.9"));
  EXPECT_NEAR(phi, 3.29, 0.15);  // the 99.95th percentile of N(0, 1)
  EXPECT_NEAR(plo, -3.29, 0.15);
  auto [elo, ehi] = choose_range(o, parse_calibration("entropy"));
  EXPECT_LT(ehi, 10.f) << "entropy must clip the lone outlier";
  EXPECT_GT(ehi, 2.f);
  EXPECT_LT(elo, 0.f);
  EXPECT_EQ(calibration_name(parse_calibration("percentile:99.5")), "percentile:99.5");
  EXPECT_THROW(parse_calibration("median"), Error);
  EXPECT_THROW(parse_calibration("percentile:20"), Error);
}

TEST(Observer, ChannelMeansAlongTheTrackedAxis) {
  Observer o;
  o.track_channels(1);
  Tensor t = Tensor::from_vector<float>({2, 2, 2}, {1, 3, 10, 20, 5, 7, 30, 40});
  o.observe(t);
  auto m = o.channel_means();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_DOUBLE_EQ(m[0], 4.0);   // 1, 3, 5, 7
  EXPECT_DOUBLE_EQ(m[1], 25.0);  // 10, 20, 30, 40
}

TEST(QParams, ZeroIsExactAndTheRangeIsCovered) {
  QParams u = qparams_for_range(-1.f, 3.f, DType::u8);
  EXPECT_FLOAT_EQ(u.scale, 4.f / 255);
  EXPECT_EQ(u.zero_point, 64);  // round(1 / (4/255)) = round(63.75)
  QParams s = qparams_for_range(-1.f, 3.f, DType::i8);
  EXPECT_EQ(s.zero_point, -64);
  QParams r = qparams_for_range(0.5f, 2.f, DType::u8);  // the range is widened to include 0
  EXPECT_EQ(r.zero_point, 0);
  EXPECT_FLOAT_EQ(r.scale, 2.f / 255);
  EXPECT_FLOAT_EQ(qparams_for_range(0.f, 0.f, DType::u8).scale, 1.f);
}

TEST(QuantizeWeight, SymmetricPerChannelAndPerTensor) {
  Tensor w = Tensor::from_vector<float>({2, 3}, {1.27f, -0.5f, 0.f, 0.f, 0.f, 0.f});
  QuantizedWeight pc = quantize_weight(w, 0, true);
  ASSERT_EQ(pc.scale.numel(), 2);
  EXPECT_FLOAT_EQ(pc.scale.data<float>()[0], 0.01f);
  EXPECT_FLOAT_EQ(pc.scale.data<float>()[1], 1.f);  // an all-zero channel
  EXPECT_EQ(pc.q.data<int8_t>()[0], 127);
  EXPECT_EQ(pc.q.data<int8_t>()[1], -50);
  QuantizedWeight pt = quantize_weight(w, 0, false);
  EXPECT_EQ(pt.scale.rank(), 0u);
  Tensor m = Tensor::from_vector<float>({2, 2}, {1.f, -4.f, 0.5f, 2.f});  // [K, N], channels on axis 1
  QuantizedWeight mc = quantize_weight(m, 1, true);
  EXPECT_FLOAT_EQ(mc.scale.data<float>()[0], 1.f / 127);
  EXPECT_FLOAT_EQ(mc.scale.data<float>()[1], 4.f / 127);
  EXPECT_EQ(mc.q.data<int8_t>()[1], -127);
  EXPECT_EQ(mc.q.data<int8_t>()[2], 64);  // 0.5 * 127 = 63.5 rounds to even
  // Reduced range (7 bits): scale max / 63, |q| <= 63.
  QuantizedWeight rr = quantize_weight(m, 1, true, 63);
  EXPECT_FLOAT_EQ(rr.scale.data<float>()[1], 4.f / 63);
  EXPECT_EQ(rr.q.data<int8_t>()[1], -63);
  EXPECT_EQ(rr.q.data<int8_t>()[0], 63);  // channel 0: 1 is its max
  EXPECT_THROW(quantize_weight(m, 1, true, 128), Error);
}

TEST(QuantPlan, PicksComputeNodesTheirTensorsAndSharedPooling) {
  Model m = parse_model(R"(kiln.model opset=13
graph g(%x: f32[1,2,6,6]) -> (%y) {
  %w = init f32[4,2,3,3] dense<0.1>
  %w2 = init f32[4,4,1,1] dense<0.2>
  %c = Conv(%x, %w) {pads=[1,1,1,1]}
  %r = Relu(%c)
  %p = MaxPool(%r) {kernel_shape=[2,2], strides=[2,2]}
  %c2 = Conv(%p, %w2)
  %y = Relu(%c2)
})");
  ops::infer_shapes(m);
  QuantizeOptions opt;
  QuantPlan plan = plan_static(m, opt);
  EXPECT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.tensors, (std::vector<std::string>{"x", "r", "p"}));  // y is a graph output: stays float
  EXPECT_EQ(plan.shared.at("p"), "r");
  opt.exclude = {"no_such_node"};
  EXPECT_THROW(plan_static(m, opt), Error);
}

// ---- the digits CNN ---------------------------------------------------------------------
struct Digits {
  fs::path dir;
  QuantizeJob job;
};

Digits digits_split(const std::string& name) {
  Digits d;
  d.dir = work_dir(name);
  Tensor images = read_npy(std::string(KILN_SOURCE_DIR) + "/models/digits_test_images.npy");
  Tensor labels = read_npy(std::string(KILN_SOURCE_DIR) + "/models/digits_test_labels.npy");
  const int64_t calib = 120, n = images.dim(0), per = 64;
  fs::create_directories(d.dir / "calib");
  fs::create_directories(d.dir / "eval");
  for (int64_t b = 0; b < calib; b += 20) {
    Tensor t(DType::f32, {20, 1, 8, 8});
    std::copy(images.data<float>() + b * per, images.data<float>() + (b + 20) * per, t.data<float>());
    write_npy((d.dir / "calib" / ("b" + std::to_string(b / 20) + ".npy")).string(), t);
  }
  Tensor e(DType::f32, {n - calib, 1, 8, 8}), l(DType::i64, {n - calib});
  std::copy(images.data<float>() + calib * per, images.data<float>() + n * per, e.data<float>());
  for (int64_t i = calib; i < n; ++i) l.data<int64_t>()[i - calib] = labels.as_int64(i);
  write_npy((d.dir / "eval" / "input.npy").string(), e);
  write_npy((d.dir / "eval" / "labels.npy").string(), l);
  d.job.model_path = std::string(KILN_SOURCE_DIR) + "/models/digits_cnn.onnx";
  d.job.calib_dir = (d.dir / "calib").string();
  d.job.cache_dir = (d.dir / "cache").string();
  return d;
}

TEST(QuantizeDigits, Int8AccuracyWithinHalfAPointAndTheReportSaysSo) {
  Digits d = digits_split("digits_kiln");
  d.job.out_path = (d.dir / "int8.kiln").string();
  QuantizeResult r = quantize_file(d.job);
  EXPECT_EQ(r.plan.nodes.size(), 4u);  // 2 Conv + 2 Gemm
  ReportJob rj;
  rj.job = &d.job;
  rj.result = &r;
  rj.eval_dir = (d.dir / "eval").string();
  rj.runs = 3;
  Report rep = make_report(rj);
  ASSERT_TRUE(rep.accuracy_fp32 && rep.accuracy_int8);
  EXPECT_EQ(rep.eval_samples, 240);
  EXPECT_GT(*rep.accuracy_fp32, 98.0);
  EXPECT_LE(std::abs(*rep.accuracy_int8 - *rep.accuracy_fp32), 0.5);
  ASSERT_EQ(rep.outputs.size(), 1u);
  EXPECT_GT(rep.outputs[0].error.cosine, 0.999);
  // Per image, no better than over all of them, and still close.
  EXPECT_LE(rep.outputs[0].worst_sample_cosine, rep.outputs[0].error.cosine + 1e-12);
  EXPECT_GT(rep.outputs[0].worst_sample_cosine, 0.99);
  ASSERT_EQ(rep.layers.size(), 4u);
  for (const auto& l : rep.layers) EXPECT_GT(l.error.sqnr_db, 25) << l.node;
  EXPECT_LT(rep.bytes_int8, rep.bytes_fp32);
  std::string text = format_report(rep), json = report_json(rep);
  EXPECT_NE(text.find("accuracy: fp32"), std::string::npos);
  EXPECT_NE(json.find("\"layers\": ["), std::string::npos);
  // The digits CNN runs int8 from its input's quantization to the logits' dequantization.
  EXPECT_EQ(rep.islands.conversions, 0) << rep.islands.str();
  EXPECT_NE(json.find("\"float_islands\": {\"conversions\": 0"), std::string::npos);
}

// One bad row among good ones: the flat cosine barely moves, the worst row shows it.
TEST(QuantizeReport, WorstSampleCosineFindsTheOneBadRow) {
  std::vector<float> r(40), q(40);
  for (int i = 0; i < 40; ++i) r[i] = q[i] = float((i * 7) % 11) - 5.0f;
  for (int i = 10; i < 20; ++i) q[i] = -r[i];  // row 1 of 4 is flipped: cosine -1
  EXPECT_DOUBLE_EQ(worst_row_cosine(r.data(), q.data(), 40, 10), -1.0);
  EXPECT_DOUBLE_EQ(worst_row_cosine(r.data(), r.data(), 40, 10), 1.0);
  AgreementSum all;
  all.add(r.data(), q.data(), 40);
  EXPECT_GT(all.result().cosine, 0.4);
}

// Where a compiled int8 graph leaves int8: conversions to float read inside the graph, counted
// with their readers; a dequantization read only as a graph output and weights do not count.
TEST(QuantizeReport, FloatIslandsCountConversionsReadInsideTheModel) {
  Model m = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: u8[1,2,4,4]) -> (%y, %z) {
  %s = init f32[] dense<0.1>
  %zp = init u8[] dense<3>
  %w = init i8[2] dense<1, -1>
  %t = init f32[256] dense<0.5>
  %d = DequantizeLinear(%x, %s, %zp)
  %p = GlobalAveragePool(%d)
  %f = kiln::QLookup(%x, %t)
  %m = Mul(%f, %p)
  %r = Relu(%d)
  %dw = DequantizeLinear(%w, %s)
  %y = Add(%m, %r)
  %z = DequantizeLinear(%x, %s, %zp)
})");
  ops::infer_shapes(m);  // an artifact's graph carries its dtypes
  FloatIslands fi = float_islands(m);
  EXPECT_EQ(fi.conversions, 2);
  EXPECT_EQ(fi.str(), "GlobalAveragePool x1, Mul x1, Relu x1");
}

// The compiled artifact's fast INT8 kernels give exactly what the reference kernels give on the
// same optimized graph (the epilogue arithmetic is shared and the accumulation exact).
TEST(QuantizeDigits, FastKernelsEqualTheReferenceKernelsBitForBit) {
  Digits d = digits_split("digits_exact");
  d.job.out_path = (d.dir / "int8.kiln").string();
  quantize_file(d.job);
  auto exe = Executable::load(d.job.out_path);
  int qops = 0;
  for (const auto& n : exe->model().graph->nodes()) qops += n->op == "QConv" || n->op == "QMatMul";
  EXPECT_EQ(qops, 4);
  Tensor x = read_npy((d.dir / "eval" / "input.npy").string());
  auto fast = exe->run({{"input", x}});
  auto ref = run_model(exe->model(), {{"input", x}});
  const Tensor& a = fast.at("logits");
  const Tensor& b = ref.at("logits");
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
}

// --format qdq: standard ONNX ops only; kiln's interpreter runs it; its compiled form agrees;
// and, where node + onnxruntime-node are installed, ONNX Runtime agrees with kiln's int8 output.
TEST(QuantizeDigits, QdqModelIsPlainOnnxAndOnnxRuntimeAgrees) {
  Digits d = digits_split("digits_qdq");
  d.job.format = OutputFormat::Qdq;
  // Without VNNI, ORT's u8 x s8 kernels saturate on full-range weights (QuantizeOptions::
  // reduce_range): 7-bit weights there, as ORT's own quantizer would choose.
  d.job.options.reduce_range = kernels::int8::qkernels().isa == kernels::int8::QIsa::Avx2;
  d.job.out_path = (d.dir / "int8_qdq.onnx").string();
  quantize_file(d.job);
  Model q = import_onnx(d.job.out_path);
  int qdq = 0;
  for (const auto& n : q.graph->nodes()) {
    EXPECT_TRUE(n->domain.empty()) << n->describe();
    qdq += n->op == "QuantizeLinear" || n->op == "DequantizeLinear";
  }
  EXPECT_GT(qdq, 8);
  Tensor x = read_npy((d.dir / "eval" / "input.npy").string());
  Tensor interp = run_model(q, {{"input", x}}).at("logits");
  compiler::CompileOptions copt;
  copt.cache_dir = d.job.cache_dir;
  compiler::compile_file(d.job.out_path, (d.dir / "int8.kiln").string(), copt);
  Tensor kiln8 = Executable::load((d.dir / "int8.kiln").string())->run({{"input", x}}).at("logits");
  AgreementSum s;
  s.add(interp.data<float>(), kiln8.data<float>(), interp.numel());
  EXPECT_GT(s.result().cosine, 0.99999) << "folded int8 vs the QDQ graph interpreted";

  const fs::path ort_script = fs::path(KILN_SOURCE_DIR) / "scripts" / "ort_run.js";
  if (std::system("node -e \"require('onnxruntime-node')\" > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node / onnxruntime-node not available: ONNX Runtime agreement not checked";
  }
  const fs::path out = d.dir / "ort";
  std::string cmd = "cd " + std::string(KILN_SOURCE_DIR) + " && node " + ort_script.string() + " " + d.job.out_path +
                    " --input input=" + (d.dir / "eval" / "input.npy").string() + " --out " + out.string() +
                    " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Tensor ort = read_npy((out / "logits.npy").string());
  AgreementSum o;
  o.add(ort.data<float>(), kiln8.data<float>(), ort.numel());
  EXPECT_GT(o.result().cosine, 0.9999) << "ONNX Runtime on kiln's QDQ model vs kiln's int8 artifact";
  int agree = 0;
  for (int64_t i = 0; i < ort.dim(0); ++i) {
    const float* a = ort.data<float>() + i * 10;
    const float* b = kiln8.data<float>() + i * 10;
    agree += std::max_element(a, a + 10) - a == std::max_element(b, b + 10) - b;
  }
  EXPECT_GE(agree, ort.dim(0) - 1);
}

// Dynamic quantization of a two-layer MLP: every FusedMatMul becomes a dynamic QMatMul, the fast
// kernels equal the reference ones, and the result stays close to float.
TEST(QuantizeDynamic, MatMulsBecomeDynamicQMatMulsCloseToFloat) {
  fs::path dir = work_dir("dynamic");
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.f, 0.1f);
  auto weights = [&](int64_t k, int64_t n) {
    std::string s = "dense<";
    for (int64_t i = 0; i < k * n; ++i) s += (i ? ", " : "") + std::to_string(nd(rng));
    return s + ">";
  };
  std::string text = "kiln.model opset=13\ngraph g(%x: f32[8,32]) -> (%y) {\n  %w1 = init f32[32,48] " + weights(32, 48) +
                     "\n  %b1 = init f32[48] " + weights(1, 48) + "\n  %w2 = init f32[48,16] " + weights(48, 16) +
                     "\n  %m = MatMul(%x, %w1)\n  %a = Add(%m, %b1)\n  %h = Gelu(%a)\n  %y = MatMul(%h, %w2)\n}\n";
  const std::string model = (dir / "mlp.kir").string();
  {
    std::FILE* f = std::fopen(model.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  QuantizeJob job;
  job.model_path = model;
  job.out_path = (dir / "mlp_int8.kiln").string();
  job.dynamic = true;
  job.cache_dir = (dir / "cache").string();
  QuantizeResult r = quantize_file(job);
  EXPECT_EQ(r.lines.size(), 2u);
  auto exe = Executable::load(job.out_path);
  int q = 0;
  for (const auto& n : exe->model().graph->nodes()) q += n->op == "QMatMul";
  EXPECT_EQ(q, 2);
  Tensor x(DType::f32, {8, 32});
  std::normal_distribution<float> xd(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = xd(rng);
  Tensor fast = exe->run({{"x", x}}).at("y");
  Tensor ref = run_model(exe->model(), {{"x", x}}).at("y");
  Tensor fp32 = run_model(parse_model(text), {{"x", x}}).at("y");
  AgreementSum same, close;
  same.add(ref.data<float>(), fast.data<float>(), ref.numel());
  close.add(fp32.data<float>(), fast.data<float>(), fp32.numel());
  // Gelu runs in the float kernels' vectorised form after the int8 epilogue: not bit-exact.
  EXPECT_GT(same.result().sqnr_db, 60);
  EXPECT_GT(close.result().cosine, 0.999);
}

}  // namespace
}  // namespace kiln::compress

namespace kiln::compress {
namespace {

// The dynamic quantization the QMatMul kernels use is ONNX DynamicQuantizeLinear exactly,
// ties (x / scale = k + 0.5) and saturation included.
TEST(QuantizeDynamic, EqualsDynamicQuantizeLinear) {
  Model m = parse_model(R"(kiln.model opset=13
graph g(%x: f32[4099]) -> (%y, %s, %z) {
  %y, %s, %z = DynamicQuantizeLinear(%x)
})");
  ops::infer_shapes(m);
  Tensor x(DType::f32, {4099});
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(rng);
  x.data<float>()[0] = -7.65f, x.data<float>()[1] = 12.75f;  // range endpoints
  auto ref = run_model(m, {{"x", x}});
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) lo = std::min(lo, x.data<float>()[i]), hi = std::max(hi, x.data<float>()[i]);
  ::kiln::kernels::int8::DynamicQParams p = ::kiln::kernels::int8::dynamic_qparams(lo, hi);
  EXPECT_EQ(p.scale, ref["s"].data<float>()[0]);
  EXPECT_EQ(p.zero_point, ref["z"].data<uint8_t>()[0]);
  // Exact halves: (zp + k + 0.5) * scale must round to even like the reference.
  for (int k = 0; k < 40; ++k) x.data<float>()[100 + k] = (static_cast<float>(k - 20) + 0.5f) * p.scale;
  ref = run_model(m, {{"x", x}});
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(::kiln::kernels::int8::quantize_dynamic(x.data<float>()[i], p), ref["y"].data<uint8_t>()[i]) << i;
}

}  // namespace
}  // namespace kiln::compress

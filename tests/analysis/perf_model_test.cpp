// The perf model against hand calculations: one op's roofline time, a GEMM on the shipped
// H100 entry, the ridge-point batch choice and the arena on a small model, the shipped
// chip files, chip-file errors, and FLOPs equal to the op table's on a real model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kiln/analysis/chip.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/error.h"
#include "kiln/ops/op.h"

namespace kiln::analysis {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> source_chip_dirs() { return {std::string(KILN_SOURCE_DIR) + "/data/chips"}; }

Chip shipped(const std::string& name) { return resolve_chip(name, source_chip_dirs()); }

// y[M, N] = x[M, K] x W[K, N] with x's first dim symbolic ("M") and W an initializer.
Model matmul_model(int64_t k, int64_t n, bool relu = false) {
  Model m;
  m.opsets[""] = 17;
  Graph& g = *m.graph;
  g.name = "matmul";
  Value* x = g.add_input("x", DType::f32, Shape({Dim::sym("M"), Dim(k)}));
  Value* w = g.add_initializer("w", Tensor(DType::f32, {k, n}));
  Value* y = g.add_node("MatMul", {x, w}, {"y"}, {}, "mm")->outputs[0];
  if (relu) y = g.add_node("Relu", {y}, {"z"}, {}, "relu")->outputs[0];
  g.outputs = {y};
  ops::infer_shapes(m);
  return m;
}

TEST(PerfModel, OpTimeIsTheRooflineMaxPlusLaunch) {
  Chip c;
  c.id = "toy";
  c.memory_gbs = 100;          // 1e11 B/s
  c.launch_overhead_us = 5;
  OpTime t = op_time(2e9, 1e8, 1e12, c);  // 2 ms of compute, 1 ms of memory
  EXPECT_DOUBLE_EQ(t.compute_s, 2e-3);
  EXPECT_DOUBLE_EQ(t.memory_s, 1e-3);
  EXPECT_DOUBLE_EQ(t.total_s(), 2e-3 + 5e-6);
  EXPECT_EQ(t.bound(), Bound::compute);
  EXPECT_EQ(op_time(1e3, 1e3, 1e12, c).bound(), Bound::overhead);
  EXPECT_EQ(op_time(1e6, 1e8, 1e12, c).bound(), Bound::memory);
}

// A 4096^3 bf16 GEMM on an H100: 2 * 4096^3 = 137.4 GFLOP at 989.4 TFLOP/s = 0.1389 ms;
// its three 4096^2 bf16 matrices (96 MiB) take 0.030 ms at 3.35 TB/s: compute-bound.
TEST(PerfModel, Gemm4096Bf16OnH100IsComputeBound) {
  Chip h100 = shipped("h100");
  Model m = matmul_model(4096, 4096);
  PerfOptions opt;
  opt.precision = Precision::bf16;
  PerfReport r = predict(m, {4096}, h100, opt);
  ASSERT_EQ(r.rows.size(), 1u);
  const PerfRow& row = r.rows[0];
  double flops = 2.0 * 4096 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(row.flops, flops);
  EXPECT_DOUBLE_EQ(row.bytes, 3.0 * 4096 * 4096 * 2);
  EXPECT_EQ(row.bound, Bound::compute);
  EXPECT_EQ(row.kernels, 1);
  EXPECT_NEAR(row.latency_ms, (flops / 989.4e12 + 3.4e-6) * 1e3, 1e-12);
  EXPECT_NEAR(row.latency_ms, 0.1423, 0.0005);
  EXPECT_EQ(r.optimal_batch, 4096);
  // The same GEMM in fp32 runs at the 67 TFLOP/s FP32 rate: 2.05 ms.
  opt.precision = Precision::fp32;
  EXPECT_NEAR(predict(m, {4096}, h100, opt).rows[0].latency_ms, (flops / 67e12 + 3.4e-6) * 1e3, 1e-12);
}

// Toy chip: 100 TFLOP/s, 1000 GB/s, no launch cost. x[N,1024] x W[1024,1024] then Relu.
// MatMul: 2N*2^20 flops vs 4*(2*1024N + 2^20) bytes: compute-bound from N >= 328.2.
// Relu: always memory-bound (8 KiB per row). Row bound = the larger of the two sums:
// N=256: MatMul memory 6.29 us + Relu 2.10 us -> memory; N=512: MatMul compute 10.7 us vs
// Relu 4.19 us -> compute. Arena = x and y live together, then y and z: 8 KiB per row.
const char* kToyChip = R"({
  "name": "toy", "source": "test", "peak_tflops": {"fp32": 100, "bf16": 200},
  "memory_gbs": 1000, "memory_gib": MEM, "launch_overhead_us": 0
})";

Chip toy_chip(double mem_gib) {
  std::string text = kToyChip;
  text.replace(text.find("MEM"), 3, std::to_string(mem_gib));
  return parse_chip_json(text, "toy.json");
}

TEST(PerfModel, OptimalBatchIsTheRidgePointThatFits) {
  Model m = matmul_model(1024, 1024, true);
  PerfReport r = predict(m, {64, 128, 256, 512, 1024}, toy_chip(1), {});
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[2].bound, Bound::memory);
  EXPECT_EQ(r.rows[3].bound, Bound::compute);
  EXPECT_EQ(r.optimal_batch, 512);
  double mm_mem_256 = 4.0 * (2 * 1024 * 256 + 1024 * 1024) / 1e12, relu_256 = 8.0 * 1024 * 256 / 1e12;
  EXPECT_NEAR(r.rows[2].latency_ms, (mm_mem_256 + relu_256) * 1e3, 1e-12);
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.weight_bytes, 4 * 1024 * 1024);
    EXPECT_EQ(row.arena_bytes, 8192 * row.batch);
    EXPECT_NEAR(row.throughput_per_s, static_cast<double>(row.batch) / (row.latency_ms / 1e3), 1e-6);
  }
  // 7.5 MiB of memory: batch 512 needs 4 + 4 MiB and no longer fits; nothing compute-bound
  // fits, so the choice falls back to the largest batch that does (256: 4 + 2 MiB).
  PerfReport small = predict(m, {64, 128, 256, 512, 1024}, toy_chip(7.5 / 1024), {});
  EXPECT_FALSE(small.rows[3].fits);
  EXPECT_EQ(small.optimal_batch, 256);
  EXPECT_NE(small.optimal_reason.find("no batch given is compute-bound"), std::string::npos);
}

TEST(PerfModel, PrecisionScalesFloatBytesAndMaxLatencyPicksThroughput) {
  Model m = matmul_model(1024, 1024, true);
  PerfOptions bf16;
  bf16.precision = Precision::bf16;
  PerfReport r = predict(m, {64, 512}, toy_chip(1), bf16, 0.02);
  EXPECT_EQ(r.rows[0].weight_bytes, 2 * 1024 * 1024);
  EXPECT_EQ(r.rows[0].arena_bytes, 4096 * 64);
  EXPECT_DOUBLE_EQ(r.rows[0].flops, 2.0 * 64 * 1024 * 1024 + 64 * 1024);
  // batch 512 at bf16: MatMul 2*512*2^20/2e14 = 5.37 us compute; Relu 4*512*1024/1e12 = 2.10 us.
  EXPECT_NEAR(r.rows[1].latency_ms, (2.0 * 512 * 1048576 / 2e14 + 4.0 * 512 * 1024 / 1e12) * 1e3, 1e-12);
  EXPECT_EQ(r.best_batch_under_latency, 512);
  PerfReport tight = predict(m, {64, 512}, toy_chip(1), bf16, 0.005);
  EXPECT_EQ(tight.best_batch_under_latency, 64);
  EXPECT_THROW(predict(m, {64}, toy_chip(1), PerfOptions{Precision::int8, ""}), Error);
}

TEST(PerfModel, DynamicDimsOtherThanBatchMustBeBound) {
  Model m;
  m.opsets[""] = 17;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({Dim::sym("N"), Dim::sym("seq")}));
  g.outputs = {g.add_node("Relu", {x}, {"y"})->outputs[0]};
  ops::infer_shapes(m);
  try {
    BatchBinder b(m, "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "input x dim 1 ('seq') is dynamic: fix it with --dim seq=N (or name the batch dim with --dim NAME)");
  }
  // Naming seq as the batch dim leaves N dynamic instead.
  EXPECT_THROW(BatchBinder(m, "seq"), Error);
  EXPECT_THROW(BatchBinder(m, "nope"), Error);
}

TEST(ChipDb, ShippedChipsParseWithSources) {
  for (const char* name : {"h100", "a100", "l4", "orin"}) {
    Chip c = shipped(name);
    EXPECT_EQ(c.id, name);
    EXPECT_NE(c.source.find("NVIDIA"), std::string::npos) << name;
    EXPECT_GT(c.peak_flops(Precision::fp16), c.peak_flops(Precision::fp32)) << name;
    EXPECT_GT(c.memory_gbs, 100) << name;
    EXPECT_GT(c.launch_overhead_us, 0) << name;
  }
  Chip h100 = shipped("h100");
  EXPECT_DOUBLE_EQ(h100.peak_flops(Precision::bf16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.memory_gbs, 3350);
  EXPECT_EQ(h100.memory_bytes, int64_t{80} << 30);
  EXPECT_DOUBLE_EQ(h100.nvlink_gbs, 450);  // 900 GB/s both directions
  EXPECT_TRUE(h100.device_memory);
  EXPECT_THROW(shipped("a100").peak_flops(Precision::fp8), Error);
  try {
    shipped("tpu9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--chip tpu9: unknown chip (known: cpu, a100, h100, l4, orin; or a FILE.json)");
  }
}

std::string chip_error(const std::string& text) {
  try {
    parse_chip_json(text, "my.json");
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line
    return msg;
  }
  return "no error";
}

TEST(ChipDb, FileErrorsAreOneLine) {
  const std::string ok_tail = R"("memory_gbs": 10, "memory_gib": 1, "launch_overhead_us": 1})";
  EXPECT_EQ(chip_error("[1]"), "my.json: the file must be a JSON object, not an array");
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", )" + ok_tail), "my.json: missing \"peak_tflops\"");
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": 5, )" + ok_tail),
            "my.json: \"peak_tflops\" must be an object, not a number");
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": {"fp64": 1}, )" + ok_tail),
            "my.json: unknown key \"peak_tflops.fp64\" (known: bf16, fp16, fp32, fp8, int8, tf32)");
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": {"fp32": -1}, )" + ok_tail),
            "my.json: \"peak_tflops.fp32\" must be positive, got -1");
  EXPECT_EQ(chip_error(R"({"name": "x", "peak_tflops": {"fp32": 1}, )" + ok_tail), "my.json: missing \"source\"");
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": {"fp32": 1}, "memory_gbs": 10, "memory_gib": 1})"),
            "my.json: missing \"launch_overhead_us\"");
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": {"fp32": 1}, "bandwidth": 3, )" + ok_tail).rfind(
                "my.json: unknown key \"bandwidth\" (known: device_memory, interconnect, ", 0),
            0u);
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": {"fp32": 1} )" + ok_tail),
            "my.json: line 1, column 57: expected '}' to close an object");
  Chip c = parse_chip_json(R"({"name": "x", "source": "s", "peak_tflops": {"bf16": 8}, "vector_tflops": 2,
      "interconnect": {"pcie_gbs": 64}, )" + ok_tail, "my.json");
  EXPECT_DOUBLE_EQ(c.peak_flops(Precision::bf16), 8e12);
  EXPECT_DOUBLE_EQ(c.pcie_gbs, 32);
  EXPECT_EQ(chip_error(R"({"name": "x", "source": "s", "peak_tflops": {"bf16": 8}, )" + ok_tail),
            "my.json: missing \"vector_tflops\"");  // no fp32 peak to fall back on
}

// One source of truth: the model's FLOPs are the op table's, node by node.
TEST(PerfModel, Resnet50FlopsAreTheOpTableSum) {
  fs::path path = fs::path(KILN_BINARY_DIR) / "zoo" / "resnet50" / "model.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << "zoo not prepared (scripts/zoo/prepare.sh)";
  Model m = import_onnx(path.string());
  Chip h100 = shipped("h100");
  BatchBinder binder(m, "");
  for (int64_t batch : {1, 4}) {
    binder.bind(batch);
    double table = 0;
    for (const auto& n : m.graph->nodes()) {
      auto c = ops::node_cost(*n);
      ASSERT_TRUE(c.has_value()) << n->describe();
      table += c->flops;
    }
    PerfRow row = estimate(m, batch, h100, {});
    EXPECT_DOUBLE_EQ(row.flops, table) << "batch " << batch;
    EXPECT_EQ(row.uncosted_nodes, 0);
    EXPECT_EQ(row.kernels, 121);  // 122 nodes less the Flatten view
  }
  EXPECT_NEAR(estimate(m, 4, h100, {}).flops, 4 * 8206519248.0, 1);  // `kiln graph`'s total at N=1, x4
}

TEST(PerfModel, SvgPlotsEveryBatch) {
  Model m = matmul_model(1024, 1024, true);
  PerfReport r = predict(m, {1, 8, 64}, toy_chip(1), {});
  std::string svg = perf_to_svg(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t polylines = 0, points = 0;
  for (size_t p = 0; (p = svg.find("<polyline", p)) != std::string::npos; ++p) ++polylines;
  for (size_t p = 0; (p = svg.find("<title>batch", p)) != std::string::npos; ++p) ++points;
  EXPECT_EQ(polylines, 2u);
  EXPECT_EQ(points, 6u);  // latency and throughput for each of 3 batches
}

}  // namespace
}  // namespace kiln::analysis

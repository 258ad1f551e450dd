// perf model on a measured CPU: which measured rate times each node, and the formulas of
// perf_cpu.h checked by hand on a synthetic machine.
#include <gtest/gtest.h>

#include "analysis/perf_cpu.h"
#include "analysis/perf_tiles.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"

namespace kiln::analysis {
namespace {

MachinePeaks synthetic_machine() {
  MachinePeaks m;
  m.cpu = "test";
  m.cores = 1;
  m.fp32_gflops_per_core = m.fp32_gflops_all_cores = 100;
  m.dram_gbs_one_core = m.dram_gbs_all_cores = 10;
  m.caches = {{"L1", 32 << 10, 16 << 10, 400}, {"L2", 1 << 20, 512 << 10, 200}, {"L3", 64 << 20, 8 << 20, 100}};
  // Depthwise: 100 planes in 1 ms with 10 MFLOP, 1000 planes in 2 ms with 1 MFLOP:
  //   100 a + 1e7 b = 1e-3, 1000 a + 1e6 b = 2e-3  ->  a = 1.9192e-6 s, b = 8.0808e-11 s.
  // Plane kernels record vector operations: depthwise 100 planes, 1e7 vector ops in 1 ms and
  // 1000 planes, 1e6 vector ops in 2 ms (a, b as above with vector ops for FLOPs).
  // GEMM kernels record their calibration's tiling (rows x cols); 0 x 0 means efficiency 1.
  m.kernels = {{"conv_gemm", "", 50, 1, 1e-3, 0},
               {"conv_direct", "", 60, 1, 1e-3, 0},
               {"conv_pixel-gemm", "", 70, 1, 1e-3, 0},
               {"conv_pointwise", "", 80, 1, 1e-3, 0},
               {"conv_depthwise", "", 10, 1, 1e-3, 100},
               {"conv_depthwise_small", "", 0.5, 1, 2e-3, 1000},
               {"gemm", "", 90, 1, 1e-3, 0},
               {"pool", "", 1, 1, 1e-3, 100},
               {"pool_small", "", 1, 1, 2e-3, 1000},
               {"reference_pool", "", 0.25, 0.5, 1e-3, 0},
               {"reference_elementwise", "", 2, 16, 1e-3, 0}};
  m.kernels[4].vector_ops = m.kernels[7].vector_ops = 10000000;
  m.kernels[5].vector_ops = m.kernels[8].vector_ops = 1000000;
  // The DRAM overlap calibration: 8e7 FLOPs (1 ms at conv_pointwise's 80 GFLOP/s), 4e6 bytes
  // read and 8e6 written (4e6 + 2 x 8e6 = 2e7 bytes of DRAM traffic at the raw 10 x 32/24 =
  // 13.33 GB/s: 1.5 ms), measured 2 ms: overlap = (1 + 1.5 - 2) / min(1, 1.5) = 0.5.
  m.kernels.push_back({"conv_pointwise_dram", "", 40, 6, 2e-3, 0});
  m.kernels.back().bytes_written = 8e6;
  return m;
}

Chip synthetic_chip() { return chip_from_machine(synthetic_machine(), 1); }

struct OneNode {
  Model m;
  Node* n = nullptr;
};

OneNode conv(int64_t c, int64_t k, int64_t hw, int64_t r, int64_t group) {
  OneNode o;
  o.m.opsets[""] = 17;
  Graph& g = *o.m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({Dim(1), Dim(c), Dim(hw), Dim(hw)}));
  Value* w = g.add_initializer("w", Tensor(DType::f32, {k, c / group, r, r}));
  int64_t p = r / 2;
  o.n = g.add_node("Conv", {x, w}, {"y"},
                   {{"group", group}, {"kernel_shape", std::vector<int64_t>{r, r}},
                    {"pads", std::vector<int64_t>{p, p, p, p}}},
                   "conv");
  g.outputs = {o.n->outputs[0]};
  ops::infer_shapes(o.m);
  return o;
}

OneNode unary(const std::string& op, std::map<std::string, Attribute> attrs = {}) {
  OneNode o;
  o.m.opsets[""] = 17;
  Graph& g = *o.m.graph;
  Value* x = g.add_input("x", DType::f32, Shape({Dim(1), Dim(64), Dim(56), Dim(56)}));
  o.n = g.add_node(op, {x}, {"y"}, std::move(attrs), "n");
  g.outputs = {o.n->outputs[0]};
  ops::infer_shapes(o.m);
  return o;
}

double total_ms(const Node& n, double weights, const Chip& chip) {
  auto c = ops::node_cost(n);
  return cpu_kernel_time(n, c->flops, c->bytes_read + c->bytes_written, weights, chip).total_s() * 1e3;
}

TEST(PerfCpu, EachNodeIsTimedByTheKernelThatRunsIt) {
  EXPECT_EQ(cpu_kernel_class(*conv(64, 64, 56, 3, 1).n), "conv_gemm");
  EXPECT_EQ(cpu_kernel_class(*conv(256, 64, 56, 1, 1).n), "conv_pointwise");
  EXPECT_EQ(cpu_kernel_class(*conv(144, 144, 56, 3, 144).n), "conv_depthwise");
  // Pooling has fast kernels in the runtime: windows on phase planes (a plane kernel, like
  // depthwise), the global average one pass.
  EXPECT_EQ(cpu_kernel_class(*unary("MaxPool", {{"kernel_shape", std::vector<int64_t>{3, 3}}}).n), "pool");
  EXPECT_EQ(cpu_kernel_class(*unary("GlobalAveragePool").n), "fma_peak");
  EXPECT_EQ(cpu_kernel_class(*unary("Softmax").n), "fma_peak");  // a fast kernel
  EXPECT_EQ(cpu_kernel_class(*unary("Erf").n), "reference_elementwise");
}

// kiln.ExpandDepthwise (mobilenet_v2's features.4: 24 -> 144 at 56x56, 3x3 depthwise at stride
// 2) is two kernels one after the other: the expand 1x1 at the direct tactic's rate for its
// tiling, then the depthwise windows as the plane kernel runs them, not the FMA peak.
TEST(PerfCpu, ExpandDepthwiseIsTheExpandAndTheDepthwiseKernel) {
  Model fused = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,24,56,56], %w1: f32[144,24,1,1], %b1: f32[144], %w2: f32[144,1,3,3], %b2: f32[144]) -> (%y) {
  %y = kiln::ExpandDepthwise(%x, %w1, %b1, %w2, %b2) {group=144, pads=[1,1,1,1], strides=[2,2], activation="Clip", act_alpha=0.0, act_beta=6.0, expand_activation="Clip", expand_act_alpha=0.0, expand_act_beta=6.0}
})");
  ops::infer_shapes(fused);
  const Node& n = *fused.graph->nodes().at(0);
  EXPECT_EQ(cpu_kernel_class(n), "expand_depthwise");
  // The two convolutions alone: the expand as a direct 1x1, the depthwise one on its output.
  OneNode dw = conv(144, 144, 56, 3, 144);
  dw.n->attrs["strides"] = std::vector<int64_t>{2, 2};
  ops::infer_shapes(dw.m);
  OneNode expand = conv(24, 144, 56, 1, 1);
  expand.n->attrs["tactic"] = std::string("direct");
  Chip chip = synthetic_chip();
  auto flops = [](const Node& k) { return ops::node_cost(k)->flops; };
  const OpTime e = cpu_kernel_time(*expand.n, flops(*expand.n), 0, 0, chip);
  const OpTime d = cpu_kernel_time(*dw.n, flops(*dw.n), 0, 0, chip);
  const OpTime both = cpu_kernel_time(n, flops(n), 0, 0, chip);
  // The expand's multiply-adds only (its cost adds the bias and activation per output).
  const double expand_s = 2.0 * 24 * 144 * 56 * 56 / flops(*expand.n) * e.compute_s;
  EXPECT_NEAR(both.compute_s, expand_s + d.compute_s, 1e-12);
  EXPECT_GT(both.compute_s, 2 * flops(n) / (chip.machine->fp32_gflops_per_core * 1e9));
}

// kiln.DepthwiseProject (mobilenet_v2's features.3: 144 channels at 56x56, 3x3 depthwise at
// stride 1, then the 144 -> 24 projection with the block's residual) is the same two kernels the
// other way round: the depthwise windows as the plane kernel runs them, then the 1x1 at the
// direct tactic's rate for its tiling.
TEST(PerfCpu, DepthwiseProjectIsTheDepthwiseAndTheProjectionKernel) {
  Model fused = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,144,56,56], %wd: f32[144,1,3,3], %bd: f32[144], %wp: f32[24,144,1,1], %bp: f32[24], %z: f32[1,24,56,56]) -> (%y) {
  %y = kiln::DepthwiseProject(%x, %wd, %bd, %wp, %bp, %z) {depthwise_group=144, depthwise_pads=[1,1,1,1], depthwise_activation="Clip", depthwise_act_alpha=0.0, depthwise_act_beta=6.0}
})");
  ops::infer_shapes(fused);
  const Node& n = *fused.graph->nodes().at(0);
  EXPECT_EQ(cpu_kernel_class(n), "depthwise_project");
  // The two convolutions alone: the depthwise one, the projection as a direct 1x1 on its output.
  OneNode dw = conv(144, 144, 56, 3, 144);
  OneNode project = conv(144, 24, 56, 1, 1);
  project.n->attrs["tactic"] = std::string("direct");
  Chip chip = synthetic_chip();
  auto flops = [](const Node& k) { return ops::node_cost(k)->flops; };
  const OpTime p = cpu_kernel_time(*project.n, flops(*project.n), 0, 0, chip);
  const OpTime d = cpu_kernel_time(*dw.n, flops(*dw.n), 0, 0, chip);
  const OpTime both = cpu_kernel_time(n, flops(n), 0, 0, chip);
  // The projection's multiply-adds only (its cost adds the bias per output).
  const double project_s = 2.0 * 144 * 24 * 56 * 56 / flops(*project.n) * p.compute_s;
  EXPECT_NEAR(both.compute_s, d.compute_s + project_s, 1e-12);
  EXPECT_GT(d.compute_s, 0);
  EXPECT_GT(project_s, 0);
}

// kiln.StemDepthwiseProject (mobilenet_v2's features.0 and .1: the 3 -> 32 stem at stride 2 on
// 224x224, the 3x3 depthwise layer and the 32 -> 16 projection) is the stem at the direct
// tactic's rate for its tiling, then the pair as kiln.DepthwiseProject's two kernels.
TEST(PerfCpu, StemDepthwiseProjectIsTheStemAndThePair) {
  Model fused = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,3,224,224], %ws: f32[32,3,3,3], %bs: f32[32], %wd: f32[32,1,3,3], %bd: f32[32], %wp: f32[16,32,1,1], %bp: f32[16]) -> (%y) {
  %y = kiln::StemDepthwiseProject(%x, %ws, %bs, %wd, %bd, %wp, %bp) {stem_pads=[1,1,1,1], stem_strides=[2,2], stem_activation="Clip", stem_act_alpha=0.0, stem_act_beta=6.0, depthwise_group=32, depthwise_pads=[1,1,1,1], depthwise_activation="Clip", depthwise_act_alpha=0.0, depthwise_act_beta=6.0}
})");
  ops::infer_shapes(fused);
  const Node& n = *fused.graph->nodes().at(0);
  EXPECT_EQ(cpu_kernel_class(n), "stem_depthwise_project");
  Model pair = parse_model(R"(kiln.model opset=13 opset.kiln=1
graph g(%x: f32[1,32,112,112], %wd: f32[32,1,3,3], %bd: f32[32], %wp: f32[16,32,1,1], %bp: f32[16]) -> (%y) {
  %y = kiln::DepthwiseProject(%x, %wd, %bd, %wp, %bp) {depthwise_group=32, depthwise_pads=[1,1,1,1], depthwise_activation="Clip", depthwise_act_alpha=0.0, depthwise_act_beta=6.0}
})");
  ops::infer_shapes(pair);
  OneNode stem = conv(3, 32, 224, 3, 1);
  stem.n->attrs["strides"] = std::vector<int64_t>{2, 2};
  stem.n->attrs["tactic"] = std::string("direct");
  ops::infer_shapes(stem.m);
  Chip chip = synthetic_chip();
  auto flops = [](const Node& k) { return ops::node_cost(k)->flops; };
  const OpTime s = cpu_kernel_time(*stem.n, flops(*stem.n), 0, 0, chip);
  const Node& q = *pair.graph->nodes().at(0);
  const OpTime p = cpu_kernel_time(q, flops(q), 0, 0, chip);
  const OpTime all = cpu_kernel_time(n, flops(n), 0, 0, chip);
  // The stem's multiply-adds only (its cost adds the bias per output).
  const double stem_s = 2.0 * 3 * 9 * 32 * 112 * 112 / flops(*stem.n) * s.compute_s;
  EXPECT_NEAR(all.compute_s, stem_s + p.compute_s, 1e-12);
  EXPECT_GT(stem_s, 0);
  EXPECT_GT(p.compute_s, 0);
}

TEST(PerfCpu, FormulasByHand) {
  Chip chip = synthetic_chip();
  ASSERT_TRUE(has_kernel_rates(chip));
  // 3x3 conv 64->64 at 56x56: 2*64*64*9*3136 = 231.2 MFLOP at 50 GFLOP/s = 4.62 ms; its
  // 0.8 MiB of activations in L2 (200 GB/s) and 147 KiB of weights are far below that.
  OneNode c3 = conv(64, 64, 56, 3, 1);
  auto cost = ops::node_cost(*c3.n);
  EXPECT_NEAR(total_ms(*c3.n, 147456, chip), cost->flops / 50e9 * 1e3, 1e-3);
  // A convolution also pays one call's fixed cost (conv_call), a GEMM gemm_call's.
  MachinePeaks with_calls = synthetic_machine();
  with_calls.kernels.push_back({"conv_call", "", 0, 0, 3e-6, 1});
  with_calls.kernels.push_back({"gemm_call", "", 0, 0, 2e-6, 0});
  Chip calls_chip = chip_from_machine(with_calls, 1);
  calls_chip.launch_overhead_us = chip.launch_overhead_us;  // the dispatch is measured per chip
  OpTime plain = cpu_kernel_time(*c3.n, cost->flops, cost->bytes_read + cost->bytes_written, 147456, chip);
  OpTime called = cpu_kernel_time(*c3.n, cost->flops, cost->bytes_read + cost->bytes_written, 147456, calls_chip);
  EXPECT_NEAR(called.launch_s - plain.launch_s, 3e-6, 1e-12);
  EXPECT_DOUBLE_EQ(called.compute_s, plain.compute_s);

  // Depthwise 3x3 on 144 planes of 56x56: planes x a + vector ops x b with the solved a, b;
  // its vector ops by hand for 16-float vectors: 56 rows x ceil(56/16) = 224 vectors per plane
  // (a multiple of 8) x 9 taps x 144 planes (8-float vectors: 56 x 7 = 392).
  OneNode dw = conv(144, 144, 56, 3, 144);
  cost = ops::node_cost(*dw.n);
  const int64_t lanes = kernels::kernel_table().simd_width;
  const double vops = 144.0 * 9 * (lanes == 16 ? 224 : lanes == 8 ? 392 : 56 * 56);
  EXPECT_DOUBLE_EQ(plane_vector_ops(*dw.n, lanes), vops);
  double a = (1e-3 * 1e6 - 2e-3 * 1e7) / (100 * 1e6 - 1000 * 1e7), b = (100 * 2e-3 - 1000 * 1e-3) / (100 * 1e6 - 1000 * 1e7);
  double compute_ms = (144 * a + vops * b) * 1e3;
  OpTime t = cpu_kernel_time(*dw.n, cost->flops, cost->bytes_read + cost->bytes_written, 5184, chip);
  EXPECT_NEAR(t.compute_s * 1e3, compute_ms, 1e-9);

  // Max pools on the row kernels (3x3/2 padded by 1, 2x2/2): the bytes moved at the pool
  // calibration's 1 GB/s, no per-plane term: (64 x 56 x 56 + 64 x 28 x 28) floats = 1.0035 ms.
  // A 3x3 stride-1 max pool stays on the plane formula (planes x a + vector ops x b).
  const double pool_bytes = 4.0 * (64 * 56 * 56 + 64 * 28 * 28);
  for (const auto& [k, pad] : {std::pair<int64_t, int64_t>{3, 1}, {2, 0}}) {
    OneNode pool = unary("MaxPool", {{"kernel_shape", std::vector<int64_t>{k, k}},
                                     {"strides", std::vector<int64_t>{2, 2}},
                                     {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
    cost = ops::node_cost(*pool.n);
    ASSERT_DOUBLE_EQ(cost->bytes_read + cost->bytes_written, pool_bytes);
    t = cpu_kernel_time(*pool.n, cost->flops, pool_bytes, 0, chip);
    EXPECT_NEAR(t.compute_s * 1e3, pool_bytes / 1e9 * 1e3, 1e-9) << k << "x" << k;
  }
  OneNode s1 = unary("MaxPool", {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  cost = ops::node_cost(*s1.n);
  const double pool_a = (1e-3 * 1e6 - 2e-3 * 1e7) / (100 * 1e6 - 1000 * 1e7);
  const double pool_b = (100 * 2e-3 - 1000 * 1e-3) / (100 * 1e6 - 1000 * 1e7);
  t = cpu_kernel_time(*s1.n, cost->flops, cost->bytes_read + cost->bytes_written, 0, chip);
  EXPECT_NEAR(t.compute_s, 64 * pool_a + plane_vector_ops(*s1.n, lanes) * pool_b, 1e-12);

  // A reference elementwise op (plain Erf): max(FLOPs / 2 GFLOP/s, bytes / 16 GB/s).
  OneNode erf = unary("Erf");
  cost = ops::node_cost(*erf.n);
  double bytes = cost->bytes_read + cost->bytes_written;
  EXPECT_NEAR(total_ms(*erf.n, 0, chip), std::max(cost->flops / 2e9, bytes / 16e9) * 1e3 + chip.launch_overhead_us * 1e-3,
              1e-9);

  // Weights come from the level that holds all of the model's weights: the same 1x1 conv is
  // slower when the model's weights (here 100 MiB) only fit in DRAM.
  OneNode pw = conv(256, 64, 7, 1, 1);
  cost = ops::node_cost(*pw.n);
  OpTime small = cpu_kernel_time(*pw.n, cost->flops, cost->bytes_read + cost->bytes_written, 1 << 20, chip);
  OpTime large = cpu_kernel_time(*pw.n, cost->flops, cost->bytes_read + cost->bytes_written, 100 << 20, chip);
  double weight_bytes = 256 * 64 * 4;
  EXPECT_NEAR(large.memory_s - small.memory_s, weight_bytes / (10e9 * 32 / 24) - weight_bytes / 200e9, 1e-12);
}

TEST(PerfCpu, DramTrafficAndOverlapByHand) {
  // Write-allocate: a written line is read first. The triad counts 24 of its 32 bytes.
  EXPECT_DOUBLE_EQ(dram_traffic_bytes(4e6, 8e6), 2e7);
  EXPECT_DOUBLE_EQ(dram_raw_gbs(30), 40);
  // Full overlap is the roofline max, none the sum, half in between.
  EXPECT_DOUBLE_EQ(overlapped_seconds(1, 1.5, 1.5, 1), 1.5);
  EXPECT_DOUBLE_EQ(overlapped_seconds(1, 1.5, 1.5, 0), 2.5);
  EXPECT_DOUBLE_EQ(overlapped_seconds(1, 1.5, 1.5, 0.5), 2.0);
  // Only the DRAM part of memory time is exposed: 0.5 of it from cache, 0.2 from DRAM.
  EXPECT_DOUBLE_EQ(overlapped_seconds(1, 0.7, 0.2, 0), 1.2);
  MachinePeaks m = synthetic_machine();
  EXPECT_DOUBLE_EQ(dram_overlap(m), 0.5);
  // A calibration slower than the sum hides nothing (clamped at 0), faster than the max all.
  // (The same FLOPs and bytes, measured in another time.)
  auto measured_in = [&](double seconds) {
    KernelRate& k = m.kernels.back();
    k.gflops_one_core = 8e7 / seconds / 1e9, k.gbs_one_core = 1.2e7 / seconds / 1e9, k.seconds = seconds;
  };
  measured_in(3e-3);
  EXPECT_DOUBLE_EQ(dram_overlap(m), 0.0);
  measured_in(1.2e-3);
  EXPECT_DOUBLE_EQ(dram_overlap(m), 1.0);
  measured_in(2.25e-3);
  EXPECT_NEAR(dram_overlap(m), 0.25, 1e-12);

  // A thin 1x1 conv 16 -> 96 at 224x224: 3.21 MB read and 19.27 MB written, beyond the 8 MiB
  // L3 working set: DRAM traffic 3.21 + 2 x 19.27 MB at 13.33 GB/s; compute at conv_pointwise's
  // 80 GFLOP/s scaled by the tile efficiency of 96 x 50176 (the calibration's 0 x 0 is 1); its
  // 6 KiB of weights in L1 (400 GB/s). Time = max(c, memory) + (1 - 0.5) x min(c, dram) + launch.
  Chip chip = synthetic_chip();
  OneNode pw = conv(16, 96, 224, 1, 1);
  auto cost = ops::node_cost(*pw.n);
  const double in = 16.0 * 224 * 224 * 4, out = 96.0 * 224 * 224 * 4, w = 16 * 96 * 4;
  const double dram = (in + 2 * out) / (10e9 * 32 / 24), cached = w / 400e9;
  const double c = cost->flops / (80e9 * tile_efficiency(96, 224 * 224, micro_kernel(synthetic_machine())));
  OpTime t = cpu_kernel_time(*pw.n, cost->flops, cost->bytes_read + cost->bytes_written, w, chip);
  EXPECT_NEAR(t.compute_s, c, 1e-12);
  EXPECT_NEAR(t.memory_s, dram + cached, 1e-12);
  EXPECT_NEAR(t.total_s(), std::max(c, dram + cached) + 0.5 * std::min(c, dram) + chip.launch_overhead_us * 1e-6, 1e-12);
  // The same conv at 56x56 (0.2 + 1.2 MB: in L3) keeps the roofline max: no exposed time.
  OneNode small = conv(16, 96, 56, 1, 1);
  cost = ops::node_cost(*small.n);
  EXPECT_EQ(cpu_kernel_time(*small.n, cost->flops, cost->bytes_read + cost->bytes_written, w, chip).stall_s, 0.0);
}

TEST(PerfCpu, ResidencyFromThePlanPricesEachByteAtItsLevel) {
  // The 1x1 conv 16 -> 96 at 56x56 (0.2 MB read, 1.2 MB written: in L3 by the per-kernel rule),
  // its output lines in DRAM by the plan (written over memory untouched for a run) and its input
  // in L2: the input at L2's 200 GB/s, the output as DRAM traffic 2 x written at 13.33 GB/s,
  // exposed by half (overlap 0.5); its 6 KiB of weights split as the plan's (all L1).
  Chip chip = synthetic_chip();
  OneNode pw = conv(16, 96, 56, 1, 1);
  auto cost = ops::node_cost(*pw.n);
  const double in = 16.0 * 56 * 56 * 4, out = 96.0 * 56 * 56 * 4, w = 16 * 96 * 4;
  KernelResidency where;
  where.read[1] = in, where.written[3] = out, where.weights[0] = w;
  OpTime t = cpu_kernel_time(*pw.n, cost->flops, cost->bytes_read + cost->bytes_written, w, chip, &where);
  const double dram = 2 * out / (10e9 * 32 / 24), cached = in / 200e9 + w / 400e9;
  EXPECT_NEAR(t.memory_s, dram + cached, 1e-12);
  EXPECT_NEAR(t.stall_s, std::max(t.compute_s, t.memory_s) + 0.5 * std::min(t.compute_s, dram) -
                             std::max(t.compute_s, t.memory_s), 1e-12);
  // Without the plan: all 1.4 MB in L3 (100 GB/s), nothing exposed.
  t = cpu_kernel_time(*pw.n, cost->flops, cost->bytes_read + cost->bytes_written, w, chip);
  EXPECT_NEAR(t.memory_s, (in + out) / 100e9 + w / 400e9, 1e-12);
  EXPECT_EQ(t.stall_s, 0.0);
}

// perf_tiles.h by hand on a 14 x 32 tile of 16-float vectors, 1e9 FMAs and 1e9 loads a second.
TEST(PerfTiles, TileEfficiencyByHand) {
  MicroKernel k{14, 32, 16, 1e9, 1e9};
  // A full tile: max(28 FMAs, 16 loads) = 28 ns per K step, all useful.
  EXPECT_DOUBLE_EQ(tile_step_seconds(14, 2, k), 28e-9);
  EXPECT_DOUBLE_EQ(tile_efficiency(14, 32, k), 1.0);
  EXPECT_DOUBLE_EQ(tile_efficiency(28 * 3, 32 * 5, k), 1.0);
  // A GEMV row is load-bound: 2 B vectors + 1 broadcast for 2 FMAs -> 3 ns for 2 ns of work.
  EXPECT_DOUBLE_EQ(tile_step_seconds(1, 2, k), 3e-9);
  EXPECT_DOUBLE_EQ(tile_efficiency(1, 32, k), 2.0 / 3.0);
  // 49 columns (a 7x7 image): one full panel and one of ceil(17/16) = 2 vectors, 28 ns each,
  // for 14 x 49 / 16 = 42.875 ns of useful FMAs.
  EXPECT_DOUBLE_EQ(tile_efficiency(14, 49, k), 42.875 / 56.0);
  // 20 rows x 16 columns: tiles (14, 1) = max(14, 15) = 15 ns and (6, 1) = max(6, 7) = 7 ns
  // for 20 ns of work.
  EXPECT_DOUBLE_EQ(tile_efficiency(20, 16, k), 20.0 / 22.0);
  // Nothing to tile.
  EXPECT_DOUBLE_EQ(tile_efficiency(0, 16, k), 1.0);
  // With a latency floor λ = 5 ns per step: the full tile (28 ns) is unchanged, a 1 x 2 tile
  // takes 5 ns for 2 ns of work, and a 4-row tile (8 ns of FMAs) is unchanged.
  k.min_step_s = 5e-9;
  EXPECT_DOUBLE_EQ(tile_efficiency(14, 32, k), 1.0);
  EXPECT_DOUBLE_EQ(tile_efficiency(1, 32, k), 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(tile_step_seconds(4, 2, k), 8e-9);
  EXPECT_DOUBLE_EQ(tile_step_seconds(2, 1, k), 5e-9);
  k.min_step_s = 0;
  // From measured ceilings: F = peak / (2 x lanes), L = L1 bandwidth / (4 x lanes).
  MachinePeaks m = synthetic_machine();
  MicroKernel mk = micro_kernel(m);
  EXPECT_DOUBLE_EQ(mk.fma_per_s, 100e9 / (2.0 * static_cast<double>(mk.lanes)));
  EXPECT_DOUBLE_EQ(mk.loads_per_s, 400e9 / (4.0 * static_cast<double>(mk.lanes)));
  EXPECT_EQ(mk.mr, kernels::kernel_table().gemm.mr);
  EXPECT_EQ(micro_kernel(m, /*direct_conv=*/true).nr, kernels::kernel_table().conv_shape.nr);
  EXPECT_DOUBLE_EQ(mk.min_step_s, 0.0);  // no gemm_row measured
  m.kernels.push_back({"gemm_row", "", 1, 1, 4e-6, 0});
  m.kernels.back().vector_ops = 2000;  // 2000 K steps in 4 us: 2 ns each
  EXPECT_DOUBLE_EQ(micro_kernel(m).min_step_s, 2e-9);
}

OneNode conv_tactic(int64_t c, int64_t k, int64_t hw, int64_t r, const std::string& tactic) {
  OneNode o = conv(c, k, hw, r, 1);
  o.n->attrs["tactic"] = tactic;
  return o;
}

TEST(PerfCpu, GemmGeometryFollowsTheTactic) {
  // 64 -> 128 channels, 3x3, 14x14 output, batch 1.
  auto g = gemm_geometry(*conv_tactic(64, 128, 14, 3, "gemm").n, "conv_gemm");
  EXPECT_EQ(g.rows, 128);  // output channels on the register rows
  EXPECT_EQ(g.cols, 196);  // pixels on the vector columns
  EXPECT_EQ(g.calls, 1);
  g = gemm_geometry(*conv_tactic(64, 128, 14, 3, "pixel-gemm").n, "conv_pixel-gemm");
  EXPECT_EQ(g.rows, 196);
  EXPECT_EQ(g.cols, 128);
  g = gemm_geometry(*conv_tactic(64, 128, 14, 3, "direct").n, "conv_direct");
  const int mr = static_cast<int>(kernels::kernel_table().conv_shape.mr);
  const bool wraps = kernels::conv_direct_wraps(mr, 14, 14);
  EXPECT_EQ(wraps, 14 % mr != 0);
  EXPECT_EQ(g.rows, wraps ? 196 : 14);  // all pixels as one row, or one output row's
  EXPECT_EQ(g.cols, 128);
  EXPECT_EQ(g.calls, wraps ? 1 : 14);
}

TEST(PerfCpu, DirectTilesWrapOnlyWithinTwoRows) {
  EXPECT_TRUE(kernels::conv_direct_wraps(6, 14, 14));    // 14 = 6 + 6 + 2 per row: wrap
  EXPECT_TRUE(kernels::conv_direct_wraps(6, 7, 7));      // 6 + 1
  EXPECT_FALSE(kernels::conv_direct_wraps(14, 14, 14));  // rows fill whole tiles
  EXPECT_FALSE(kernels::conv_direct_wraps(14, 7, 7));    // half a tile: wide 7 x 64 tiles, all full
  EXPECT_TRUE(kernels::conv_direct_wraps(14, 3, 8));     // the last, short tile: 6 + 4 pixels
  EXPECT_FALSE(kernels::conv_direct_wraps(14, 4, 4));    // a tile would span four rows
  EXPECT_FALSE(kernels::conv_direct_wraps(6, 10, 2));    // three rows
  EXPECT_FALSE(kernels::conv_direct_wraps(6, 1, 7));     // one row: nothing to wrap to
}

TEST(PerfCpu, GemmRateScalesWithTileEfficiency) {
  // The direct tactic at 60 GFLOP/s measured on a 0 x 0 (efficiency 1) calibration: a 7x7
  // output's rows of 7 pixels x (nr + 3) channels (a last panel of one vector with 3 lanes
  // used) run at 60 x efficiency(7, nr + 3).
  MachinePeaks m = synthetic_machine();
  Chip chip = chip_from_machine(m, 1);
  const int64_t k = kernels::kernel_table().conv_shape.nr + 3;
  OneNode d = conv_tactic(64, k, 7, 3, "direct");
  auto cost = ops::node_cost(*d.n);
  // Rows of 7 pixels; the 49 pixels as one row where the tiles wrap (mr 6); wide tiles, 7 pixels
  // by twice the channels, counted as 14 rows of half the channels, where 7 is half a tile (mr 14).
  const int mr = static_cast<int>(kernels::kernel_table().conv_shape.mr);
  const bool wraps = kernels::conv_direct_wraps(mr, 7, 7), wide = !wraps && 7 <= mr / 2;
  const int64_t rows = wraps ? 49 : wide ? 14 : 7, cols = wide ? (k + 1) / 2 : k;
  double eff = tile_efficiency(rows, cols, micro_kernel(m, /*direct_conv=*/true));
  EXPECT_LT(eff, 1.0);
  OpTime t = cpu_kernel_time(*d.n, cost->flops, cost->bytes_read + cost->bytes_written, 0, chip);
  EXPECT_NEAR(t.compute_s, cost->flops / (60e9 * eff), 1e-12);
  // With the calibration's own tiling recorded, the rate is relative to it.
  m.kernels[1].rows = rows, m.kernels[1].cols = cols;
  chip = chip_from_machine(m, 1);
  t = cpu_kernel_time(*d.n, cost->flops, cost->bytes_read + cost->bytes_written, 0, chip);
  EXPECT_NEAR(t.compute_s, cost->flops / 60e9, 1e-12);
}

}  // namespace
}  // namespace kiln::analysis

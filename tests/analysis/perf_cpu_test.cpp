// perf model on a measured CPU: which measured rate times each node, and the formulas of
// perf_cpu.h checked by hand on a synthetic machine.
#include <gtest/gtest.h>

#include "analysis/perf_cpu.h"
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
  m.kernels = {{"conv_gemm", "", 50, 1, 0, 0},
               {"conv_pointwise", "", 80, 1, 0, 0},
               {"conv_depthwise", "", 10, 1, 1e-3, 100},
               {"conv_depthwise_small", "", 0.5, 1, 2e-3, 1000},
               {"gemm", "", 90, 1, 0, 0},
               {"reference_pool", "", 0.25, 0.5, 0, 0},
               {"reference_elementwise", "", 2, 16, 0, 0}};
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
  // Pooling has fast kernels in the runtime (phase-plane max/average, global average).
  EXPECT_EQ(cpu_kernel_class(*unary("MaxPool", {{"kernel_shape", std::vector<int64_t>{3, 3}}}).n), "fma_peak");
  EXPECT_EQ(cpu_kernel_class(*unary("GlobalAveragePool").n), "fma_peak");
  EXPECT_EQ(cpu_kernel_class(*unary("Softmax").n), "fma_peak");  // a fast kernel
  EXPECT_EQ(cpu_kernel_class(*unary("Erf").n), "reference_elementwise");
}

TEST(PerfCpu, FormulasByHand) {
  Chip chip = synthetic_chip();
  ASSERT_TRUE(has_kernel_rates(chip));
  // 3x3 conv 64->64 at 56x56: 2*64*64*9*3136 = 231.2 MFLOP at 50 GFLOP/s = 4.62 ms; its
  // 0.8 MiB of activations in L2 (200 GB/s) and 147 KiB of weights are far below that.
  OneNode c3 = conv(64, 64, 56, 3, 1);
  auto cost = ops::node_cost(*c3.n);
  EXPECT_NEAR(total_ms(*c3.n, 147456, chip), cost->flops / 50e9 * 1e3, 1e-3);

  // Depthwise 3x3 on 144 planes of 56x56: planes x a + FLOPs x b with the solved a, b.
  OneNode dw = conv(144, 144, 56, 3, 144);
  cost = ops::node_cost(*dw.n);
  double a = (1e-3 * 1e6 - 2e-3 * 1e7) / (100 * 1e6 - 1000 * 1e7), b = (100 * 2e-3 - 1000 * 1e-3) / (100 * 1e6 - 1000 * 1e7);
  double compute_ms = (144 * a + cost->flops * b) * 1e3;
  OpTime t = cpu_kernel_time(*dw.n, cost->flops, cost->bytes_read + cost->bytes_written, 5184, chip);
  EXPECT_NEAR(t.compute_s * 1e3, compute_ms, 1e-9);

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
  EXPECT_NEAR(large.memory_s - small.memory_s, weight_bytes / 10e9 - weight_bytes / 200e9, 1e-12);
}

}  // namespace
}  // namespace kiln::analysis
